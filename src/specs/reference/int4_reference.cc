// Reference of ModelSlim's int4 weights, written from SGLang's reading of them (ModelSlimW4A4Int4
// and the W4A8 schemes, their NPU methods) rather than from the spec:
//   packing old: `weight` I8 [N, K], one signed code in [−8, 7] per byte;
//   packing new: `weight` I8 [N / 2, K], byte [j][k] = (w[2j][k] & 0xF) | (w[2j + 1][k] << 4)
//                (SGLang's _pack_int4 along N), nibbles read as two's complement;
//   W[n][k] = (w[n][k] − weight_offset[n]) · weight_scale[n], both [N, 1] in the model dtype.
// And int4 per-token activations: absmax / 7, rounded to nearest even, clamped to [−8, 7].
#include "src/specs/reference/int4_reference.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "src/specs/reference/reference_io.h"

namespace quantpath::reference {
namespace {

double F32(double v) { return static_cast<double>(static_cast<float>(v)); }

}  // namespace

Result<ReferenceLeg> DequantizeModelSlimInt4Leg(const Checkpoint& checkpoint,
                                                const QuantScheme& scheme, std::string_view layer,
                                                const std::string& prefix) {
  const bool pairs = scheme.weight.load.int4_pairs;
  const std::string name = prefix + ".weight";
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok()) return view.status().WithContext(layer);
  const TensorInfo& info = *view->info;
  if (info.dtype != StDtype::kI8 || info.shape.size() != 2) {
    return InvalidInput(fmt::format("{}: tensor {} is {} with {} dimensions, expected an I8 matrix",
                                    layer, name, StDtypeName(info.dtype), info.shape.size()));
  }
  ReferenceLeg leg{pairs ? 2 * info.shape[0] : info.shape[0], info.shape[1], {}};
  leg.weight.resize(static_cast<size_t>(leg.rows * leg.cols));
  const auto* bytes = reinterpret_cast<const int8_t*>(view->bytes.data());
  for (int64_t r = 0; r < leg.rows; ++r) {
    for (int64_t c = 0; c < leg.cols; ++c) {
      int code = 0;
      if (pairs) {
        const auto byte = static_cast<uint8_t>(bytes[(r / 2) * leg.cols + c]);
        const int nibble = r % 2 == 0 ? byte & 0x0F : byte >> 4;
        code = nibble >= 8 ? nibble - 16 : nibble;  // two's complement in 4 bits
      } else {
        code = bytes[r * leg.cols + c];
        if (code < -8 || code > 7) {
          return InvalidInput(fmt::format("{}: tensor {} holds {} at [{}, {}], not an int4 code",
                                          layer, name, code, r, c));
        }
      }
      leg.weight[r * leg.cols + c] = code;
    }
  }
  TensorInfo scale_info;
  QP_ASSIGN_OR_RETURN(std::vector<double> s,
                      ReadDoubles(checkpoint, layer, prefix + ".weight_scale", &scale_info));
  std::vector<double> offset(s.size(), 0.0);
  if (checkpoint.Has(prefix + ".weight_offset")) {
    TensorInfo offset_info;
    QP_ASSIGN_OR_RETURN(offset,
                        ReadDoubles(checkpoint, layer, prefix + ".weight_offset", &offset_info));
  }
  QP_RETURN_IF_ERROR(reference::ApplyRowScaleAndOffset(layer, prefix, s, offset, &leg));
  return leg;
}

std::vector<double> QuantizeInt4Reference(std::span<const double> x, int64_t m, int64_t k) {
  std::vector<double> out(x.begin(), x.end());
  for (int64_t r = 0; r < m; ++r) {
    double* row = out.data() + r * k;
    double absmax = 0;
    for (int64_t c = 0; c < k; ++c) absmax = std::max(absmax, std::fabs(F32(row[c])));
    absmax = std::max(F32(absmax), F32(kActAbsMaxFloor));
    const double s = F32(absmax / 7);
    const double inv = F32(7 / absmax);
    for (int64_t c = 0; c < k; ++c) {
      const double q = std::nearbyint(F32(F32(row[c]) * inv));
      row[c] = (std::isnan(q) ? 0.0 : std::clamp(q, -8.0, 7.0)) * s;
    }
  }
  return out;
}

}  // namespace quantpath::reference
