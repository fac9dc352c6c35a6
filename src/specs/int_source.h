// The checkpoint source layouts of the integer specs: each layout's file (int_source_gptq.cc,
// int_source_awq.cc, int_source_ct.cc) registers a decoder that reads one leg into unpacked codes,
// zero points and scales in [rows, groups] order; IntSpec repacks them into the canonical layout
// (int_family.h). Decoders check every tensor's dtype and shape and name tensor and layer.
// Non-goals: the fp64 reference (src/specs/reference/int_*.cc decodes the same files apart).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/specs.h"

namespace quantpath::specs_internal {

// What a decoder is asked for: one leg of `rows` × `cols` (the whole leg, not a rank's slice).
struct IntSourceRequest {
  std::string_view layer;
  std::string prefix;  // the leg's module prefix
  SourceLayout layout;
  int bits = 4;
  int64_t group = 0;        // elements per scale along K (cols for channel and tensor keys)
  bool tensor = false;      // one scale for the leg
  bool zero_point = false;  // asymmetric: the canonical layout keeps zero points
  bool act_order = false;   // read g_idx
  // false: only the zero points and g_idx (and compressed-tensors' weight_shape), for `check`,
  // which reads the scales itself.
  bool weights = true;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t groups() const { return (cols + group - 1) / group; }
  // The leg as the layout's shape rules (SourceTensor::rule) see it.
  SourceLeg leg() const;
};

// One leg, unpacked. Codes and zero points are unsigned b-bit values with W = (q − z) · s.
struct IntLegCodes {
  std::vector<uint8_t> codes;  // [rows, cols]
  // [rows, groups]; the source's zero points where it stores them even for symmetric schemes
  // (GPTQ, AWQ), empty where it stores none (compressed-tensors symmetric).
  std::vector<uint8_t> zeros;
  std::string zeros_tensor;   // the tensor the zero points came from, for messages
  std::vector<float> scales;  // [rows, groups], or one value for tensor keys
  StDtype scale_dtype = StDtype::kF16;
  std::string scales_tensor;
  std::vector<int32_t> g_idx;  // [cols] when act_order
  std::string g_idx_tensor;
};

using IntSourceFn = Result<IntLegCodes> (*)(const Checkpoint& checkpoint,
                                            const IntSourceRequest& request);

// Registers the decoder of one source layout from its own file.
struct IntSourceRegistrar {
  IntSourceRegistrar(SourceLayout layout, IntSourceFn decode);
};
// The decoder of `layout`; Unsupported naming the layout and the layer when there is none.
Result<IntSourceFn> FindIntSource(SourceLayout layout, std::string_view layer);

// What the loader holds a decoded leg's values to: a symmetric scheme's stored zero points are
// 2^(b-1) (the key drops them), and with act-order g_idx maps whole groups (every group exactly g
// columns, the last the remainder). Errors name the tensor, the layer and the first bad index.
Status CheckZeroPoints(const IntLegCodes& leg, const IntSourceRequest& request);
Status CheckGroupMap(const IntLegCodes& leg, const IntSourceRequest& request);

// Reads the `slot` tensor of the request's layout as int32 words, of the dtype and shape the
// layout's rule gives the leg (source_layouts.cc).
Result<std::vector<uint32_t>> ReadInt32Words(const Checkpoint& checkpoint,
                                             const IntSourceRequest& request, Slot slot,
                                             std::string* name);
// Reads the `slot` tensor as finite scales of the dtype and shape the layout's rule gives.
Result<std::vector<float>> ReadIntScales(const Checkpoint& checkpoint,
                                         const IntSourceRequest& request, Slot slot,
                                         IntLegCodes* leg);
// The dimensions a source layout packs into int32 words, which a tensor-parallel slice must cut
// on a word boundary: K (GPTQ qweight, compressed-tensors weight_packed), N (AWQ qweight and
// qzeros, GPTQ qzeros, compressed-tensors asymmetric weight_zero_point).
struct IntPackedDims {
  bool k = false;
  bool n = false;
};
IntPackedDims PackedDimsOf(SourceLayout layout, bool zero_point);

// Code i of a little-endian bit stream of 32-bit words, `stride` words apart (a column of a
// row-major matrix has stride = its width): bits [i·b, i·b + b) of the stream.
uint32_t StreamCode(const uint32_t* words, int64_t stride, int64_t i, int bits);
// Sets code i of such a stream, whose bits there must be zero (the writers' counterpart).
void PutStreamCode(uint32_t* words, int64_t stride, int64_t i, int bits, uint32_t code);

}  // namespace quantpath::specs_internal
