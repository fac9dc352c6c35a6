// compressed-tensors pack-quantized (compressed_tensors/compressors/pack_quantized, 0.19), per
// leg `<prefix>`, for a [N, K] weight with b-bit codes and G = ceil(K / g) groups:
//   weight_packed      I32 [N, ceil(K·b / 32)]: row n a dense little-endian bit stream, code k at
//                      bits [k·b, k·b + b), stored as the signed value + 2^(b-1).
//   weight_shape       I64 [2] = [N, K].
//   weight_scale       [N, G] (group), [N, 1] (channel), one value (tensor), in the model's dtype.
//   weight_zero_point  asymmetric only: I32 [ceil(N·b / 32), G], packed along dim 0 (column i a
//                      bit stream along N), also offset by 2^(b-1).
//   weight_g_idx       I32 [K], with actorder "group" only ("weight" changes calibration order).
//   W[n][k] = (q[n][k] − z[n][g_idx[k]]) · s[n][g_idx[k]]: both offsets cancel, so the unsigned
//   codes are the canonical ones, and a symmetric leg's z is 2^(b-1).
// Releases before the dense packing put 32 / b codes in each word; the two agree for 2, 4 and 8
// bits only, so other widths are refused rather than guessed.
#include <cstring>

#include "fmt/format.h"
#include "src/specs/int_source.h"
#include "src/specs/spec_common.h"

namespace quantpath::specs_internal {
namespace {

int64_t Words(int64_t count, int bits) { return (count * bits + 31) / 32; }

Status CheckWeightShape(const Checkpoint& checkpoint, const IntSourceRequest& r) {
  QP_ASSIGN_OR_RETURN(TensorView view, FindTensor(checkpoint, r.layer, r.prefix, ".weight_shape"));
  const StDtype dtype = view.info->dtype;
  if ((dtype != StDtype::kI64 && dtype != StDtype::kI32) || view.info->Elements() != 2) {
    return InvalidInput(fmt::format("{}: tensor {} is {} {}, expected two I64 values", r.layer,
                                    view.info->name, StDtypeName(dtype),
                                    ShapeString(view.info->shape)));
  }
  int64_t shape[2];
  for (int i = 0; i < 2; ++i) {
    if (dtype == StDtype::kI64) {
      std::memcpy(&shape[i], view.bytes.data() + 8 * i, 8);
    } else {
      int32_t v;
      std::memcpy(&v, view.bytes.data() + 4 * i, 4);
      shape[i] = v;
    }
  }
  if (shape[0] != r.rows || shape[1] != r.cols) {
    return InvalidInput(fmt::format("{}: tensor {} says [{}, {}], but the layer is [{}, {}]",
                                    r.layer, view.info->name, shape[0], shape[1], r.rows, r.cols));
  }
  return {};
}

Result<IntLegCodes> DecodeCtPacked(const Checkpoint& checkpoint, const IntSourceRequest& r) {
  if (r.bits != 2 && r.bits != 4 && r.bits != 8) {
    return Unsupported(fmt::format(
        "{}: compressed-tensors pack-quantized {}-bit weights are packed differently across "
        "releases (dense since 0.19, 32 / b per word before); only 2-, 4- and 8-bit load",
        r.layer, r.bits));
  }
  const int64_t n = r.rows;
  const int64_t k = r.cols;
  const int64_t groups = r.groups();
  QP_RETURN_IF_ERROR(CheckWeightShape(checkpoint, r));
  IntLegCodes leg;
  if (r.weights) {
    std::string name;
    const int64_t row_words = Words(k, r.bits);
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> packed,
                        ReadInt32Words(checkpoint, r, Slot::kWeight, &name));
    leg.codes.resize(static_cast<size_t>(n * k));
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t c = 0; c < k; ++c) {
        leg.codes[row * k + c] =
            static_cast<uint8_t>(StreamCode(packed.data() + row * row_words, 1, c, r.bits));
      }
    }
  }
  if (r.zero_point) {
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> zeros,
                        ReadInt32Words(checkpoint, r, Slot::kWeightZero, &leg.zeros_tensor));
    leg.zeros.resize(static_cast<size_t>(n * groups));
    for (int64_t i = 0; i < groups; ++i) {
      for (int64_t row = 0; row < n; ++row) {
        leg.zeros[row * groups + i] =
            static_cast<uint8_t>(StreamCode(zeros.data() + i, groups, row, r.bits));
      }
    }
  }
  if (r.weights) {
    QP_ASSIGN_OR_RETURN(leg.scales, ReadIntScales(checkpoint, r, Slot::kWeightScale, &leg));
  }
  if (r.act_order) {
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> g_idx,
                        ReadInt32Words(checkpoint, r, Slot::kGIdx, &leg.g_idx_tensor));
    leg.g_idx.assign(g_idx.begin(), g_idx.end());
  }
  return leg;
}

const IntSourceRegistrar kRegister(SourceLayout::kCtPackQuantized, &DecodeCtPacked);

}  // namespace
}  // namespace quantpath::specs_internal
