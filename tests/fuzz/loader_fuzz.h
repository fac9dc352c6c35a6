// What the loader fuzz targets share: the input written as a one-file checkpoint, and one layer
// `m` loaded through a given spec, converted, run once and dequantized by the fp64 reference in a
// given source layout (RunIntLayer for the integer weight-only layouts). Nothing may crash;
// errors are fine.
#pragma once

#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "quantpath/specs.h"

namespace quantpath::fuzz {

// A folder of this process under TMPDIR (run_target.sh points it into its own work folder).
inline std::filesystem::path Folder(const std::string& target) {
  static const std::filesystem::path dir = [&] {
    std::filesystem::path d = std::filesystem::temp_directory_path() /
                              ("quantpath_fuzz_" + target + "_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes the input as `dir`/model.safetensors.
inline void WriteCheckpoint(const std::filesystem::path& dir, const uint8_t* data, size_t size) {
  std::ofstream out(dir / "model.safetensors", std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// The input as the one-file checkpoint of the target's folder.
inline Result<Checkpoint> OpenInput(const std::string& target, const uint8_t* data, size_t size) {
  const std::filesystem::path dir = Folder(target);
  WriteCheckpoint(dir, data, size);
  return Checkpoint::Open(dir);
}

// The shape of the matrix `name`, or nullopt when it is absent or not 2-D.
inline std::optional<std::array<int64_t, 2>> MatrixShape(const Checkpoint& checkpoint,
                                                         const std::string& name) {
  if (!checkpoint.Has(name)) return std::nullopt;
  Result<TensorView> view = checkpoint.Get(name);
  if (!view.ok() || view->info->shape.size() != 2) return std::nullopt;
  return std::array<int64_t, 2>{view->info->shape[0], view->info->shape[1]};
}

// A fixed input [m, k] of small integers.
inline std::vector<float> FixedInput(int64_t m, int64_t k) {
  std::vector<float> x(static_cast<size_t>(m * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  return x;
}

// Small layers only: the seeds are [16, 128], and larger shapes only slow the search down.
inline bool SmallShape(int64_t n, int64_t k) { return n > 0 && k > 0 && n <= 512 && k <= 512; }

// Allocates [n, k] in `spec` (rank `tp_rank` of `tp_size`, split as `parallel` says), loads `m`
// from `checkpoint`, runs one Forward and the fp64 reference of `scheme`.
inline void RunSpec(const Checkpoint& checkpoint, const QuantScheme& scheme,
                    Result<std::unique_ptr<WeightSpec>> spec, int64_t n, int64_t k,
                    Parallel parallel = Parallel::kReplicated, int tp_size = 1, int tp_rank = 0) {
  if (!spec.ok()) return;
  AllocationRequest request;
  request.layer = "m";
  request.shape = {n, k};
  request.parallel = parallel;
  request.tp_size = tp_size;
  request.tp_rank = tp_rank;
  Result<std::shared_ptr<Dispatcher>> dispatcher = Dispatcher::Default();
  if (!dispatcher.ok()) return;
  Result<Linear> linear = LoadLinear(std::move(*spec), request, checkpoint, {"m"}, *dispatcher);
  (void)DequantizeReference(checkpoint, scheme, "m", {"m"}, false);
  if (!linear.ok()) return;
  (void)linear->Forward(FixedInput(2, linear->in_features()), 2);
}

// RunSpec in the spec of `key`.
inline void RunLayer(const Checkpoint& checkpoint, const QuantScheme& scheme, const SpecKey& key,
                     const ActivationQuant& act, int64_t n, int64_t k,
                     Parallel parallel = Parallel::kReplicated, int tp_size = 1, int tp_rank = 0) {
  RunSpec(checkpoint, scheme, MakeSpec(key, act, scheme.weight.load), n, k, parallel, tp_size,
          tp_rank);
}

// One way to read an int4 layer: the source layout and the scheme's facts.
struct IntMode {
  SourceLayout layout;
  ZeroPointConvention zero_point;
  int64_t group;  // 0: per channel
  bool symmetric;
  bool act_order;
};

// RunLayer for an int4 layer read as `mode` says.
inline void RunIntLayer(const Checkpoint& checkpoint, const IntMode& mode, int64_t n, int64_t k) {
  QuantScheme scheme;
  scheme.weight.dtype = QDType::kINT4;
  scheme.weight.granularity = mode.group > 0 ? Granularity::kGroup : Granularity::kPerChannel;
  if (mode.group > 0) scheme.weight.group_size = mode.group;
  scheme.weight.symmetric = mode.symmetric;
  scheme.weight.load.layout = mode.layout;
  scheme.weight.load.zero_point = mode.zero_point;
  scheme.weight.load.act_order = mode.act_order;
  SpecKey key{SpecFamily(mode.group > 0 ? "int_group" : "int_channel")};
  key.bits = 4;
  key.group = mode.group;
  key.zero_point = !mode.symmetric;
  key.act_order = mode.act_order;
  RunLayer(checkpoint, scheme, key, {}, n, k);
}

}  // namespace quantpath::fuzz
