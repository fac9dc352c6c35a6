// quantpath export: writing model folders the engines load — `quantize` (round to nearest from a
// bf16 / fp16 / fp32 checkpoint) and `convert` (the same layers in another format's layout, or
// dequantized to bf16).
//
// Goals: streamed (tensor by tensor, a layer at a time per thread: memory bounded by the largest
// layers, not the model), multi-threaded, a complete folder (config.json with the format's
// quantization_config, sharded safetensors with an index, the input's other files), written into
// a temporary sibling folder renamed at the end; the input is never modified. Quantization uses
// the quantizers of quantizing at load (src/specs/online/), so `quantize` writes exactly what
// `load --online` would hold. Non-goals: calibration (GPTQ, AWQ, static activation scales),
// downloading.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"

namespace quantpath {

// The formats a folder is written in.
enum class CheckpointFormat : uint8_t {
  kCompressedTensors,  // quant_method "compressed-tensors" (llmcompressor's layout)
  kNativeFp8,          // quant_method "fp8" (DeepSeek-V3's `weight_scale_inv` blocks)
  kModelOpt,           // quant_method "modelopt" with hf_quant_config.json (NVIDIA ModelOpt's)
  kBf16,               // no quantization_config: every layer dequantized to bf16
};
std::string_view CheckpointFormatName(CheckpointFormat format);  // "compressed-tensors", …
std::vector<std::string> CheckpointFormatNames();
// An unknown name is an error listing the names.
Result<CheckpointFormat> ParseCheckpointFormat(std::string_view name);

struct ExportProgress {
  int64_t tensors_done = 0;  // output tensors written
  int64_t tensors_total = 0;
  int64_t bytes_done = 0;  // output bytes written
  int64_t bytes_total = 0;
};
using ExportProgressFn = std::function<void(const ExportProgress&)>;

struct ExportOptions {
  bool force = false;  // replace an existing output folder (never the input, nor one holding it)
  int threads = 0;     // layers produced at once; 0: the OpenMP default
  // The largest shard, as transformers' save_pretrained splits (a tensor larger than this has a
  // shard of its own); one shard is written as `model.safetensors` without an index.
  int64_t max_shard_bytes = int64_t{5} * 1000 * 1000 * 1000;
  ExportProgressFn progress;  // after every tensor written; may be empty
};

struct QuantizeOptions : ExportOptions {
  std::string scheme;  // a target's name: OnlineTargets() (specs.h)
  // Default: compressed-tensors, which writes every scheme.
  std::optional<CheckpointFormat> format;
  // More layers to leave unquantized, as compressed-tensors' `ignore` reads them: a module name,
  // or "re:" and a Python regex matched from the name's start. Written into the config's list.
  std::vector<std::string> ignore;
};

struct ConvertOptions : ExportOptions {
  CheckpointFormat to = CheckpointFormat::kBf16;
  // Write a layer whose stored values the target cannot hold as they are, changed as the engines
  // read them (each such case is named in the report's notes); without it, such a layer is an
  // error saying why.
  bool lossy = false;
};

// What was written.
struct ExportReport {
  std::string out_dir;
  std::string format;          // CheckpointFormatName
  std::string scheme;          // what the quantized layers store ("" for bf16)
  int64_t layers_written = 0;  // quantized, re-laid or dequantized layers (experts counted once)
  int64_t tensors_in = 0;      // checkpoint tensors read
  int64_t tensors_out = 0;
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;           // every file written, headers, config and copies included
  std::vector<std::string> files;  // the folder's files, sorted
  std::vector<std::string> notes;  // what a user must know about the output
  double seconds = 0;
  double gb_per_s = 0;  // (bytes_in + bytes_out) / seconds / 1e9
};

// Quantizes every linear layer and MoE expert of the checkpoint in `in_dir` (a folder, a Hugging
// Face cache folder or repo id: ResolveModelDir) to `options.scheme`, and writes the folder
// `out_dir`. The LM head, embeddings, routers, norms and the layers `ignore` names are copied as
// stored. Errors (nothing is then left at `out_dir`): an input that is already quantized, a
// scheme no quantizer writes or the format cannot express, an `ignore` that splits a fused
// layer, a non-finite weight (naming the tensor and the layer), an existing `out_dir` without
// `force`, an `out_dir` that is the input or inside it, a failed write.
Result<ExportReport> QuantizeCheckpoint(const std::string& in_dir, const std::string& out_dir,
                                        const QuantizeOptions& options);

// Writes the checkpoint in `in_dir` as `options.to`: bf16 dequantizes every quantized layer
// (through the double-precision reference, rounded to nearest even); compressed-tensors and
// native-fp8 re-lay out fp8 block checkpoints between the two, keeping every code and scale.
// A conversion this build does not make is kUnsupported naming the layer's format and scheme.
// Errors and folder rules as QuantizeCheckpoint.
Result<ExportReport> ConvertCheckpoint(const std::string& in_dir, const std::string& out_dir,
                                       const ConvertOptions& options);

}  // namespace quantpath
