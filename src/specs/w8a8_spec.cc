// W8a8Spec: int8_channel / int8_tensor weights with int8 activations, in the layout of
// w8a8_family.h, loaded from
//   - compressed-tensors int-quantized (`weight` I8 [N, K], `weight_scale` [N, 1] or [1],
//     `input_scale` [1], `input_zero_point` I8 [1]); SGLang's w8a8_int8 reads the same tensors;
//   - ModelSlim W8A8 / W8A8_DYNAMIC (`weight` I8 [N, K], `weight_scale` and `weight_offset`
//     [N, 1]; static: `input_scale` and `input_offset` [1] in the model dtype, `quant_bias` I32 [N]
//     and `deq_scale` [N]: F32 for bf16 models, I64 for fp16 models, holding the fp32 bits in its
//     low 32 bits (msmodelslim's deqscale2int64: the float's int32 pattern widened to int64)).
// Per leg: the codes are stored as q = w + 128, the scales exactly in their 16-bit dtype (one
// fp32 value for int8_tensor). Fused int8_tensor legs keep their own scales as vLLM's
// convert_to_channelwise does: each leg's value repeated over its rows, fp32 [N, 1]. Static inputs:
// compressed-tensors legs are combined into one grid as vLLM does (CombineStaticInputs); ModelSlim
// legs must agree, since SGLang's NPU method quantizes X once with one input_scale and
// input_offset. ModelSlim's deq_scale must be fp32(input_scale · weight_scale[n]), so the kernel's
// s_x · s_w is the value the checkpoint multiplies by; its quant_bias replaces the layer's bias
// (npu_quant_matmul takes it in the bias's place), so the bias slot stays zero. Weight zero points
// (weight_zero_point, weight_offset) must be zero: the engines' int8 W8A8 kernels have none.
// Dynamic activations, symmetric or asymmetric, need nothing beyond the weight: the kernel
// quantizes X per token and applies each token's zero point with the weight's row sums.
// Tensor parallelism (ShardGeometry): a column split keeps each leg's rows of the weight, the
// per-channel scales and ModelSlim's quant_bias and deq_scale; a row split keeps the weight's
// columns, with every per-row and per-tensor value whole on each rank (the input grid included,
// since every rank quantizes its columns of X with the one static scale). compressed-tensors'
// azp_adj is the zero point's share of this rank's columns, as vLLM computes it from the rank's
// weight shard; ModelSlim's quant_bias is the checkpoint's, over all of K, so only rank 0 of a
// row split adds it (vllm-ascend and SGLang's NPU methods pass `quant_bias if tp_rank == 0`):
// the other ranks hold it as zeros, and only the ranks' sum is the layer's product.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "fmt/format.h"
#include "src/specs/int_family.h"
#include "src/specs/spec_common.h"
#include "src/specs/w8a8_family.h"

namespace quantpath {
namespace {

using specs_internal::ShardGeometry;

// Integer element i of an I8 / I32 / I64 tensor (the caller checked the dtype and size).
int64_t IntElement(const TensorView& view, int64_t i) {
  switch (view.info->dtype) {
    case StDtype::kI8:
      return static_cast<int8_t>(view.bytes[i]);
    case StDtype::kI32: {
      int32_t v;
      std::memcpy(&v, view.bytes.data() + 4 * i, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, view.bytes.data() + 8 * i, 8);
      return v;
    }
  }
}

Status ExpectDtype(const TensorView& view, std::string_view layer,
                   std::initializer_list<StDtype> dtypes) {
  for (StDtype d : dtypes) {
    if (view.info->dtype == d) return {};
  }
  std::vector<std::string> names;
  for (StDtype d : dtypes) names.emplace_back(StDtypeName(d));
  return InvalidInput(fmt::format("{}: tensor {} has dtype {}, expected {}", layer, view.info->name,
                                  StDtypeName(view.info->dtype), Join(names, " or ")));
}

// One value of a per-tensor tensor ([] or [1]), decoded as float.
Result<float> ReadScalar(const TensorView& view, std::string_view layer, std::string_view what) {
  QP_RETURN_IF_ERROR(specs_internal::ExpectElements(view, layer, 1, what));
  QP_ASSIGN_OR_RETURN(std::vector<float> v, specs_internal::ReadScales(view, layer));
  return v[0];
}

// What one leg contributes to the static activation grid.
struct LegInputs {
  float scale = 0;
  int32_t zero = 0;
  std::string scale_tensor;
};

class W8a8Spec final : public specs_internal::KeyedSpec {
 public:
  using KeyedSpec::KeyedSpec;

