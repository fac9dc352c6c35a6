// The fp8 kinds: X rounded to e4m3 (specs.h's conventions: a measured scale is max(absmax,
// kActAbsMaxFloor) / 448, an fp32 value; X' = e4m3(X / scale) × scale) with one scale
//   fp8_per_token   per row of X (dynamic per-token and per-channel inputs),
//   fp8_per_tensor  for all of X, measured at run time,
//   fp8_group       per row and group of columns (group inputs, 1 × k blocks: DeepSeek's 1 × 128),
//   fp8_static      for all of X, the checkpoint's input_scale (the largest of the legs').
// An input of another dtype with one of these granularities, which no kind of its own claims
// (int8 per tensor, …), is rounded the same way: no spec accepts it, and each family's Make names
// it in its error. NVFP4 groups are not: their kinds need a global (nvfp4_family.h).
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "quantpath/activation_kinds.h"
#include "src/specs/activations/activation_rounding.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

bool PerTokenGranularity(Granularity g) {
  return g == Granularity::kPerToken || g == Granularity::kPerChannel;
}

class E4m3Kind final : public ActivationKindRow {
 public:
  E4m3Kind(std::string_view name, ActMode mode) : name_(name), mode_(mode) {}
  std::string_view name() const override { return name_; }
  int priority() const override { return 0; }

  bool Claims(const TensorQuant& in) const override {
    switch (mode_) {
      case ActMode::kDynamicPerToken:
        return in.dynamic == Dynamic::kDynamic && PerTokenGranularity(in.granularity);
      case ActMode::kDynamicPerTensor:
        return in.dynamic == Dynamic::kDynamic && in.granularity == Granularity::kPerTensor;
      case ActMode::kDynamicGroup:
        return in.dynamic == Dynamic::kDynamic && in.dtype != QDType::kNVFP4 &&
               XGroupOf(in).has_value();
      case ActMode::kStaticPerTensor:
        return in.dynamic == Dynamic::kStatic && in.granularity == Granularity::kPerTensor;
      case ActMode::kNone:
        break;
    }
    return false;
  }
  ActivationQuant Quant(const TensorQuant& in) const override {
    return ActivationFields(in, mode_);
  }
  bool Describes(const ActivationQuant& act) const override { return act.mode == mode_; }

  std::optional<E4m3Runs> RunsOf(const ActivationQuant& act, int64_t k,
                                 const LinearParams& params) const override {
    switch (mode_) {
      case ActMode::kDynamicPerToken:
        return E4m3Runs{.group = k};
      case ActMode::kDynamicPerTensor:
        return E4m3Runs{.group = k, .whole_x = true};
      case ActMode::kDynamicGroup:
        return E4m3Runs{.group = act.group_size};
      case ActMode::kStaticPerTensor:
        return E4m3Runs{.group = k,
                        .fixed_scale = params.tensor(Slot::kInputScale).data<float>()[0]};
      case ActMode::kNone:
        break;
    }
    return std::nullopt;
  }
  void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                   const LinearParams& params) const override {
    const E4m3Runs runs = *RunsOf(act, k, params);
    const std::vector<float> scales = reference::RoundToE4m3Runs(x, m, k, runs);
    const int64_t count = (k + runs.group - 1) / runs.group;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < k; ++c) (*x)[r * k + c] *= scales[r * count + c / runs.group];
    }
  }
  std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                     const ActivationQuant& act, std::optional<double> static_scale,
                                     std::optional<double>) const override {
    std::vector<double> out(x.begin(), x.end());
    // Quantizes out[row * k + c] for c in [begin, end) of each row in [row_begin, row_end) with
    // one scale.
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
    switch (mode_) {
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

  std::vector<Slot> StaticSlots(const ActivationQuant&) const override {
    if (mode_ == ActMode::kStaticPerTensor) return {Slot::kInputScale};
    return {};
  }
  // fp8_static: the largest of the legs' input_scale, as vLLM's fp8 methods keep it.
  Status ReadReferenceInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                             std::string_view layer_name,
                             const std::vector<std::string>& leg_prefixes,
                             ReferenceLayer* layer) const override {
    if (mode_ != ActMode::kStaticPerTensor) return {};
    for (const std::string& prefix : leg_prefixes) {
      QP_ASSIGN_OR_RETURN(const std::string name,
                          reference::SlotTensorName(scheme.weight.load.layout, Slot::kInputScale,
                                                    layer_name, prefix, "static input scale"));
      TensorInfo info;
      QP_ASSIGN_OR_RETURN(const std::vector<double> s,
                          reference::ReadDoubles(checkpoint, layer_name, name, &info));
      if (s.size() != 1) {
        return InvalidInput(fmt::format("{}: tensor {} is not one value", layer_name, info.name));
      }
      layer->input_scale = std::max(layer->input_scale.value_or(s[0]), s[0]);
    }
    return {};
  }

 private:
  std::string_view name_;
  ActMode mode_;
};

const ActivationKindRegistrar kPerToken(std::make_unique<E4m3Kind>("fp8_per_token",
                                                                   ActMode::kDynamicPerToken));
const ActivationKindRegistrar kPerTensor(std::make_unique<E4m3Kind>("fp8_per_tensor",
                                                                    ActMode::kDynamicPerTensor));
const ActivationKindRegistrar kGroup(std::make_unique<E4m3Kind>("fp8_group",
                                                                ActMode::kDynamicGroup));
const ActivationKindRegistrar kStatic(std::make_unique<E4m3Kind>("fp8_static",
                                                                 ActMode::kStaticPerTensor));

}  // namespace
}  // namespace quantpath
