// GPTQ source layouts (AutoGPTQ / GPTQModel / AutoRound's gptq export), v1 and v2, per leg
// `<prefix>`, for a [N, K] weight with b-bit codes and G = ceil(K / g) groups:
//   qweight  I32 [ceil(K·b / 32), N]: column n is a little-endian bit stream along K, code k at
//            bits [k·b, k·b + b) (4 and 8 bits: 32 / b codes per word; 3 bits: 32 codes in three
//            words, codes 10 and 21 crossing a word boundary).
//   qzeros   I32 [G, ceil(N·b / 32)]: row i a bit stream along N, zero point of column n at
//            bits [n·b, n·b + b). v1 stores z − 1 (z = (stored + 1) mod 2^b, as AutoGPTQ's own
//            dequantization does); v2 stores z.
//   scales   [G, N] (F16 as written; BF16 / F32 accepted).
//   g_idx    I32 [K], the group of each input column; read only with act-order (desc_act), as
//            vLLM does: without it the groups are k / g whatever g_idx holds.
//   W[n][k] = (q[k][n] − z[g_idx[k]][n]) · s[g_idx[k]][n].
#include "fmt/format.h"
#include "src/specs/int_source.h"

namespace quantpath::specs_internal {
namespace {

int64_t Words(int64_t count, int bits) { return (count * bits + 31) / 32; }

Result<IntLegCodes> DecodeGptq(const Checkpoint& checkpoint, const IntSourceRequest& r) {
  const int64_t n = r.rows;
  const int64_t k = r.cols;
  const int64_t groups = r.groups();
  IntLegCodes leg;
  if (r.weights) {
    std::string name;
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> qweight,
                        ReadInt32Words(checkpoint, r, Slot::kWeight, &name));
    leg.codes.resize(static_cast<size_t>(n * k));
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t c = 0; c < k; ++c) {
        leg.codes[col * k + c] =
            static_cast<uint8_t>(StreamCode(qweight.data() + col, n, c, r.bits));
      }
    }
  }
  const int64_t zero_words = Words(n, r.bits);
  QP_ASSIGN_OR_RETURN(std::vector<uint32_t> qzeros,
                      ReadInt32Words(checkpoint, r, Slot::kWeightZero, &leg.zeros_tensor));
  const uint32_t mask = (1u << r.bits) - 1;
  const uint32_t add = r.layout == SourceLayout::kGptqV1 ? 1 : 0;  // v1 stores z − 1
  leg.zeros.resize(static_cast<size_t>(n * groups));
  for (int64_t i = 0; i < groups; ++i) {
    for (int64_t col = 0; col < n; ++col) {
      const uint32_t stored = StreamCode(qzeros.data() + i * zero_words, 1, col, r.bits);
      leg.zeros[col * groups + i] = static_cast<uint8_t>((stored + add) & mask);
    }
  }
  if (r.weights) {
    QP_ASSIGN_OR_RETURN(std::vector<float> scales,
                        ReadIntScales(checkpoint, r, Slot::kWeightScale, &leg));
    leg.scales.resize(scales.size());
    for (int64_t i = 0; i < groups; ++i) {
      for (int64_t col = 0; col < n; ++col) leg.scales[col * groups + i] = scales[i * n + col];
    }
  }
  if (r.act_order) {
    QP_ASSIGN_OR_RETURN(std::vector<uint32_t> g_idx,
                        ReadInt32Words(checkpoint, r, Slot::kGIdx, &leg.g_idx_tensor));
    leg.g_idx.assign(g_idx.begin(), g_idx.end());
  }
  return leg;
}

const IntSourceRegistrar kRegisterV1(SourceLayout::kGptqV1, &DecodeGptq);
const IntSourceRegistrar kRegisterV2(SourceLayout::kGptqV2, &DecodeGptq);

}  // namespace
}  // namespace quantpath::specs_internal
