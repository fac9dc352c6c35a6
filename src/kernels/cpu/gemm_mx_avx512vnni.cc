// The OCP microscaling specs (mx_family.h) on the AVX-512 BF16 GEMM (bf16_dot_avx512vnni.h),
// weight-only and with MX activations:
//   GemmMxfp4_Avx512Bf16  mxfp4_block_32: E2M1 codes as bf16 values (e2m1_quads_avx512vnni.h), a
//                         run a step of 128 columns, 4 blocks: lane i of its sum holds columns
//                         8i … 8i + 7, scaled by block i / 4's power of two
//   GemmMxfp8_Avx512Bf16  mxfp8_block_32: E4M3 codes as bf16 values (fp8_bf16_avx512vnni.h), a run
//                         a step of 32 columns, one block
// An E8M0 scale e is 2^(e − 127): the fp32 with exponent field e, and 2^-127 (the subnormal
// 0x00400000) for e = 0.
#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/numeric.h"
#include "src/kernels/cpu/bf16_dot_avx512vnni.h"
#include "src/kernels/cpu/e2m1_quads_avx512vnni.h"
#include "src/kernels/cpu/fp8_bf16_avx512vnni.h"
#include "src/kernels/cpu_problems.h"
#include "src/specs/mx_family.h"

namespace quantpath {
namespace {

constexpr int32_t kE8M0Zero = 0x00400000;  // 2^-127

inline float E8M0Scale(uint8_t e) {
  return std::bit_cast<float>(e == 0 ? kE8M0Zero : static_cast<int32_t>(e) << 23);
}

// The layout (mx_family.h) for the columns past the last full step.
struct MxCodes {
  const uint8_t* codes;
  int64_t row_bytes;
  const uint8_t* scales;  // [N, K / 32] E8M0
  int64_t scale_cols;

  static MxCodes Of(const LinearParams& params) {
    const ParamTensor& w = params.tensor(Slot::kWeight);
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    return {w.data<uint8_t>(), w.row_bytes(), s.data<uint8_t>(), s.cols()};
  }
  float BlockScale(int64_t row, int64_t col) const {
    return E8M0Scale(scales[row * scale_cols + col / kMxGroup]);
  }
};

struct Mxfp4Quads : MxCodes {
  int64_t group = avx512vnni::kE2M1Step;
  static constexpr bool kZeros = false;
  static constexpr bool kLaneScales = true;
  static constexpr int64_t kStep = avx512vnni::kE2M1Step;
  static constexpr int64_t kStepBytes = avx512vnni::kE2M1StepBytes;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNibbleQuads;

  void Load(const uint8_t* p, __m512i out[4]) const { avx512vnni::LoadE2M1Quads(p, out); }
  // e2m1 × 2^(e − 127) is a normal bf16 value for e ≥ 2: the tiled GEMM multiplies them where
  // every scale is.
  bool folds = false;
  // Lane i: block 4g + i / 4 of the row.
  __m512 Scale(int64_t row, int64_t g) const { return BlockScales(row, g); }
  float RowScale(int64_t) const { return 1.0f; }
  __m512 BlockScales(int64_t row, int64_t g) const {
    int32_t four;
    std::memcpy(&four, scales + row * scale_cols + g * kStep / kMxGroup, sizeof four);
    const __m128i spread = _mm_shuffle_epi8(
        _mm_cvtsi32_si128(four), _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    const __m512i e = _mm512_cvtepu8_epi32(spread);
    const __m512i bits = _mm512_mask_mov_epi32(
        _mm512_slli_epi32(e, 23), _mm512_testn_epi32_mask(e, e), _mm512_set1_epi32(kE8M0Zero));
    return _mm512_castsi512_ps(bits);
  }
  void PrefetchScales(int64_t row, int64_t step) const {
    avx512vnni::PrefetchScaleLine(scales + row * scale_cols, step, kStep / kMxGroup);
  }
  bool ScalesFold(const LinearParams& params) const {
    const ParamTensor& s = params.tensor(Slot::kWeightScale);
    const uint8_t* bytes = s.data<uint8_t>();
    return std::all_of(bytes, bytes + s.elements(), [](uint8_t e) { return e >= 2; });
  }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return E2M1ToFloat(avx512vnni::E2M1Code(codes + row * row_bytes, col)) * BlockScale(row, col);
  }
};

struct Mxfp8Steps : MxCodes {
  int64_t group = kMxGroup;
  static constexpr bool kZeros = false;
  static constexpr int64_t kStep = kMxGroup;
  static constexpr int64_t kStepBytes = kMxGroup;
  static constexpr cpu::XOrder kXOrder = cpu::XOrder::kNatural;

  void Load(const uint8_t* p, __m512i out[1]) const {
    out[0] = avx512vnni::Fp8ToBf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  float Scale(int64_t row, int64_t g) const { return E8M0Scale(scales[row * scale_cols + g]); }
  float Zero(int64_t, int64_t) const { return 0.0f; }
  float Load1(int64_t row, int64_t col) const {
    return Fp8E4M3ToFloat(codes[row * row_bytes + col]) * BlockScale(row, col);
  }
};

template <typename Source>
class GemmMxAvx512Bf16 final : public LinearKernel {
 public:
  GemmMxAvx512Bf16(std::string_view name, SpecFamily family) : name_(name), family_(family) {}
  std::string_view name() const override { return name_; }
  CpuFeatures features() const override { return CpuLevelRequires(CpuLevel::kAvx512Vnni); }
  int priority() const override { return kReferencePriority + 20; }
  DotUnit unit() const override { return DotUnit::kBf16Pair; }
  bool Serves(const SpecKey& key, const DeviceCaps& device) const override {
    return key.family == family_ && device.is_cpu();
  }
  bool CanHandle(const KernelProbe& probe) const override {
    return Serves(probe.spec, probe.device) && probe.spec.group == kMxGroup &&
           cpu_problems::TakesMx(probe);
  }
  void Prepare(const LinearParams& params) const override {
    avx512vnni::Packed<Source>(this, params);
  }
  void Apply(const LinearParams& params, const ActivationQuant& act, const ConstMatrix& x,
             const MutableMatrix& y) const override {
    const std::vector<float> xs = reference::PrepareActivations(params, act, x);
    Source w{MxCodes::Of(params)};
    if constexpr (requires { w.folds; }) w.folds = w.ScalesFold(params);
    avx512vnni::Gemm(w, avx512vnni::Packed<Source>(this, params), params, xs, x.rows, y);
  }

 private:
  std::string_view name_;
  SpecFamily family_;
};

const KernelRegistrar kRegisterGemmMxfp4Avx512Bf16(
    std::make_unique<GemmMxAvx512Bf16<Mxfp4Quads>>("GemmMxfp4_Avx512Bf16", kMxfp4Family));
const KernelRegistrar kRegisterGemmMxfp8Avx512Bf16(
    std::make_unique<GemmMxAvx512Bf16<Mxfp8Steps>>("GemmMxfp8_Avx512Bf16", kMxfp8Family));

}  // namespace
}  // namespace quantpath
