// libFuzzer target: a safetensors file holding one small bitsandbytes layer `m` (4-bit: weight,
// weight.absmax, weight.quant_map, the nested tensors and the JSON quant_state; 8-bit: weight,
// SCB, weight_format) → read as NF4, FP4 and LLM.int8: allocate ([N, K] from the quant_state's
// shape, or from `m.weight` for int8; the block size from the quant_state), load, convert, one
// Forward on a fixed input, and the fp64 reference. The quant_state JSON and the headers are what
// the mutations reach. Nothing may crash; errors are fine.
// seeds: tests/fuzz/seeds/bnb_loader/*
#include <cstddef>
#include <cstdint>

#include "src/specs/bnb_quant_state.h"
#include "tests/fuzz/loader_fuzz.h"

namespace {

using namespace quantpath;

void Run4(const Checkpoint& checkpoint, QDType dtype) {
  Result<specs_internal::BnbQuantState> state =
      specs_internal::ReadBnbQuantState(checkpoint, "m", "m");
  if (!state.ok() || !fuzz::SmallShape(state->shape[0], state->shape[1])) return;
  QuantScheme scheme;
  scheme.weight.dtype = dtype;
  scheme.weight.granularity = Granularity::kGroup;
  scheme.weight.group_size = state->blocksize;
  scheme.weight.load.layout = SourceLayout::kBnb4bit;
  SpecKey key{SpecFamily(dtype == QDType::kNF4 ? "nf4_block" : "fp4_block")};
  key.group = state->blocksize;
  fuzz::RunLayer(checkpoint, scheme, key, {}, state->shape[0], state->shape[1]);
}

void Run8(const Checkpoint& checkpoint) {
  const auto shape = fuzz::MatrixShape(checkpoint, "m.weight");
  if (!shape || !fuzz::SmallShape((*shape)[0], (*shape)[1])) return;
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kINT8;
  scheme.weight.granularity = Granularity::kPerChannel;
  scheme.weight.load.layout = SourceLayout::kBnb8bit;
  fuzz::RunLayer(checkpoint, scheme, SpecKey{SpecFamily("int8_rowwise_bnb")}, {}, (*shape)[0],
                 (*shape)[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<Checkpoint> checkpoint = fuzz::OpenInput("bnb", data, size);
  if (!checkpoint.ok()) return 0;
  Run4(*checkpoint, QDType::kNF4);
  Run4(*checkpoint, QDType::kFP4);
  Run8(*checkpoint);
  return 0;
}
