// The quantizer registry and the spec that quantizes at load: it reads each leg's high-precision
// weight whole, has the key's quantizer write the family's checkpoint tensors, and loads those
// through the family's own spec (online_quantizer.h says why).
#include <algorithm>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>

#include "fmt/format.h"
#include "src/specs/online/online_quantizer.h"
#include "src/specs/spec_common.h"

namespace quantpath {
namespace specs_internal {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<OnlineQuantizer> quantizers;  // a deque: specs keep references to its rows
  std::map<std::string, OnlineTarget, std::less<>> targets;  // by name
};

Registry& Quantizers() {
  static Registry* registry = new Registry();  // never destroyed: used at exit
  return *registry;
}

// "w8a8-fp8-tensor-dyn" for the scheme "w8a8-fp8-tensor-dyn-online".
std::string TargetName(const QuantScheme& scheme) {
  QuantScheme offline = scheme;
  offline.online = false;
  return offline.CanonicalName();
}

// The `count` values of a BF16, F16 or F32 tensor widened into `out` (exactly), straight from
// the file's bytes: a layer is read once, without a copy in between.
void WidenToFloat(const TensorView& view, int64_t count, float* out) {
  const std::byte* bytes = view.bytes.data();
  if (view.info->dtype == StDtype::kF32) {
    std::memcpy(out, bytes, static_cast<size_t>(count) * 4);
    return;
  }
  const bool bf16 = view.info->dtype == StDtype::kBF16;
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    out[i] = bf16 ? Bf16ToFloat(bits) : Fp16ToFloat(bits);
  }
}

// Every leg's `.weight`, whole: a bf16 / fp16 / fp32 tensor of the leg's shape, every value
// finite.
Result<DenseLayer> ReadDenseLayer(const Checkpoint& checkpoint, const AllocationRequest& request,
                                  const std::vector<std::string>& prefixes) {
  QP_ASSIGN_OR_RETURN(ShardGeometry g, ComputeGeometry(request));
  DenseLayer dense{request.layer, prefixes, {}, g.full_cols, request.params_dtype};
  for (size_t leg = 0; leg < prefixes.size(); ++leg) {
    QP_ASSIGN_OR_RETURN(TensorView view, FindSlotTensor(checkpoint, request.layer, prefixes[leg],
                                                        SourceLayout::kDense, Slot::kWeight));
    if (!IsUnquantized(view.info->dtype)) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {}, but quantizing at load reads BF16, F16 or F32 weights",
                      request.layer, view.info->name, StDtypeName(view.info->dtype)));
    }
    QP_RETURN_IF_ERROR(ExpectShape(view, request.layer, {g.full_leg_rows[leg], g.full_cols}));
    ParamTensor w(QDType::kFP32, g.full_leg_rows[leg], g.full_cols);
    float* values = w.data<float>();
    WidenToFloat(view, w.elements(), values);
    for (int64_t i = 0; i < w.elements(); ++i) {
      if (!std::isfinite(values[i])) {
        return InvalidInput(fmt::format(
            "{}: tensor {} holds {} at row {}, column {}; quantizing at load needs finite "
            "weights",
            request.layer, view.info->name, values[i], i / g.full_cols, i % g.full_cols));
      }
    }
    dense.legs.push_back(std::move(w));
  }
  return dense;
}

// The legs' `.bias` tensors as stored, for the family's loader to read beside the codes.
std::vector<Checkpoint::OwnedTensor> BiasTensors(const Checkpoint& checkpoint,
                                                 const std::vector<std::string>& prefixes) {
  std::vector<Checkpoint::OwnedTensor> tensors;
  for (const std::string& prefix : prefixes) {
    Result<TensorView> bias = checkpoint.Get(prefix + ".bias");
    if (!bias.ok()) continue;  // a missing bias is the family loader's error to report
    tensors.push_back({bias->info->name, bias->info->dtype, bias->info->shape,
                       std::vector<std::byte>(bias->bytes.begin(), bias->bytes.end())});
  }
  return tensors;
}

class OnlineSpec final : public WeightSpec {
 public:
  OnlineSpec(std::unique_ptr<WeightSpec> family_spec, const OnlineQuantizer& quantizer,
             const LoadFacts& facts)
      : family_spec_(std::move(family_spec)), quantizer_(quantizer), facts_(facts) {}

