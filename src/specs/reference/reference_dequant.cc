// The double-precision reference: checkpoint tensors → dequantized weights, and activation
// quantization, written from the format conventions without going through any spec, so that it
// can judge the specs and the kernels. One entry per checkpoint source layout registers itself
// from its own file (dense_reference.cc, fp8_reference.cc, …); this file stacks the legs. The
// static inputs and X's rounding are the activation kind's (src/specs/activations/): the fp8
// static scale is the max of the legs' `input_scale`, int8 inputs follow the engines' one grid
// for all legs, NVFP4 ones the one input global the engines share over the experts of an MoE
// layer (DequantizeExpertReference, nvfp4_family.h).
#include <cmath>
#include <map>
#include <mutex>
#include <type_traits>

#include "fmt/format.h"
#include "quantpath/activation_kinds.h"
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

// The kind that quantizes the scheme's input, which reads its static inputs; nullptr without one
// (or for an input no kind claims, which no spec runs).
const ActivationKindRow* InputKind(const QuantScheme& scheme) {
  return scheme.input ? ActivationKindClaiming(*scheme.input) : nullptr;
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
  if (const ActivationKindRow* kind = InputKind(scheme)) {
    QP_RETURN_IF_ERROR(kind->ReadReferenceInputs(checkpoint, scheme, layer, leg_prefixes, &out));
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
  if (const ActivationKindRow* kind = InputKind(scheme)) {
    QP_RETURN_IF_ERROR(kind->ShareExpertInputs(checkpoint, scheme, layer, input_peers, &out));
  }
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
  return ActivationKindOf(act).RoundReference(x, m, k, act, static_scale, static_zero_point);
}

}  // namespace quantpath
