// The safetensors dtypes: their names in headers and their sizes in bits, in one table.
#include <array>
#include <span>

#include "quantpath/checkpoint.h"

namespace quantpath {
namespace {

struct DtypeFacts {
  StDtype dtype;
  std::string_view name;  // as written in headers
  int bits;
};

// Indexed by StDtype; names and widths as in safetensors' `Dtype` and `Dtype::bitsize`.
constexpr std::array<DtypeFacts, 22> kDtypes = {{
    {StDtype::kBool, "BOOL", 8},
    {StDtype::kU8, "U8", 8},
    {StDtype::kI8, "I8", 8},
    {StDtype::kF8E5M2, "F8_E5M2", 8},
    {StDtype::kF8E4M3, "F8_E4M3", 8},
    {StDtype::kF8E8M0, "F8_E8M0", 8},
    {StDtype::kI16, "I16", 16},
    {StDtype::kU16, "U16", 16},
    {StDtype::kF16, "F16", 16},
    {StDtype::kBF16, "BF16", 16},
    {StDtype::kI32, "I32", 32},
    {StDtype::kU32, "U32", 32},
    {StDtype::kF32, "F32", 32},
    {StDtype::kF64, "F64", 64},
    {StDtype::kI64, "I64", 64},
    {StDtype::kU64, "U64", 64},
    {StDtype::kF4, "F4", 4},
    {StDtype::kF6E2M3, "F6_E2M3", 6},
    {StDtype::kF6E3M2, "F6_E3M2", 6},
    {StDtype::kC64, "C64", 64},
    {StDtype::kF8E4M3Fnuz, "F8_E4M3FNUZ", 8},
    {StDtype::kF8E5M2Fnuz, "F8_E5M2FNUZ", 8},
}};

constexpr bool IndexedByDtype() {
  for (size_t i = 0; i < kDtypes.size(); ++i) {
    if (static_cast<size_t>(kDtypes[i].dtype) != i) return false;
  }
  return static_cast<size_t>(StDtype::kF8E5M2Fnuz) + 1 == kDtypes.size();
}
static_assert(IndexedByDtype(), "kDtypes must list every StDtype, in enum order");

const DtypeFacts& Facts(StDtype dtype) { return kDtypes[static_cast<size_t>(dtype)]; }

}  // namespace

std::string_view StDtypeName(StDtype dtype) { return Facts(dtype).name; }

std::optional<StDtype> ParseStDtype(std::string_view name) {
  for (const DtypeFacts& facts : kDtypes) {
    if (facts.name == name) return facts.dtype;
  }
  return std::nullopt;
}

int StDtypeBits(StDtype dtype) { return Facts(dtype).bits; }

std::optional<uint64_t> StDtypeByteLength(StDtype dtype, int64_t elements) {
  if (elements < 0) return std::nullopt;
  uint64_t bits;
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements),
                             static_cast<uint64_t>(StDtypeBits(dtype)), &bits)) {
    return std::nullopt;
  }
  if (bits % 8 != 0) return std::nullopt;
  return bits / 8;
}

namespace {

// The product of `shape`; -1 when a dimension is negative or the product overflows (an
// unvalidated shape gets -1 rather than a wrapped count).
int64_t ElementsOf(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

}  // namespace

int64_t TensorInfo::Elements() const { return ElementsOf(shape); }

std::optional<uint64_t> TensorByteLength(const TensorHeader& tensor) {
  return StDtypeByteLength(tensor.dtype, ElementsOf(tensor.shape));
}

}  // namespace quantpath
