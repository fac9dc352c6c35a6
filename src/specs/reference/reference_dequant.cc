// The double-precision reference: checkpoint tensors → dequantized weights, and activation
// quantization, written from the format conventions without going through any spec, so that it
// can judge the specs and the kernels. One entry per checkpoint source layout registers itself
// from its own file (dense_reference.cc, fp8_reference.cc, …); this file stacks the legs.
//
//   inputs:   the static activation scale is the max of the legs' `input_scale`; int8 inputs
//             follow the engines' one grid for all legs (int8_reference.cc); an MoE expert's
//             NVFP4 activations the one input global the engines share over the experts
//             (DequantizeExpertReference, nvfp4_family.h).
//   X:        per ActivationQuant: scale = max(absmax, kActAbsMaxFloor) / 448 over the row, the
//             whole X, or each group of columns of a row, divided in fp32 because scales are fp32
//             values (or the static scale); X' = RoundToE4M3(X / scale) × scale in double; int8
//             activations as QuantizeInt8Reference (specs.h), int4 ones as
//             QuantizeInt4Reference (int4_reference.h), NVFP4 ones as QuantizeNvfp4Reference,
//             with input_scale the layer's input divisor, MX ones as QuantizeMxReference.
#include <cmath>
#include <map>
#include <mutex>
#include <type_traits>

#include "fmt/format.h"
#include "quantpath/specs.h"
#include "src/specs/nvfp4_family.h"
#include "src/specs/reference/int4_reference.h"
#include "src/specs/reference/int8_reference.h"
#include "src/specs/reference/mx_reference.h"
#include "src/specs/reference/nvfp4_reference.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

struct Entries {
  std::mutex mu;
  std::map<SourceLayout, ReferenceLegFn> by_layout;
  std::map<SourceLayout, StackedReferenceLegFn> stacked_by_layout;
  std::map<SourceLayout, int> registrations;  // two oracles for one layout is an error
};

Entries& ReferenceEntries() {
  static Entries* entries = new Entries();  // never destroyed: used at exit
  return *entries;
}

// The one entry of `layout` in `by_layout` (the plain or the stacked map of Entries).
template <typename Fn>
Result<Fn> FindEntry(const std::map<SourceLayout, Fn>& by_layout, SourceLayout layout,
                     std::string_view layer) {
  Entries& e = ReferenceEntries();
  std::lock_guard<std::mutex> lock(e.mu);
  if (e.registrations[layout] > 1) {
    return InternalError(fmt::format("{}: source layout {} has {} reference entries registered",
                                     layer, SourceLayoutName(layout), e.registrations[layout]));
  }
  auto it = by_layout.find(layout);
  if (it == by_layout.end()) {
    const bool stacked = std::is_same_v<Fn, StackedReferenceLegFn>;
    const std::string_view why = stacked == StacksExperts(layout) ? ""
                                 : stacked                        ? " as stacked expert tensors"
                                           : " without the expert to read from its stacked tensors";
    return Unsupported(fmt::format("{}: the reference cannot dequantize source layout {}{}", layer,
                                   SourceLayoutName(layout), why));
  }
  return it->second;
}

// The bias rows of one expert's projection in `prefix`'s stacked bias [experts, row_step · rows].
Result<std::vector<double>> ReadStackedBias(const Checkpoint& checkpoint, SourceLayout layout,
                                            std::string_view layer, const std::string& prefix,
                                            const StackedExpert& expert, int64_t rows) {
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(
      std::vector<double> all,
      reference::ReadDoubles(checkpoint, layer,
                             prefix + std::string(*SourceSuffix(layout, Slot::kBias)), &info));
  const int64_t block = expert.row_step * rows;
  if (info.shape != std::vector<int64_t>{expert.experts, block}) {
    return InvalidInput(
        fmt::format("{}: tensor {} is not [{}, {}]", layer, info.name, expert.experts, block));
  }
  std::vector<double> bias(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    bias[r] = all[expert.expert * block + r * expert.row_step + expert.first_row];
  }
  return bias;
}

// The leg's input prescale (AWQ's pre_quant_scale, [cols]) where its layout has one: X is scaled
// once for every leg, so each leg must have the first leg's (or none, as it).
Status ReadPrescale(const Checkpoint& checkpoint, SourceLayout layout, std::string_view layer,
                    const std::vector<std::string>& leg_prefixes, const std::string& prefix,
                    int64_t cols, std::vector<double>* prescale) {
  const std::optional<std::string_view> suffix = SourceSuffix(layout, Slot::kPreQuantScale);
  if (!suffix) return {};
  const std::string name = prefix + std::string(*suffix);
  std::vector<double> values;
  if (checkpoint.Has(name)) {
    TensorInfo info;
    QP_ASSIGN_OR_RETURN(values, reference::ReadDoubles(checkpoint, layer, name, &info));
    if (static_cast<int64_t>(values.size()) != cols) {
      return InvalidInput(
          fmt::format("{}: tensor {} does not have {} values", layer, info.name, cols));
    }
  }
  if (prefix != leg_prefixes.front() && values != *prescale) {
    return InvalidInput(fmt::format(
        "{}: leg {} has another input prescale ({}) than {}; the legs of a fused layer share one "
        "input",
        layer, prefix, *suffix, leg_prefixes.front()));
  }
  *prescale = std::move(values);
  return {};
}