  Result<LinearParams> Allocate(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    LinearParams params = specs_internal::NewParams(request, g, key_);
    params.tensor(Slot::kWeight) = ParamTensor(QDType::kINT8, g.rows, g.cols);
    if (tensor()) {
      params.tensor(Slot::kWeightScale) = ParamTensor(QDType::kFP32, TensorScaleRows(g), 1);
    } else {
      // The 16-bit dtype is replaced by the checkpoint's own at load (same bytes).
      const QDType scale = request.params_dtype == QDType::kFP16 ? QDType::kFP16 : QDType::kBF16;
      params.tensor(Slot::kWeightScale) = ParamTensor(scale, g.rows, 1);
    }
    if (is_static()) {
      params.tensor(Slot::kInputScale) = ParamTensor(QDType::kFP32, 1, 1);
      if (!activation_.symmetric) {
        params.tensor(Slot::kInputOffset) = ParamTensor(QDType::kFP32, 1, 1);
        params.tensor(Slot::kQuantBias) = ParamTensor(QDType::kFP32, 1, g.rows);
      }
    }
    return params;
  }

  Result<int64_t> StorageBytes(const AllocationRequest& request) const override {
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(request));
    QP_ASSIGN_OR_RETURN(int64_t bytes, LayoutBytes(key_, g.rows, g.cols, 16));
    const int64_t quant_bias = is_static() && !activation_.symmetric ? g.rows * 4 : 0;
    const int64_t channelwise = tensor() ? (TensorScaleRows(g) - 1) * 4 : 0;
    return bytes + quant_bias + channelwise + specs_internal::BiasBytes(request, g);
  }

  Status Load(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
              LinearParams* params) const override {
    QP_RETURN_IF_ERROR(specs_internal::ExpectLegPrefixes(*params, leg_prefixes));
    const std::string& layer = params->request.layer;
    if (params->key != key_) {
      return InvalidInput(fmt::format("{}: parameters allocated for {} cannot load as {}", layer,
                                      params->key.ToId(), key_.ToId()));
    }
    QP_ASSIGN_OR_RETURN(ShardGeometry g, specs_internal::ComputeGeometry(params->request));
    std::vector<LegInputs> inputs;
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      const std::string& prefix = leg_prefixes[leg];
      QP_RETURN_IF_ERROR(LoadWeight(checkpoint, prefix, g, leg, params));
      QP_RETURN_IF_ERROR(LoadScales(checkpoint, prefix, g, leg, params));
      if (!is_static()) continue;
      QP_ASSIGN_OR_RETURN(LegInputs in, LoadInputs(checkpoint, layer, prefix));
      inputs.push_back(std::move(in));
    }
    if (is_static()) QP_RETURN_IF_ERROR(StoreInputs(checkpoint, leg_prefixes, g, inputs, params));
    if (!modelslim_static()) {
      QP_RETURN_IF_ERROR(specs_internal::LoadBias(checkpoint, leg_prefixes, g, params));
    }
    params->loaded = true;
    return {};
  }

 private:
  bool tensor() const { return key_.family == kIntTensorFamily; }
  bool is_static() const { return activation_.mode == ActMode::kStaticPerTensor; }
  bool modelslim() const { return facts_.layout == SourceLayout::kModelSlim; }
  bool modelslim_static() const { return modelslim() && is_static(); }
  // int8_tensor scales: one value, or one per row when legs are fused (convert_to_channelwise).
  static int64_t TensorScaleRows(const ShardGeometry& g) {
    return g.leg_rows.size() > 1 ? g.rows : 1;
  }

  // A row-parallel rank other than 0, which leaves the checkpoint's quant_bias to rank 0.
  static bool WithoutQuantBias(const AllocationRequest& request) {
    return request.parallel == Parallel::kRow && request.tp_size > 1 && request.tp_rank != 0;
  }

