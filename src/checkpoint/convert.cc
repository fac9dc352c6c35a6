// Copying and decoding tensor bytes. safetensors aligns nothing (a tensor starts wherever the
// previous one ended, after a header of any length), so every multi-byte value is read with
// memcpy, never through a cast pointer.
#include <bit>
#include <cstring>

#include "fmt/format.h"
#include "quantpath/checkpoint.h"
#include "quantpath/numeric.h"

namespace quantpath {

// safetensors stores little-endian values; copying bytes into T is only right on such a host.
static_assert(std::endian::native == std::endian::little, "quantpath assumes a little-endian host");

namespace {

Status ViewError(const TensorView& view, std::string_view message) {
  return InvalidInput(fmt::format("{}: tensor \"{}\": {}", view.file,
                                  view.info != nullptr ? view.info->name : "?", message));
}

// The element count of a view whose bytes agree with its dtype and shape, or an error. Views from
// SafetensorsFile always agree; a hand-made one may not, and must not lead to reading past it.
Result<int64_t> CheckedElements(const TensorView& view) {
  if (view.info == nullptr) return ViewError(view, "the view has no tensor description");
  int64_t elements = view.info->Elements();
  std::optional<uint64_t> bytes = StDtypeByteLength(view.info->dtype, elements);
  if (!bytes || *bytes != view.bytes.size()) {
    return ViewError(view, fmt::format("{} bytes do not hold dtype {} × {} elements",
                                       view.bytes.size(), StDtypeName(view.info->dtype), elements));
  }
  return elements;
}

template <typename Raw>
Raw Load(const std::byte* p) {
  Raw value;
  std::memcpy(&value, p, sizeof(Raw));
  return value;
}

// Decodes `elements` values of type Raw, each through `decode`.
template <typename Raw, typename Decode>
std::vector<float> DecodeEach(const TensorView& view, int64_t elements, Decode decode) {
  std::vector<float> out(static_cast<size_t>(elements));
  const std::byte* p = view.bytes.data();
  for (size_t i = 0; i < out.size(); ++i) out[i] = decode(Load<Raw>(p + i * sizeof(Raw)));
  return out;
}

}  // namespace

template <typename T>
Result<std::vector<T>> CopyTensor(const TensorView& view) {
  QP_ASSIGN_OR_RETURN(int64_t elements, CheckedElements(view));
  if (view.bytes.size() != static_cast<uint64_t>(elements) * sizeof(T)) {
    return ViewError(
        view, fmt::format("dtype {} is {} bits per element, not the {} bytes of the "
                          "requested type",
                          StDtypeName(view.info->dtype), StDtypeBits(view.info->dtype), sizeof(T)));
  }
  std::vector<T> out(static_cast<size_t>(elements));
  if (!out.empty()) std::memcpy(out.data(), view.bytes.data(), view.bytes.size());
  return out;
}

template Result<std::vector<int8_t>> CopyTensor(const TensorView&);
template Result<std::vector<uint8_t>> CopyTensor(const TensorView&);
template Result<std::vector<int16_t>> CopyTensor(const TensorView&);
template Result<std::vector<uint16_t>> CopyTensor(const TensorView&);
template Result<std::vector<int32_t>> CopyTensor(const TensorView&);
template Result<std::vector<uint32_t>> CopyTensor(const TensorView&);
template Result<std::vector<int64_t>> CopyTensor(const TensorView&);
template Result<std::vector<uint64_t>> CopyTensor(const TensorView&);
template Result<std::vector<float>> CopyTensor(const TensorView&);
template Result<std::vector<double>> CopyTensor(const TensorView&);

Result<std::vector<float>> TensorToFloat(const TensorView& view) {
  QP_ASSIGN_OR_RETURN(int64_t elements, CheckedElements(view));
  switch (view.info->dtype) {
    case StDtype::kF32:
      return CopyTensor<float>(view);
    case StDtype::kF64:
      // Rounds to the nearest float32 (and out-of-range values to ±infinity).
      return DecodeEach<double>(view, elements, [](double v) { return static_cast<float>(v); });
    case StDtype::kF16:
      return DecodeEach<uint16_t>(view, elements, Fp16ToFloat);
    case StDtype::kBF16:
      return DecodeEach<uint16_t>(view, elements, Bf16ToFloat);
    case StDtype::kF8E4M3:
      return DecodeEach<uint8_t>(view, elements, Fp8E4M3ToFloat);
    case StDtype::kF8E5M2:
      return DecodeEach<uint8_t>(view, elements, Fp8E5M2ToFloat);
    case StDtype::kF8E8M0:
      return DecodeEach<uint8_t>(view, elements, E8M0ToFloat);
    case StDtype::kF4: {
      // Two E2M1 values per byte: element 2i in the low nibble of byte i, 2i + 1 in the high one.
      std::vector<float> out(static_cast<size_t>(elements));
      for (size_t i = 0; i < out.size(); ++i) {
        uint8_t byte = static_cast<uint8_t>(view.bytes[i / 2]);
        out[i] = E2M1ToFloat(static_cast<uint8_t>(i % 2 == 0 ? byte & 0xF : byte >> 4));
      }
      return out;
    }
    default:
      return Unsupported(fmt::format("{}: tensor \"{}\": TensorToFloat does not decode dtype {}",
                                     view.file, view.info->name, StDtypeName(view.info->dtype)));
  }
}

}  // namespace quantpath