// The stored NVFP4 input global of the leg `prefix` (one positive value).
Result<float> ReadNvfp4InputGlobal(const Checkpoint& checkpoint, SourceLayout layout,
                                   std::string_view layer, const std::string& prefix) {
  const std::optional<std::string_view> suffix = SourceSuffix(layout, Slot::kInputScale);
  if (!suffix) {
    return InvalidInput(fmt::format("{}: source layout {} stores no input global scale", layer,
                                    SourceLayoutName(layout)));
  }
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(
      std::vector<double> s,
      reference::ReadDoubles(checkpoint, layer, prefix + std::string(*suffix), &info));
  if (s.size() != 1 || !(s[0] > 0.0)) {
    return InvalidInput(fmt::format("{}: tensor {} is not one positive value", layer, info.name));
  }
  return static_cast<float>(s[0]);
}

}  // namespace

ReferenceRegistrar::ReferenceRegistrar(SourceLayout layout, ReferenceLegFn dequantize) {
  Entries& e = ReferenceEntries();
  std::lock_guard<std::mutex> lock(e.mu);
  e.by_layout.emplace(layout, dequantize);
  ++e.registrations[layout];
}

ReferenceRegistrar::ReferenceRegistrar(SourceLayout layout, StackedReferenceLegFn dequantize) {
  Entries& e = ReferenceEntries();
  std::lock_guard<std::mutex> lock(e.mu);
  e.stacked_by_layout.emplace(layout, dequantize);
  ++e.registrations[layout];
}

double RoundToE4M3(double value) {
  if (std::isnan(value)) return value;
  const double a = std::fabs(value);
  if (a >= kFp8E4M3Max) return std::copysign(kFp8E4M3Max, value);
  int e2 = 0;
  std::frexp(a, &e2);  // a = f × 2^e2, f in [0.5, 1): the leading bit is 2^(e2 - 1)
  // Normals have 3 mantissa bits below the leading one; below 2^-6 the spacing stays 2^-9.
  const int quantum_exp = std::max(e2 - 1, -6) - 3;
  const double q = std::nearbyint(std::ldexp(a, -quantum_exp));  // ties to even
  return std::copysign(std::min(std::ldexp(q, quantum_exp), kFp8E4M3Max), value);
}