  Status LoadWeight(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView w, specs_internal::FindSlotTensor(checkpoint, layer, prefix,
                                                                     facts_.layout, Slot::kWeight));
    QP_RETURN_IF_ERROR(ExpectDtype(w, layer, {StDtype::kI8}));
    QP_RETURN_IF_ERROR(specs_internal::ExpectShape(w, layer, {g.full_leg_rows[leg], g.full_cols}));
    ParamTensor& dst = params->tensor(Slot::kWeight);
    uint8_t* out = dst.data<uint8_t>();
    const auto* src = reinterpret_cast<const int8_t*>(w.bytes.data());
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const int8_t* row = src + (g.leg_src_rows[leg] + r) * g.full_cols + g.src_col;
      uint8_t* to = out + (g.leg_offsets[leg] + r) * dst.row_bytes();
      for (int64_t c = 0; c < g.cols; ++c) to[c] = static_cast<uint8_t>(row[c] + 128);
    }
    // A weight zero point would shift every code; the int8 kernels of the engines have none.
    const Slot zero_slot = Slot::kWeightZero;
    const std::optional<std::string_view> zero_suffix = SourceSuffix(facts_.layout, zero_slot);
    if (zero_suffix && checkpoint.Has(prefix + std::string(*zero_suffix))) {
      QP_ASSIGN_OR_RETURN(TensorView z, checkpoint.Get(prefix + std::string(*zero_suffix)));
      Result<std::vector<float>> zeros =
          z.info->dtype == StDtype::kI8 || z.info->dtype == StDtype::kI32
              ? Result<std::vector<float>>(IntsAsFloats(z))
              : specs_internal::ReadScales(z, layer);
      if (!zeros.ok()) return zeros.status().WithContext(layer);
      for (size_t i = 0; i < zeros->size(); ++i) {
        if ((*zeros)[i] == 0) continue;
        return InvalidInput(fmt::format(
            "{}: tensor {} holds weight zero point {} at index {}; {} with int8 activations "
            "needs symmetric weights (zero 0)",
            layer, z.info->name, (*zeros)[i], i, key_.ToId()));
      }
    }
    return {};
  }

  static std::vector<float> IntsAsFloats(const TensorView& view) {
    std::vector<float> out(static_cast<size_t>(view.info->Elements()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(IntElement(view, i));
    return out;
  }

  Status LoadScales(const Checkpoint& checkpoint, const std::string& prefix, const ShardGeometry& g,
                    size_t leg, LinearParams* params) const {
    const std::string& layer = params->request.layer;
    QP_ASSIGN_OR_RETURN(TensorView view,
                        specs_internal::FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                       Slot::kWeightScale));
    ParamTensor& s = params->tensor(Slot::kWeightScale);
    if (tensor()) {
      QP_ASSIGN_OR_RETURN(float value, ReadScalar(view, layer, "one per-tensor scale"));
      if (s.rows() == 1) {
        s.data<float>()[0] = value;
        return {};
      }
      std::fill_n(s.data<float>() + g.leg_offsets[leg], g.leg_rows[leg], value);
      return {};
    }
    const int64_t rows = g.full_leg_rows[leg];
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectElements(view, layer, rows, fmt::format("[{}, 1]", rows)));
    QP_ASSIGN_OR_RETURN(std::vector<float> values, specs_internal::ReadScales(view, layer));
    const std::optional<QDType> stored = SixteenBitScaleDtype(view.info->dtype);
    if (leg == 0 && stored && *stored != s.dtype()) s = ParamTensor(*stored, s.rows(), 1);
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const float value = values[g.leg_src_rows[leg] + r];
      const int64_t i = g.leg_offsets[leg] + r;
      specs_internal::StoreFloat(&s, i, value);
      if (LoadFloat(s, i) == value) continue;
      return InvalidInput(fmt::format(
          "{}: tensor {} holds {} at row {}, which {} cannot hold exactly; {} keeps 16-bit "
          "scales",
          layer, view.info->name, value, g.leg_src_rows[leg] + r, QDTypeName(s.dtype()),
          key_.ToId()));
    }
    return {};
  }

  Result<LegInputs> LoadInputs(const Checkpoint& checkpoint, const std::string& layer,
                               const std::string& prefix) const {
    LegInputs in;
    QP_ASSIGN_OR_RETURN(TensorView s,
                        specs_internal::FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                       Slot::kInputScale));
    QP_ASSIGN_OR_RETURN(in.scale, ReadScalar(s, layer, "one per-tensor input scale"));
    in.scale_tensor = s.info->name;
    if (!(in.scale > 0)) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {}, not a positive scale", layer, s.info->name, in.scale));
    }
    if (activation_.symmetric) return in;
    QP_ASSIGN_OR_RETURN(TensorView z,
                        specs_internal::FindSlotTensor(checkpoint, layer, prefix, facts_.layout,
                                                       Slot::kInputOffset));
    QP_RETURN_IF_ERROR(specs_internal::ExpectElements(z, layer, 1, "one input zero point"));
    double zero = 0;
    if (modelslim()) {
      // ModelSlim stores the offset in the model dtype; it must be an int8 integer.
      QP_ASSIGN_OR_RETURN(std::vector<float> v, specs_internal::ReadScales(z, layer));
      zero = v[0];
    } else {
      QP_RETURN_IF_ERROR(ExpectDtype(z, layer, {StDtype::kI8, StDtype::kI32}));
      zero = static_cast<double>(IntElement(z, 0));
    }
    if (zero != std::nearbyint(zero) || zero < kInt8Min || zero > kInt8Max) {
      return InvalidInput(
          fmt::format("{}: tensor {} is {}, not an int8 zero point", layer, z.info->name, zero));
    }
    in.zero = static_cast<int32_t>(zero);
    return in;
  }

  Status StoreInputs(const Checkpoint& checkpoint, const std::vector<std::string>& leg_prefixes,
                     const ShardGeometry& g, const std::vector<LegInputs>& inputs,
                     LinearParams* params) const {
    const std::string& layer = params->request.layer;
    float scale = inputs[0].scale;
    int32_t zero = inputs[0].zero;
    if (modelslim()) {
      for (const LegInputs& in : inputs) {
        if (in.scale == scale && in.zero == zero) continue;
        return InvalidInput(fmt::format(
            "{}: tensor {} and its offset ({}, {}) differ from the first leg's ({}, {}); "
            "ModelSlim's fused legs quantize X once with one input_scale and input_offset",
            layer, in.scale_tensor, in.scale, in.zero, scale, zero));
      }
    } else {
      std::vector<float> scales;
      std::vector<int32_t> zeros;
      for (const LegInputs& in : inputs) {
        scales.push_back(in.scale);
        zeros.push_back(in.zero);
      }
      std::tie(scale, zero) = CombineStaticInputs(scales, zeros, activation_.symmetric);
      if (!(scale > 0) || !std::isfinite(scale)) {
        return InvalidInput(
            fmt::format("{}: the legs' input scales and zero points combine to "
                        "scale {}, which cannot quantize",
                        layer, scale));
      }
    }
    params->tensor(Slot::kInputScale).data<float>()[0] = scale;
    if (activation_.symmetric) return {};
    params->tensor(Slot::kInputOffset).data<int32_t>()[0] = zero;
    int32_t* c = params->tensor(Slot::kQuantBias).data<int32_t>();
    const ParamTensor& w = params->tensor(Slot::kWeight);
    if (!modelslim()) {
      // vLLM's azp_adj: the zero point's share of each row's integer sum.
      for (int64_t n = 0; n < g.rows; ++n) {
        int64_t sum = 0;
        const uint8_t* row = w.data<uint8_t>() + n * w.row_bytes();
        for (int64_t k = 0; k < g.cols; ++k) sum += static_cast<int64_t>(row[k]) - 128;
        c[n] = static_cast<int32_t>(-int64_t{zero} * sum);
      }
      return {};
    }
    for (size_t leg = 0; leg < leg_prefixes.size(); ++leg) {
      QP_RETURN_IF_ERROR(LoadModelSlimRows(checkpoint, leg_prefixes[leg], g, leg, scale, params));
    }
    return {};
  }

  // ModelSlim's quant_bias, and the check that deq_scale is input_scale · weight_scale.
  Status LoadModelSlimRows(const Checkpoint& checkpoint, const std::string& prefix,
                           const ShardGeometry& g, size_t leg, float input_scale,
                           LinearParams* params) const {
    const std::string& layer = params->request.layer;
    const int64_t rows = g.full_leg_rows[leg];
    QP_ASSIGN_OR_RETURN(
        TensorView bias,
        specs_internal::FindSlotTensor(checkpoint, layer, prefix, facts_.layout, Slot::kQuantBias));
    QP_RETURN_IF_ERROR(ExpectDtype(bias, layer, {StDtype::kI32}));
    QP_RETURN_IF_ERROR(
        specs_internal::ExpectElements(bias, layer, rows, fmt::format("[{}]", rows)));
    QP_ASSIGN_OR_RETURN(TensorView deq,
                        specs_internal::FindTensor(checkpoint, layer, prefix, ".deq_scale"));
    QP_RETURN_IF_ERROR(ExpectDtype(deq, layer, {StDtype::kF32, StDtype::kI64}));
    QP_RETURN_IF_ERROR(specs_internal::ExpectElements(deq, layer, rows, fmt::format("[{}]", rows)));
    int32_t* c = params->tensor(Slot::kQuantBias).data<int32_t>();
    const ParamTensor& s = params->tensor(Slot::kWeightScale);
    for (int64_t r = 0; r < g.leg_rows[leg]; ++r) {
      const int64_t src = g.leg_src_rows[leg] + r;
      const int64_t n = g.leg_offsets[leg] + r;
      c[n] = WithoutQuantBias(params->request) ? 0 : static_cast<int32_t>(IntElement(bias, src));
      float stored = 0;
      if (deq.info->dtype == StDtype::kF32) {
        std::memcpy(&stored, deq.bytes.data() + 4 * src, 4);
      } else {
        const int64_t bits = IntElement(deq, src);
        if (bits < INT32_MIN || bits > INT32_MAX) {
          return InvalidInput(fmt::format(
              "{}: tensor {} holds {} at row {}, not an fp32 bit pattern widened from int32", layer,
              deq.info->name, bits, src));
        }
        const int32_t low = static_cast<int32_t>(bits);
        std::memcpy(&stored, &low, 4);
      }
      const float expected = input_scale * LoadFloat(s, s.rows() == 1 ? 0 : n);
      if (stored == expected) continue;
      return InvalidInput(fmt::format(
          "{}: tensor {} holds {} at row {}, but input_scale × weight_scale is {}; the int8 "
          "kernels scale each row by that product",
          layer, deq.info->name, stored, src, expected));
    }
    return {};
  }
};

}  // namespace

