// Reading bitsandbytes' 4-bit quant state (bnb_quant_state.h): the JSON blob and the absmax it
// describes, with every field checked before it sizes anything.
#include "src/specs/bnb_quant_state.h"

#include <cmath>
#include <limits>

#include "fmt/format.h"
#include "quantpath/base.h"
#include "src/specs/bnb_family.h"
#include "src/specs/spec_common.h"

namespace quantpath::specs_internal {

constexpr std::string_view kStatePrefix = ".weight.quant_state.bitsandbytes__";

namespace {

constexpr std::string_view kAbsmax = ".weight.absmax";
constexpr std::string_view kNestedAbsmax = ".weight.nested_absmax";
constexpr std::string_view kNestedMap = ".weight.nested_quant_map";
// Entries of the nested code (bitsandbytes' 8-bit dynamic map).
constexpr int64_t kNestedCodes = 256;

constexpr std::string_view kKnownKeys[] = {"quant_type",   "blocksize",        "dtype",
                                           "shape",        "nested_blocksize", "nested_dtype",
                                           "nested_offset"};

Result<int64_t> PositiveInt(const Json& root, std::string_view key, const std::string& name) {
  const Json* v = root.Find(key);
  if (v == nullptr || !v->is_int() || v->int_value() <= 0) {
    return InvalidInput(
        fmt::format("{}: quant_state \"{}\" must be a positive integer", name, key));
  }
  return v->int_value();
}

// `name`'s values as fp32, with exactly `count` of them and of dtype `dtype`.
Result<std::vector<float>> ReadF32(const Checkpoint& checkpoint, std::string_view layer,
                                   const std::string& name, int64_t count) {
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  if (view->info->dtype != StDtype::kF32 || view->info->Elements() != count) {
    return InvalidInput(fmt::format("{}: tensor {} is {} {}, expected {} F32 values", layer, name,
                                    StDtypeName(view->info->dtype), ShapeString(view->info->shape),
                                    count));
  }
  Result<std::vector<float>> values = CopyTensor<float>(*view);
  if (!values.ok()) return values.status().WithContext(layer);
  for (size_t i = 0; i < values->size(); ++i) {
    if (!std::isfinite((*values)[i])) {
      return InvalidInput(
          fmt::format("{}: tensor {} holds {} at index {}", layer, name, (*values)[i], i));
    }
  }
  return values;
}

}  // namespace

Result<BnbQuantState> ReadBnbQuantState(const Checkpoint& checkpoint, std::string_view layer,
                                        const std::string& prefix) {
  const std::string nf4 = fmt::format("{}{}nf4", prefix, kStatePrefix);
  const std::string fp4 = fmt::format("{}{}fp4", prefix, kStatePrefix);
  const bool has_nf4 = checkpoint.Has(nf4);
  if (has_nf4 == checkpoint.Has(fp4)) {
    return InvalidInput(fmt::format("{}: expected exactly one of {} and {}, found {}", layer, nf4,
                                    fp4, has_nf4 ? "both" : "neither"));
  }
  const std::string& name = has_nf4 ? nf4 : fp4;
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  if (view->info->dtype != StDtype::kU8 || view->info->shape.size() != 1) {
    return InvalidInput(
        fmt::format("{}: tensor {} is {} {}, expected the U8 bytes of a JSON "
                    "object",
                    layer, name, StDtypeName(view->info->dtype), ShapeString(view->info->shape)));
  }
  const std::string_view text(reinterpret_cast<const char*>(view->bytes.data()),
                              view->bytes.size());
  const std::string where = fmt::format("{} (tensor {})", layer, name);
  QP_ASSIGN_OR_RETURN(Json root, ParseJson(text, where));
  if (!root.is_object()) return InvalidInput(fmt::format("{}: not a JSON object", where));
  for (const Json::Member& member : root.members()) {
    bool known = false;
    for (std::string_view key : kKnownKeys) known = known || member.first == key;
    if (!known) {
      return InvalidInput(fmt::format("{}: unknown quant_state key \"{}\"", where, member.first));
    }
  }
  BnbQuantState state;
  const Json* type = root.Find("quant_type");
  state.quant_type = has_nf4 ? "nf4" : "fp4";
  if (type == nullptr || !type->is_string() || type->string_value() != state.quant_type) {
    return InvalidInput(fmt::format("{}: quant_type must be \"{}\", as the tensor's name says",
                                    where, state.quant_type));
  }
  QP_ASSIGN_OR_RETURN(state.blocksize, PositiveInt(root, "blocksize", where));
  const Json* dtype = root.Find("dtype");
  if (dtype == nullptr || !dtype->is_string()) {
    return InvalidInput(fmt::format("{}: quant_state \"dtype\" must be a string", where));
  }
  const Json* shape = root.Find("shape");
  if (shape == nullptr || !shape->is_array() || shape->items().size() != 2) {
    return InvalidInput(fmt::format("{}: quant_state \"shape\" must be [N, K]", where));
  }
  for (const Json& d : shape->items()) {
    // Bounded so that N · K cannot overflow.
    if (!d.is_int() || d.int_value() <= 0 || d.int_value() > (int64_t{1} << 31)) {
      return InvalidInput(
          fmt::format("{}: quant_state \"shape\" must hold two positive sizes", where));
    }
    state.shape.push_back(d.int_value());
  }
  const int nested_keys = static_cast<int>(root.Find("nested_blocksize") != nullptr) +
                          static_cast<int>(root.Find("nested_dtype") != nullptr) +
                          static_cast<int>(root.Find("nested_offset") != nullptr);
  if (nested_keys != 0 && nested_keys != 3) {
    return InvalidInput(fmt::format(
        "{}: nested_blocksize, nested_dtype and nested_offset come together or not at all", where));
  }
  state.nested = nested_keys == 3;
  if (state.nested) {
    QP_ASSIGN_OR_RETURN(state.nested_blocksize, PositiveInt(root, "nested_blocksize", where));
    const Json* nested_dtype = root.Find("nested_dtype");
    if (!nested_dtype->is_string() || nested_dtype->string_value() != "float32") {
      return InvalidInput(fmt::format("{}: nested_dtype must be \"float32\"", where));
    }
    const Json* offset = root.Find("nested_offset");
    const double value = offset->is_number() ? offset->number_value() : NAN;
    if (!std::isfinite(value) || std::fabs(value) > std::numeric_limits<float>::max()) {
      return InvalidInput(fmt::format("{}: nested_offset must be a finite number", where));
    }
    state.nested_offset = static_cast<float>(value);
  }
  return state;
}

Result<std::vector<float>> ReadBnbAbsmax(const Checkpoint& checkpoint, std::string_view layer,
                                         const std::string& prefix, const BnbQuantState& state,
                                         int64_t blocks) {
  const std::string absmax_name = prefix + std::string(kAbsmax);
  if (!state.nested) return ReadF32(checkpoint, layer, absmax_name, blocks);
  Result<TensorView> codes = checkpoint.Get(absmax_name);
  if (!codes.ok()) return codes.status().WithContext(layer);
  if (codes->info->dtype != StDtype::kU8 || codes->info->Elements() != blocks) {
    return InvalidInput(fmt::format(
        "{}: tensor {} is {} {}, expected {} U8 codes (the quant_state is double-quantized)", layer,
        absmax_name, StDtypeName(codes->info->dtype), ShapeString(codes->info->shape), blocks));
  }
  const int64_t nested_blocks = (blocks + state.nested_blocksize - 1) / state.nested_blocksize;
  QP_ASSIGN_OR_RETURN(
      std::vector<float> nested_absmax,
      ReadF32(checkpoint, layer, prefix + std::string(kNestedAbsmax), nested_blocks));
  QP_ASSIGN_OR_RETURN(std::vector<float> nested_map,
                      ReadF32(checkpoint, layer, prefix + std::string(kNestedMap), kNestedCodes));
  std::vector<float> absmax(static_cast<size_t>(blocks));
  for (int64_t j = 0; j < blocks; ++j) {
    const auto code = static_cast<uint8_t>(codes->bytes[static_cast<size_t>(j)]);
    // Two fp32 operations, in bitsandbytes' order (dequantize_blockwise, then += offset).
    absmax[j] =
        RoundedSum(RoundedProduct(nested_map[code], nested_absmax[j / state.nested_blocksize]),
                   state.nested_offset);
    if (!std::isfinite(absmax[j])) {
      return InvalidInput(fmt::format("{}: tensor {} dequantizes to {} at block {}", layer,
                                      absmax_name, absmax[j], j));
    }
  }
  return absmax;
}

}  // namespace quantpath::specs_internal