  const SpecKey& key() const override { return family_spec_->key(); }
  const ActivationQuant& activation() const override { return family_spec_->activation(); }
  const LoadFacts& facts() const override { return facts_; }
  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    return family_spec_->Allocate(request);
  }
  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    return family_spec_->StorageBytes(request);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(ExpectLegPrefixes(*params, leg_prefixes));
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(DenseLayer dense,
                        ReadDenseLayer(checkpoint, params->request, leg_prefixes));
    QP_ASSIGN_OR_RETURN(QuantizedLayer quantized, quantizer_.quantize(key(), dense));
    std::vector<Checkpoint::OwnedTensor> bias = BiasTensors(checkpoint, leg_prefixes);
    std::move(bias.begin(), bias.end(), std::back_inserter(quantized.tensors));
    QP_ASSIGN_OR_RETURN(Checkpoint held,
                        Checkpoint::FromTensors(fmt::format("{} quantized at load", layer),
                                                std::move(quantized.tensors)));
    QP_RETURN_IF_ERROR(family_spec_->Load(held, leg_prefixes, params));
    params->quantization_error = quantized.error.rel();
    return {};
  }

  Status ProcessAfterLoading(LinearParams* params) const override {
    return family_spec_->ProcessAfterLoading(params);
  }

 private:
  std::unique_ptr<WeightSpec> family_spec_;
  const OnlineQuantizer& quantizer_;
  const LoadFacts facts_;
};

}  // namespace

OnlineQuantizerRegistrar::OnlineQuantizerRegistrar(const OnlineQuantizer& quantizer,
                                                   std::vector<OnlineTarget> targets) {
  Registry& r = Quantizers();
  std::lock_guard<std::mutex> lock(r.mu);
  r.quantizers.push_back(quantizer);
  for (OnlineTarget& target : targets) {
    target.name = TargetName(target.scheme);
    std::string name = target.name;
    r.targets.emplace(std::move(name), std::move(target));
  }
}

const OnlineQuantizer* FindOnlineQuantizer(const SpecKey& key, const ActivationQuant& act) {
  Registry& r = Quantizers();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const OnlineQuantizer& q : r.quantizers) {
    if (q.family == key.family && q.accepts(key, act)) return &q;
  }
  return nullptr;
}

Result<std::unique_ptr<WeightSpec>> MakeOnlineSpec(const OnlineQuantizer& quantizer,
                                                   const SpecKey& key, const ActivationQuant& act,
                                                   const LoadFacts& facts) {
  LoadFacts written = facts;
  written.layout = quantizer.layout;
  QP_ASSIGN_OR_RETURN(std::unique_ptr<WeightSpec> family_spec, MakeSpec(key, act, written));
  return std::unique_ptr<WeightSpec>(
      std::make_unique<OnlineSpec>(std::move(family_spec), quantizer, facts));
}

QuantScheme OnlineScheme(TensorQuant weight, std::optional<TensorQuant> input) {
  QuantScheme scheme;
  scheme.weight = std::move(weight);
  scheme.weight.load.layout = SourceLayout::kDense;
  scheme.input = std::move(input);
  scheme.online = true;
  return scheme;
}

OnlineTarget Served(QuantScheme scheme) { return {std::move(scheme), {}, {}}; }

OnlineTarget Refused(QuantScheme scheme, std::string_view why) {
  return {std::move(scheme), why, {}};
}

std::vector<TensorHeader> E2M1LegHeaders(const std::string& prefix, int64_t rows, int64_t cols,
                                         int64_t group, StDtype scale_dtype) {
  return {{prefix + ".weight_packed", StDtype::kU8, {rows, (cols + 1) / 2}},
          {prefix + ".weight_scale", scale_dtype, {rows, (cols + group - 1) / group}}};
}

float DenseLayer::AbsMax() const {
  float amax = 0.0f;
  for (const ParamTensor& leg : legs) {
    amax = std::max(amax, specs_internal::AbsMax(leg.data<float>(), leg.elements()));
  }
  return amax;
}

QDType IntScaleDtype(QDType params_dtype) {
  return params_dtype == QDType::kFP16 ? QDType::kFP16 : QDType::kBF16;
}

uint16_t Bits16(float x, QDType dtype) {
  return dtype == QDType::kFP16 ? FloatToFp16(x) : FloatToBf16(x);
}

float Round16(float x, QDType dtype) {
  const uint16_t bits = Bits16(x, dtype);
  return dtype == QDType::kFP16 ? Fp16ToFloat(bits) : Bf16ToFloat(bits);
}

