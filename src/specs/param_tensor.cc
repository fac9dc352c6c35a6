// ParamTensor storage (packed rows for sub-byte dtypes) and the byte count of loaded parameters.
#include <cstring>
#include <new>

#include "quantpath/numeric.h"
#include "quantpath/specs.h"

namespace quantpath {

ParamTensor::ParamTensor(QDType dtype, int64_t rows, int64_t cols)
    : dtype_(dtype), rows_(rows), cols_(cols) {
  const size_t size = static_cast<size_t>(bytes());
  if (size == 0) return;
  // Like std::vector, an allocation failure throws std::bad_alloc.
  buffer_.reset(static_cast<std::byte*>(::operator new (size, std::align_val_t{kAlignment})));
  std::memset(buffer_.get(), 0, size);
}

int64_t ParamTensor::row_bytes() const { return (cols_ * Info(dtype_).bits + 7) / 8; }

float LoadFloat(const ParamTensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case QDType::kBF16:
      return Bf16ToFloat(tensor.data<uint16_t>()[i]);
    case QDType::kFP16:
      return Fp16ToFloat(tensor.data<uint16_t>()[i]);
    default:
      return tensor.data<float>()[i];
  }
}

int64_t LinearParams::WeightBytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < kSlotCount; ++i) {
    const Slot slot = static_cast<Slot>(i);
    // The static activation scale, offset and prescale belong to the activations, not the weight
    // storage.
    if (slot == Slot::kInputScale || slot == Slot::kInputOffset || slot == Slot::kPreQuantScale) {
      continue;
    }
    bytes += slots[i].bytes();
  }
  return bytes;
}

}  // namespace quantpath