Result<ReferenceLayer> DequantizeReference(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                           std::string_view layer,
                                           const std::vector<std::string>& leg_prefixes, bool bias,
                                           const std::optional<StackedExpert>& stacked) {
  const SourceLayout layout = scheme.weight.load.layout;
  if (stacked) {
    QP_ASSIGN_OR_RETURN(const StackedReferenceLegFn dequantize,
                        FindEntry(ReferenceEntries().stacked_by_layout, layout, layer));
    if (leg_prefixes.size() != 1) {
      return InvalidInput(fmt::format("{}: one expert's projection has one prefix, not {}", layer,
                                      leg_prefixes.size()));
    }
    QP_ASSIGN_OR_RETURN(ReferenceLeg leg,
                        dequantize(checkpoint, scheme, layer, leg_prefixes[0], *stacked));
    ReferenceLayer out{leg.rows, leg.cols, std::move(leg.weight), {}, {}, {}, {}};
    if (bias) {
      QP_ASSIGN_OR_RETURN(out.bias, ReadStackedBias(checkpoint, layout, layer, leg_prefixes[0],
                                                    *stacked, leg.rows));
    }
    return out;
  }
  QP_ASSIGN_OR_RETURN(const ReferenceLegFn dequantize,
                      FindEntry(ReferenceEntries().by_layout, layout, layer));
  ReferenceLayer out;
  const bool int8_static = scheme.input && scheme.input->dynamic == Dynamic::kStatic &&
                           scheme.input->dtype == QDType::kINT8;
  std::vector<std::string> int8_scales;
  std::vector<std::string> int8_zeros;
  // NVFP4 activations: the legs' stored input globals, made one divisor as the engines do.
  // NVFP4 activations against the checkpoint's global ("local"; "dynamic" ones bring their own).
  const bool nvfp4_input = scheme.input && scheme.input->dtype == QDType::kNVFP4 &&
                           scheme.input->dynamic == Dynamic::kLocal;
  std::vector<float> nvfp4_inputs;
  for (const std::string& prefix : leg_prefixes) {
    QP_ASSIGN_OR_RETURN(ReferenceLeg leg, dequantize(checkpoint, scheme, layer, prefix));
    if (out.rows > 0 && leg.cols != out.cols) {
      return InvalidInput(fmt::format("{}: leg {} has {} columns, the legs before it {}", layer,
                                      prefix, leg.cols, out.cols));
    }
    QP_RETURN_IF_ERROR(ReadPrescale(checkpoint, layout, layer, leg_prefixes, prefix, leg.cols,
                                    &out.input_prescale));
    out.cols = leg.cols;
    out.rows += leg.rows;
    out.weight.insert(out.weight.end(), leg.weight.begin(), leg.weight.end());
    if (scheme.input && scheme.input->dynamic == Dynamic::kStatic) {
      const std::optional<std::string_view> suffix = SourceSuffix(layout, Slot::kInputScale);
      if (!suffix) {
        return InvalidInput(fmt::format("{}: source layout {} stores no static input scale", layer,
                                        SourceLayoutName(layout)));
      }
      if (int8_static) {
        int8_scales.push_back(prefix + std::string(*suffix));
        const std::optional<std::string_view> zero = SourceSuffix(layout, Slot::kInputOffset);
        if (!scheme.input->symmetric && !zero) {
          return InvalidInput(fmt::format("{}: source layout {} stores no input zero point", layer,
                                          SourceLayoutName(layout)));
        }
        int8_zeros.push_back(zero ? prefix + std::string(*zero) : std::string());
      }
    }
    if (scheme.input && scheme.input->dynamic == Dynamic::kStatic && !int8_static) {
      const std::string_view suffix = *SourceSuffix(layout, Slot::kInputScale);
      TensorInfo info;
      QP_ASSIGN_OR_RETURN(
          std::vector<double> s,
          reference::ReadDoubles(checkpoint, layer, prefix + std::string(suffix), &info));
      if (s.size() != 1) {
        return InvalidInput(fmt::format("{}: tensor {} is not one value", layer, info.name));
      }
      out.input_scale = std::max(out.input_scale.value_or(s[0]), s[0]);
    }
    if (nvfp4_input) {
      QP_ASSIGN_OR_RETURN(const float global,
                          ReadNvfp4InputGlobal(checkpoint, layout, layer, prefix));
      nvfp4_inputs.push_back(global);
    }
    if (bias) {
      TensorInfo info;
      QP_ASSIGN_OR_RETURN(std::vector<double> b,
                          reference::ReadDoubles(checkpoint, layer, prefix + ".bias", &info));
      if (static_cast<int64_t>(b.size()) != leg.rows) {
        return InvalidInput(
            fmt::format("{}: tensor {} does not have {} values", layer, info.name, leg.rows));
      }
      out.bias.insert(out.bias.end(), b.begin(), b.end());
    }
  }
  if (nvfp4_input) out.input_scale = Nvfp4InputDivisor(layout, nvfp4_inputs);
  if (int8_static) {
    QP_RETURN_IF_ERROR(
        reference::ReadStaticInt8Inputs(checkpoint, scheme, layer, int8_scales, int8_zeros, &out));
  }
  return out;
}

Result<ReferenceLayer> DequantizeExpertReference(const Checkpoint& checkpoint,
                                                 const QuantScheme& scheme, std::string_view layer,
                                                 const std::string& prefix,
                                                 const std::vector<std::string>& input_peers,
                                                 bool bias,
                                                 const std::optional<StackedExpert>& stacked) {
  QP_ASSIGN_OR_RETURN(ReferenceLayer out,
                      DequantizeReference(checkpoint, scheme, layer, {prefix}, bias, stacked));
  if (!scheme.input || scheme.input->dtype != QDType::kNVFP4 ||
      scheme.input->dynamic != Dynamic::kLocal) {
    return out;
  }
  const SourceLayout layout = scheme.weight.load.layout;
  std::vector<float> stored;
  for (const std::string& peer : input_peers) {
    QP_ASSIGN_OR_RETURN(const float global, ReadNvfp4InputGlobal(checkpoint, layout, layer, peer));
    stored.push_back(global);
  }
  if (stored.empty()) {
    return InvalidInput(fmt::format("{}: no experts to share the NVFP4 input global of", layer));
  }
  const float shared = Nvfp4SharedExpertInput(layout, stored);
  out.input_scale = Nvfp4InputDivisor(layout, std::span<const float>(&shared, 1));
  return out;
}