std::pair<float, int32_t> CombineStaticInputs(std::span<const float> scales,
                                              std::span<const int32_t> zero_points,
                                              bool symmetric) {
  if (symmetric) return {*std::max_element(scales.begin(), scales.end()), 0};
  float range_max = scales[0] * static_cast<float>(kInt8Max - zero_points[0]);
  float range_min = scales[0] * static_cast<float>(kInt8Min - zero_points[0]);
  for (size_t i = 1; i < scales.size(); ++i) {
    range_max = std::max(range_max, scales[i] * static_cast<float>(kInt8Max - zero_points[i]));
    range_min = std::min(range_min, scales[i] * static_cast<float>(kInt8Min - zero_points[i]));
  }
  const float scale = (range_max - range_min) / static_cast<float>(kInt8Max - kInt8Min);
  const float zero = std::nearbyint(static_cast<float>(kInt8Min) - range_min / scale);
  if (!std::isfinite(zero)) return {scale, 0};
  return {scale, static_cast<int32_t>(std::clamp(zero, -2147483648.0f, 2147483520.0f))};
}

namespace specs_internal {

Result<std::unique_ptr<WeightSpec>> MakeW8a8Spec(const SpecKey& key, const ActivationQuant& act,
                                                 const LoadFacts& facts) {
  const std::string id = key.ToId();
  if (key.bits != 8 || act.dtype != QDType::kINT8 ||
      (key.family != kIntChannelFamily && key.family != kIntTensorFamily)) {
    return Unsupported(
        fmt::format("{} with {} activations has no kernel mode yet", id, act.ToString()));
  }
  if (key.zero_point) {
    return Unsupported(fmt::format(
        "{} with {} activations: asymmetric int8 weights have no W8A8 kernel (the engines' int8 "
        "W8A8 kernels need symmetric weights)",
        id, act.ToString()));
  }
  if (act.mode != ActMode::kDynamicPerToken && act.mode != ActMode::kStaticPerTensor) {
    return Unsupported(
        fmt::format("{} with {} activations has no kernel mode yet", id, act.ToString()));
  }
  if (facts.layout != SourceLayout::kCtNaiveQuantized && facts.layout != SourceLayout::kModelSlim) {
    return Unsupported(fmt::format("{}: int8 W8A8 weights in source layout {} cannot be loaded", id,
                                   SourceLayoutName(facts.layout)));
  }
  return std::unique_ptr<WeightSpec>(std::make_unique<W8a8Spec>(key, act, facts));
}

}  // namespace specs_internal
}  // namespace quantpath
