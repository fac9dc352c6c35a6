// Reference entry of gpt-oss's MXFP4 experts, written from the published layout (transformers'
// integrations/mxfp4.py, convert_moe_packed_tensors; vLLM's gpt_oss.py weight loader), not from
// the spec:
//   `<prefix>_blocks` U8 [E, R, G, 16] and `<prefix>_scales` U8 [E, R, G], G = K / 32: byte b of
//   block g of row r holds element 32g + 2b in its low nibble and 32g + 2b + 1 in its high one
//   (E2M1), and W[e][r][c] = e2m1 · 2^(scales[e][r][c / 32] − 127); a scale byte of 0xFF (E8M0
//   NaN) is an error.
// One expert's projection is its rows first_row, first_row + row_step, … of expert `expert`
// (gate_up_proj: gate 0::2, up 1::2), so R = row_step · the projection's rows.
#include <cmath>

#include "fmt/format.h"
#include "src/specs/mx_family.h"
#include "src/specs/reference/nvfp4_reference.h"

namespace quantpath {
namespace {

constexpr int64_t kBlockBytes = 16;  // 32 E2M1 values

Result<ReferenceLeg> DequantizeGptOssLeg(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                         std::string_view layer, const std::string& prefix,
                                         const StackedExpert& expert) {
  if (scheme.weight.dtype != QDType::kMXFP4) {
    return Unsupported(fmt::format("{}: gpt-oss experts store mxfp4 weights, not {}", layer,
                                   QDTypeName(scheme.weight.dtype)));
  }
  const std::string blocks_name = prefix + "_blocks";
  Result<TensorView> blocks = checkpoint.Get(blocks_name);
  if (!blocks.ok()) return blocks.status().WithContext(layer);
  const std::vector<int64_t>& shape = blocks->info->shape;
  if (blocks->info->dtype != StDtype::kU8 || shape.size() != 4 || shape[3] != kBlockBytes) {
    return InvalidInput(
        fmt::format("{}: tensor {} is not U8 [experts, rows, blocks, 16]", layer, blocks_name));
  }
  const int64_t experts = shape[0];
  const int64_t all_rows = shape[1];
  const int64_t groups = shape[2];
  if (expert.experts != experts || expert.expert < 0 || expert.expert >= experts ||
      expert.row_step < 1 || expert.first_row < 0 || expert.first_row >= expert.row_step ||
      all_rows % expert.row_step != 0) {
    return InvalidInput(
        fmt::format("{}: tensor {} of shape [{}, {}, {}, 16] has no expert {} of {}"
                    " with rows {}::{}",
                    layer, blocks_name, experts, all_rows, groups, expert.expert, expert.experts,
                    expert.first_row, expert.row_step));
  }
  const std::string scales_name = prefix + "_scales";
  Result<TensorView> scales = checkpoint.Get(scales_name);
  if (!scales.ok()) return scales.status().WithContext(layer);
  if (scales->info->dtype != StDtype::kU8 ||
      scales->info->shape != std::vector<int64_t>{experts, all_rows, groups}) {
    return InvalidInput(fmt::format("{}: tensor {} is not U8 [{}, {}, {}] of E8M0 scales", layer,
                                    scales_name, experts, all_rows, groups));
  }
  ReferenceLeg leg;
  leg.rows = all_rows / expert.row_step;
  leg.cols = groups * 2 * kBlockBytes;
  leg.weight.resize(static_cast<size_t>(leg.rows * leg.cols));
  for (int64_t r = 0; r < leg.rows; ++r) {
    const int64_t row = expert.expert * all_rows + expert.first_row + r * expert.row_step;
    for (int64_t c = 0; c < leg.cols; ++c) {
      const auto s = static_cast<unsigned>(scales->bytes[row * groups + c / 32]);
      if (s == kE8M0Nan) {
        return InvalidInput(
            fmt::format("{}: tensor {} holds an E8M0 NaN at expert {}, row {}, block {}", layer,
                        scales_name, expert.expert, row - expert.expert * all_rows, c / 32));
      }
      const auto byte = static_cast<unsigned>(blocks->bytes[row * groups * kBlockBytes + c / 2]);
      const double elem = reference::DecodeE2M1(c % 2 == 0 ? byte & 0xF : byte >> 4);
      leg.weight[r * leg.cols + c] = std::ldexp(elem, static_cast<int>(s) - kE8M0Bias);
    }
  }
  return leg;
}

const ReferenceRegistrar kRegister(SourceLayout::kGptOssMxfp4, &DequantizeGptOssLeg);

}  // namespace
}  // namespace quantpath