ReferenceLayer SliceReference(const ReferenceLayer& whole, const RankSlice& slice) {
  ReferenceLayer out;
  out.rows = static_cast<int64_t>(slice.rows.size());
  out.cols = slice.cols;
  out.input_scale = whole.input_scale;
  out.input_zero_point = whole.input_zero_point;
  if (!whole.input_prescale.empty()) {
    const auto first = whole.input_prescale.begin() + slice.first_col;
    out.input_prescale.assign(first, first + slice.cols);
  }
  out.weight.reserve(static_cast<size_t>(out.rows * out.cols));
  for (int64_t row : slice.rows) {
    const double* from = whole.weight.data() + row * whole.cols + slice.first_col;
    out.weight.insert(out.weight.end(), from, from + slice.cols);
    if (slice.bias && !whole.bias.empty()) out.bias.push_back(whole.bias[row]);
  }
  return out;
}

ReferenceLayer RankReference(const ReferenceLayer& whole, const RankSlice& slice,
                             const AllocationRequest& request, const LoadFacts& facts,
                             const ActivationQuant& act) {
  ReferenceLayer ref = SliceReference(whole, slice);
  const bool modelslim_static = facts.layout == SourceLayout::kModelSlim &&
                                act.mode == ActMode::kStaticPerTensor && !act.symmetric;
  if (!modelslim_static || request.parallel != Parallel::kRow || request.tp_size == 1 ||
      !whole.input_zero_point) {
    return ref;
  }
  const double shift = *whole.input_zero_point * whole.input_scale.value_or(0.0);
  ref.bias.resize(static_cast<size_t>(ref.rows), 0.0);
  for (int64_t r = 0; r < ref.rows; ++r) {
    const double* row = whole.weight.data() + slice.rows[r] * whole.cols;
    double own = 0;
    double all = 0;
    for (int64_t c = 0; c < whole.cols; ++c) {
      all += row[c];
      if (c >= slice.first_col && c < slice.first_col + slice.cols) own += row[c];
    }
    ref.bias[r] += shift * (own - (request.tp_rank == 0 ? all : 0.0));
  }
  return ref;
}

std::vector<double> QuantizeActivationsReference(std::span<const double> x, int64_t m, int64_t k,
                                                 const ActivationQuant& act,
                                                 std::optional<double> static_scale,
                                                 std::optional<double> static_zero_point) {
  if (act.SymmetricPerToken(QDType::kINT4)) {
    return reference::QuantizeInt4Reference(x, m, k);
  }
  if (act.dtype == QDType::kINT8 &&
      (act.mode == ActMode::kDynamicPerToken || act.mode == ActMode::kStaticPerTensor)) {
    return reference::QuantizeInt8Reference(x, m, k, act, static_scale.value_or(1.0),
                                            static_zero_point.value_or(0.0));
  }
  if (act.dtype == QDType::kNVFP4 && act.mode == ActMode::kDynamicGroup) {
    return reference::QuantizeNvfp4Reference(
        x, m, k, act.group_size,
        act.per_token_global ? std::nullopt : std::optional(static_scale.value_or(1.0)));
  }
  if ((act.dtype == QDType::kMXFP4 || act.dtype == QDType::kMXFP8) &&
      act.mode == ActMode::kDynamicGroup) {
    return reference::QuantizeMxReference(x, m, k, act.group_size, act.dtype);
  }
  std::vector<double> out(x.begin(), x.end());
  if (act.mode == ActMode::kNone) return out;
  // Quantizes out[row * k + c] for c in [begin, end) of each row in [row_begin, row_end) with one
  // scale.
  auto quantize = [&](int64_t row_begin, int64_t row_end, int64_t begin, int64_t end,
                      std::optional<double> fixed) {
    double absmax = 0;
    for (int64_t r = row_begin; r < row_end; ++r) {
      for (int64_t c = begin; c < end; ++c) absmax = std::max(absmax, std::fabs(x[r * k + c]));
    }
    // Scales are fp32 values, as engines store them: the division is fp32's.
    const double scale =
        fixed ? *fixed
              : std::max(static_cast<float>(absmax), static_cast<float>(kActAbsMaxFloor)) /
                    static_cast<float>(kFp8E4M3Max);
    for (int64_t r = row_begin; r < row_end; ++r) {
      for (int64_t c = begin; c < end; ++c) {
        out[r * k + c] = RoundToE4M3(x[r * k + c] / scale) * scale;
      }
    }
  };
  switch (act.mode) {
    case ActMode::kDynamicPerToken:
      for (int64_t r = 0; r < m; ++r) quantize(r, r + 1, 0, k, std::nullopt);
      break;
    case ActMode::kDynamicPerTensor:
      quantize(0, m, 0, k, std::nullopt);
      break;
    case ActMode::kDynamicGroup:
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t c = 0; c < k; c += act.group_size) {
          quantize(r, r + 1, c, std::min(k, c + act.group_size), std::nullopt);
        }
      }
      break;
    case ActMode::kStaticPerTensor:
      quantize(0, m, 0, k, static_scale.value_or(1.0));
      break;
    case ActMode::kNone:
      break;
  }
  return out;
}

}  // namespace quantpath
