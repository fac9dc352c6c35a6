// Reference kernel of the integer weight-only specs (int<b>_group_<g>[_zp][_actorder],
// int<b>_channel[_zp], int<b>_tensor), X and Y in fp32 or bf16, X kept in high precision
// (ActMode::kNone), products in fp32. Row n of W is dequantized from the canonical layout of
// int_family.h:
//   W[n][perm[j]] = (q[n][j] − z) · s, with s = S[n][gi] (group), S[n][0] (channel) or the
//   single scale (tensor), and z = Z[n][gi] (group _zp), Z[0][n] (channel _zp) or 2^(b-1);
//   gi = j / g, or with act-order the slot's group row (group[j]).
// Writing column j to perm[j] undoes the act-order sort, so X is used as it is.
// Non-goals: speed.
#include <cassert>

#include "quantpath/kernels.h"
#include "src/kernels/reference/reference_gemm.h"
#include "src/specs/int_family.h"

namespace quantpath {
namespace {

class GemmIntRef final : public LinearKernel {
 public:
  std::string_view name() const override { return "GemmIntW16_Ref"; }
  CpuFeatures features() const override { return {}; }
  int priority() const override { return kReferencePriority; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return IsIntFamily(key.family) && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.spec.bits >= 2 && probe.spec.bits <= 8 &&
           (probe.spec.family != kIntGroupFamily || probe.spec.group > 0) &&
           probe.act.mode == ActMode::kNone && reference::CanHandleIo(probe);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const SpecKey& key = params.key;
    const int bits = key.bits;
    const int64_t k = params.cols;
    const int64_t group = IntGroupOf(key, k);
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& scales = params.tensor(Slot::kWeightScale);
    const ParamTensor& zeros = params.tensor(Slot::kWeightZero);
    const ParamTensor& perm_slot = params.tensor(Slot::kGIdx);
    assert(w.rows() == params.rows && w.cols() == k);
    const int32_t* perm = perm_slot.empty() ? nullptr : perm_slot.data<int32_t>();
    const int32_t* group_of = perm ? perm + k : nullptr;  // the slot's second row
    const bool tensor = key.family == kIntTensorFamily;
    const int64_t scale_cols = scales.cols();
    const int implied_zero = 1 << (bits - 1);
    reference::GemmRowwise(params, act, x, y, [&](int64_t n, float* row) {
      const uint8_t* codes = w.data<uint8_t>() + n * w.row_bytes();
      for (int64_t j = 0; j < k; ++j) {
        const int64_t gi = group_of ? group_of[j] : j / group;
        const float s = LoadFloat(scales, tensor ? 0 : n * scale_cols + gi);
        int z = implied_zero;
        if (!zeros.empty()) {
          z = key.family == kIntGroupFamily
                  ? static_cast<int>(
                        ReadCode(zeros.data<uint8_t>() + n * zeros.row_bytes(), gi, bits))
                  : static_cast<int>(ReadCode(zeros.data<uint8_t>(), n, bits));
        }
        const int q = static_cast<int>(ReadCode(codes, j, bits));
        row[perm ? perm[j] : j] = static_cast<float>(q - z) * s;
      }
    });
  }
};

const KernelRegistrar kRegisterGemmIntRef(std::make_unique<GemmIntRef>());

}  // namespace
}  // namespace quantpath
