// bitsandbytes' serialized 4-bit quant state: the JSON blob that QuantState.as_dict(packed=True)
// stores as a U8 tensor `<prefix>.weight.quant_state.bitsandbytes__<nf4|fp4>`, and the nested
// (double-quantized) absmax it describes. Read by the nf4 / fp4 spec and by the reference.
//
// The blob is untrusted: it is parsed with the project's JSON limits, and, as QuantState.from_dict
// requires, holds only known keys: quant_type, blocksize, dtype, shape and, under double
// quantization, all of nested_blocksize, nested_dtype and nested_offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/specs.h"

namespace quantpath::specs_internal {

struct BnbQuantState {
  std::string quant_type;      // "nf4" or "fp4", as the tensor's name says
  int64_t blocksize = 0;       // values per absmax
  std::vector<int64_t> shape;  // the unpacked weight's shape ([N, K])
  bool nested = false;
  int64_t nested_blocksize = 0;  // absmax values per nested absmax
  float nested_offset = 0.0f;    // added to every dequantized absmax (fp32, as bitsandbytes)
};

// The quant state of the 4-bit weight under `prefix` (the module prefix, "…q_proj"): exactly one
// of the nf4 / fp4 state tensors must exist. Errors name the tensor and the layer.
Result<BnbQuantState> ReadBnbQuantState(const Checkpoint& checkpoint, std::string_view layer,
                                        const std::string& prefix);

// The per-block fp32 absmax of the weight under `prefix`, double quantization resolved
// (bnb_family.h): `blocks` values. Errors name the tensor and the layer.
Result<std::vector<float>> ReadBnbAbsmax(const Checkpoint& checkpoint, std::string_view layer,
                                         const std::string& prefix, const BnbQuantState& state,
                                         int64_t blocks);

}  // namespace quantpath::specs_internal