void AddCtPackedLeg(const std::string& prefix, int64_t rows, int64_t cols, int64_t words,
                    std::span<const uint8_t> packed, QDType scale_dtype, int64_t scale_cols,
                    std::span<const uint16_t> scales, QuantizedLayer* out) {
  out->tensors.push_back(
      OwnedTensorOf<uint8_t>(prefix, ".weight_packed", StDtype::kI32, {rows, words}, packed));
  const int64_t shape[] = {rows, cols};
  out->tensors.push_back(
      OwnedTensorOf<int64_t>(prefix, ".weight_shape", StDtype::kI64, {2}, shape));
  out->tensors.push_back(OwnedTensorOf<uint16_t>(prefix, ".weight_scale", StDtypeOf16(scale_dtype),
                                                 {rows, scale_cols}, scales));
}

float AbsMax(const float* w, int64_t count, int64_t stride) {
  float amax = 0.0f;
  for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::abs(w[i * stride]));
  return amax;
}

}  // namespace specs_internal

std::vector<OnlineTarget> OnlineTargets() {
  specs_internal::Registry& r = specs_internal::Quantizers();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<OnlineTarget> targets;
  for (const auto& [name, target] : r.targets) targets.push_back(target);
  return targets;
}

Result<QuantScheme> OnlineTargetNamed(std::string_view name) {
  std::vector<std::string> names;
  for (const OnlineTarget& target : OnlineTargets()) {
    if (target.name == name && !target.refusal.empty()) {
      return Unsupported(std::string(target.refusal));
    }
    if (target.name == name) return target.scheme;
    if (target.refusal.empty()) names.push_back(target.name);
  }
  return Unsupported(fmt::format("no quantizer in this build writes {} at load (targets: {})", name,
                                 Join(names, ", ")));
}

bool QuantizesAtLoad(const SpecKey& key, const ActivationQuant& act) {
  return specs_internal::FindOnlineQuantizer(key, act) != nullptr;
}

namespace {

Result<const specs_internal::OnlineQuantizer*> QuantizerFor(const SpecKey& key,
                                                            const ActivationQuant& act) {
  const specs_internal::OnlineQuantizer* q = specs_internal::FindOnlineQuantizer(key, act);
  if (q == nullptr) {
    return Unsupported(fmt::format("spec {} with {} activations: no quantizer writes it",
                                   key.ToId(), act.ToString()));
  }
  return q;
}

}  // namespace

Result<QuantizedHeaders> QuantizedLayerHeaders(const SpecKey& key, const ActivationQuant& act,
                                               const AllocationRequest& request,
                                               const std::vector<std::string>& leg_prefixes) {
  QP_ASSIGN_OR_RETURN(const specs_internal::OnlineQuantizer* q, QuantizerFor(key, act));
  QP_ASSIGN_OR_RETURN(specs_internal::ShardGeometry g, specs_internal::ComputeGeometry(request));
  if (leg_prefixes.size() != g.full_leg_rows.size()) {
    return InvalidInput(fmt::format("{}: {} leg prefixes for {} legs", request.layer,
                                    leg_prefixes.size(), g.full_leg_rows.size()));
  }
  QuantizedHeaders headers{q->layout, {}};
  for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
    for (TensorHeader& h : q->headers(key, leg_prefixes[leg], g.full_leg_rows[leg], g.full_cols,
                                      request.params_dtype)) {
      headers.tensors.push_back(std::move(h));
    }
  }
  return headers;
}

Result<QuantizedTensors> QuantizeLayerTensors(const SpecKey& key, const ActivationQuant& act,
                                              const Checkpoint& checkpoint,
                                              const AllocationRequest& request,
                                              const std::vector<std::string>& leg_prefixes) {
  QP_ASSIGN_OR_RETURN(const specs_internal::OnlineQuantizer* q, QuantizerFor(key, act));
  QP_ASSIGN_OR_RETURN(specs_internal::DenseLayer dense,
                      specs_internal::ReadDenseLayer(checkpoint, request, leg_prefixes));
  QP_ASSIGN_OR_RETURN(specs_internal::QuantizedLayer quantized, q->quantize(key, dense));
  return QuantizedTensors{q->layout, std::move(quantized.tensors), quantized.error.rel()};
}

Result<std::unique_ptr<WeightSpec>> MakeSpecQuantizingAtLoad(const SpecKey& key,
                                                             const ActivationQuant& act,
                                                             const LoadFacts& facts) {
  QP_ASSIGN_OR_RETURN(const specs_internal::OnlineQuantizer* q, QuantizerFor(key, act));
  return specs_internal::MakeOnlineSpec(*q, key, act, facts);
}

}  // namespace quantpath
