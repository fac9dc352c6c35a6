// Reference entries of the bitsandbytes source layouts, written from bitsandbytes' serialization
// and its dequantize_4bit / int8_vectorwise_dequant, not from the specs:
//   kBnb4bit  w[f] = quant_map[code f] × absmax[f / blocksize] over the flattened weight, code f
//             the high nibble of byte f / 2 for even f and the low one for odd f, quant_map the
//             checkpoint's own, blocksize and shape from the quant_state; under double
//             quantization absmax is resolved in fp32 as bitsandbytes does (ReadBnbAbsmax). The
//             product of two fp32 values is exact in double.
//   kBnb8bit  w[r][c] = fp32(fp32(q × SCB[r]) × fp32(1/127)), bitsandbytes' fp32 operations
//             reproduced (each product exact in double, then rounded to float).
#include <cmath>

#include "fmt/format.h"
#include "src/specs/bnb_quant_state.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath {
namespace {

double ToFloat(double v) { return static_cast<double>(static_cast<float>(v)); }

Result<ReferenceLeg> DequantizeBnb4Leg(const Checkpoint& checkpoint, const QuantScheme&,
                                       std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(specs_internal::BnbQuantState state,
                      specs_internal::ReadBnbQuantState(checkpoint, layer, prefix));
  ReferenceLeg leg;
  leg.rows = state.shape[0];
  leg.cols = state.shape[1];
  const int64_t n = leg.rows * leg.cols;
  const std::string weight_name = prefix + ".weight";
  Result<TensorView> packed = checkpoint.Get(weight_name);
  if (!packed.ok()) return packed.status().WithContext(layer);
  if (packed->info->dtype != StDtype::kU8 ||
      static_cast<int64_t>(packed->bytes.size()) != (n + 1) / 2) {
    return InvalidInput(fmt::format("{}: tensor {} does not hold the {} packed codes of {}", layer,
                                    weight_name, n, prefix));
  }
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(
      std::vector<double> map,
      reference::ReadDoubles(checkpoint, layer, prefix + ".weight.quant_map", &info));
  if (map.size() != 16) {
    return InvalidInput(
        fmt::format("{}: tensor {} has {} entries, expected 16", layer, info.name, map.size()));
  }
  const int64_t blocks = (n + state.blocksize - 1) / state.blocksize;
  QP_ASSIGN_OR_RETURN(std::vector<float> absmax,
                      specs_internal::ReadBnbAbsmax(checkpoint, layer, prefix, state, blocks));
  leg.weight.resize(static_cast<size_t>(n));
  for (int64_t f = 0; f < n; ++f) {
    const auto byte = static_cast<unsigned>(packed->bytes[static_cast<size_t>(f / 2)]);
    const unsigned code = f % 2 == 0 ? byte >> 4 : byte & 0xF;
    leg.weight[f] = map[code] * static_cast<double>(absmax[f / state.blocksize]);
  }
  return leg;
}

Result<ReferenceLeg> DequantizeBnb8Leg(const Checkpoint& checkpoint, const QuantScheme&,
                                       std::string_view layer, const std::string& prefix) {
  QP_ASSIGN_OR_RETURN(ReferenceLeg leg,
                      reference::ReadInt8Weight(checkpoint, layer, prefix + ".weight"));
  TensorInfo info;
  QP_ASSIGN_OR_RETURN(std::vector<double> scb,
                      reference::ReadDoubles(checkpoint, layer, prefix + ".SCB", &info));
  if (static_cast<int64_t>(scb.size()) != leg.rows) {
    return InvalidInput(fmt::format("{}: tensor {} has {} values for {} rows", layer, info.name,
                                    scb.size(), leg.rows));
  }
  const double inv127 = ToFloat(1.0 / 127.0);
  for (int64_t r = 0; r < leg.rows; ++r) {
    for (int64_t c = 0; c < leg.cols; ++c) {
      double& w = leg.weight[r * leg.cols + c];
      w = ToFloat(ToFloat(w * scb[r]) * inv127);
    }
  }
  return leg;
}

const ReferenceRegistrar kRegister4(SourceLayout::kBnb4bit, &DequantizeBnb4Leg);
const ReferenceRegistrar kRegister8(SourceLayout::kBnb8bit, &DequantizeBnb8Leg);

}  // namespace
}  // namespace quantpath
