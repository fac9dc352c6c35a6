// quantpath bench: the machine's own limits, measured at run time, and a Linear kernel timed
// against them, one row per (spec, shape, M, threads).
//
// Goals: figures that compare across machines as ratios — weight bytes streamed per second as a
// share of the DRAM read bandwidth measured in the same process (decode), GFLOP/s as a share of
// the measured dot-product peak (prefill) — with the weights cold (distinct copies cycled, at least
// 4× the last-level cache read from the system, so every call streams from DRAM as a decode step
// does) or warm. Non-goals: peers (bench/bench_linear fills them), GPU kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/dot_units.h"
#include "quantpath/ir.h"
#include "quantpath/kernels.h"
#include "quantpath/linear.h"
#include "quantpath/moe.h"
#include "quantpath/specs.h"

namespace quantpath {

struct MachineLimits {
  int64_t llc_bytes = 0;  // the last-level cache (sysfs), or kAssumedLlcBytes where unreadable
  bool llc_known = false;
  int threads = 1;  // "all": OpenMP's default team size
  // DRAM read bandwidth, GB/s, on a buffer of 4× the last-level cache: 1 thread and all.
  double read_gbps_one = 0;
  double read_gbps_all = 0;
  // Dot-product peaks, 10^9 multiply-adds × 2 per second, 1 thread and all: fp32 FMA (where the
  // CPU has AVX2 and FMA), vdpbf16ps (AVX512-BF16) and vpdpbusd (AVX512-VNNI, GOP/s).
  std::optional<double> fma_gflops_one, fma_gflops_all;
  std::optional<double> bf16_dot_gflops_one, bf16_dot_gflops_all;
  std::optional<double> int8_dot_gops_one, int8_dot_gops_all;
  // vpmaddwd + vpaddd (AVX2), GOP/s: the int8 dot product of CPUs without VNNI.
  std::optional<double> int16_dot_gops_one, int16_dot_gops_all;
  // vpmaddubsw on 4-bit codes (AVX2), GOP/s: int4 weights with int8 activations.
  std::optional<double> int4_dot_gops_one, int4_dot_gops_all;

  // The dispatcher's unit table for this CPU (dot_units.h), and where the one-thread peaks
  // measured here disagree with it: "bf16-pair-512 / fp32-512: table 2.00, measured 1.02", each
  // ratio to the fp32 FMA's off by more than half.
  DotUnitPeaks unit_table;
  std::vector<std::string> unit_table_disagrees;

  double ReadGbps(int threads) const { return threads == 1 ? read_gbps_one : read_gbps_all; }
  // The peak of the unit a kernel multiplies on.
  std::optional<double> PeakGflops(DotUnit unit, int threads) const;
};
inline constexpr int64_t kAssumedLlcBytes = int64_t{32} << 20;

// DRAM read bandwidth, GB/s, on `threads` threads over a buffer of max(4 × `llc_bytes`, 64 MiB),
// the best of `passes`.
double MeasureReadGbps(int64_t llc_bytes, int threads, int passes);

// Measures this machine (a few seconds: each figure is the best of several passes).
MachineLimits MeasureMachine();
Json MachineLimitsJson(const MachineLimits& limits);

struct BenchRequest {
  std::string spec_id;  // "bf16", "fp8_block_128_128", …
  int64_t m = 1;
  int64_t n = 4096;
  int64_t k = 4096;
  int threads = 1;
  bool cold = true;
};

// One measurement, with exactly the keys `quantpath bench --json` prints (docs/json/bench.md);
// an absent optional is null.
struct BenchRow {
  std::string spec;
  int64_t m = 0, n = 0, k = 0;
  std::optional<int64_t> experts, top_k;
  int threads = 1;
  bool cold = true;
  std::string kernel;
  double seconds = 0;      // per call
  double weight_gbps = 0;  // the layer's weight bytes per second
  double bandwidth_gbps = 0;
  std::optional<double> pct_bandwidth;  // decode (M ≤ 16): weight_gbps / bandwidth_gbps
  double gflops = 0;                    // 2·M·N·K per second
  std::optional<double> peak_gflops;    // of the kernel's DotUnit
  std::optional<double> pct_peak;       // prefill (M ≥ 64): gflops / peak_gflops
  // The best unit's peak among the kernels that could run the row's problem on this CPU, the
  // roofline min(bandwidth_gbps · flops per weight byte, best_peak_gflops), and gflops' share of
  // it.
  std::optional<double> best_peak_gflops;
  double roofline_gflops = 0;
  double pct_roofline = 0;
  std::optional<std::string> peer;
  std::optional<double> peer_gflops, ratio_to_peer;
};
Json BenchRowJson(const BenchRow& row);

// How many distinct copies of a weight of `bytes` a cold measurement cycles: together at least 4×
// the last-level cache, and at least 2, so that each call finds its copy evicted by the others.
int64_t ColdCopies(int64_t bytes, int64_t llc_bytes);

// Synthetic parameters of a spec and shape (every float tensor 2^-6, every other byte
// pseudo-random), in enough copies to be cold (at least 4× the last-level cache together, cycled
// call after call) or one, made once for every M and thread count timed on them.
class BenchWeights {
 public:
  // `spec_id` is a spec id, or one with the activations' form after a colon: `:int8-token`,
  // `:fp8-token`, `:fp8-tensor` or `:fp8-group128` (dynamic per token, per tensor, per group of
  // 128); without one, the spec's own default. Errors: an unknown spec id or activation form, a
  // shape the spec cannot allocate.
  static Result<BenchWeights> Make(std::string_view spec_id, int64_t n, int64_t k, bool cold,
                                   const MachineLimits& limits);
  BenchWeights(BenchWeights&&) noexcept;
  BenchWeights& operator=(BenchWeights&&) noexcept;
  ~BenchWeights();

  const std::string& spec_id() const { return spec_id_; }
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  bool cold() const { return cold_; }
  int64_t weight_bytes() const { return weight_bytes_; }
  const WeightSpec& spec() const { return *spec_; }
  // The next copy in the cycle.
  const LinearParams& Next();
  const std::vector<LinearParams>& copies() const { return copies_; }

 private:
  BenchWeights() = default;
  std::string spec_id_;
  int64_t n_ = 0, k_ = 0;
  bool cold_ = true;
  int64_t weight_bytes_ = 0;
  std::unique_ptr<WeightSpec> spec_;
  std::vector<LinearParams> copies_;
  size_t next_ = 0;
};

// The time per call of `call`, after one untimed call, run in passes of at least 20 ms until there
// are 3 passes and 0.2 s, or 1 s in fewer: the best pass's, as each machine figure is its best
// pass (on a shared host a neighbour's traffic moves single passes by a third, both ways). A first
// call of 1 s or more is the measure itself (a prefill call on a CPU without a matrix unit).
double BestSecondsPerCall(const std::function<void()>& call);

// Times the kernel the dispatcher picks for M rows of X on `weights`, X and Y in bf16, on
// `threads` OpenMP threads. Errors: no kernel.
Result<BenchRow> BenchLinear(BenchWeights& weights, int64_t m, int threads,
                             const MachineLimits& limits);
// BenchWeights::Make for `request`, then BenchLinear.
Result<BenchRow> BenchLinear(const BenchRequest& request, const MachineLimits& limits);

// The MoE rows' layer: `experts` stored experts of one shape, `top_k` routed per token. DeepSeek-V3
// and Kimi-K2 store 256 experts of [I = 2048, H = 7168] per layer and route 8; the table stores 64
// of them (int4: 1.4 GB, fp8: 2.8 GB, each twice that with the kernels' prepack), far more than
// the last-level cache, where 256 in bf16 would not fit a 24 GB machine.
struct MoeBenchShape {
  int64_t hidden = 7168;        // H
  int64_t intermediate = 2048;  // I
  int64_t experts = 64;
  int64_t top_k = 8;
};

// The experts of one MoE layer on synthetic parameters (as BenchWeights'): each expert's w13
// (gate and up fused, [2I, H], as the engines store them) and w2 ([H, I]) a Linear of the spec,
// every one its own memory, made once for every M and thread count timed on them.
class MoeBenchWeights {
 public:
  // `spec_id` as for BenchWeights::Make. Errors: an unknown spec id or activation form, a shape
  // the spec cannot allocate, top_k outside [1, experts].
  static Result<MoeBenchWeights> Make(std::string_view spec_id, const MoeBenchShape& shape);
  MoeBenchWeights(MoeBenchWeights&&) noexcept;
  MoeBenchWeights& operator=(MoeBenchWeights&&) noexcept;
  ~MoeBenchWeights();

  const std::string& spec_id() const { return spec_id_; }
  const MoeBenchShape& shape() const { return shape_; }
  const MoeLayer& layer() const { return layer_; }
  int64_t expert_bytes() const { return expert_bytes_; }  // one expert's w13 and w2

 private:
  MoeBenchWeights() = default;
  std::string spec_id_;
  MoeBenchShape shape_;
  int64_t expert_bytes_ = 0;
  std::vector<Linear> linears_;  // expert e's w13 at 2e, w2 at 2e + 1
  MoeLayer layer_;               // into linears_
};

// Times MoeForward (w13, the activation, w2) for M tokens, X and Y in bf16, on `threads` threads,
// routed by SeededRouting: cold, a routing of its own each call of a cycle of 16, so that the
// experts read differ from call to call (the row is cold where the stored experts hold at least
// 4× the last-level cache), else one routing. The row: n = H, k = I, experts, top_k; seconds per
// call; weight_gbps the bytes of the experts a call reads (the cycle's mean); gflops
// 2 · M · top_k · 3 · I · H per second; kernel the kernels the calls used, "+" between two; the
// peak the highest of their units'. Errors: M below 1, no kernel.
Result<BenchRow> BenchMoe(const MoeBenchWeights& weights, int64_t m, int threads, bool cold,
                          const MachineLimits& limits);

// Which rows the table measures.
enum class BenchLayers : uint8_t {
  kAll,    // dense rows, then MoE rows (none where --n and --k name the dense shape)
  kDense,  // --no-moe
  kMoe,    // --moe
};

// The benchmark table (quantpath bench, bench_linear): specs ("id" or "id:ACT"; default: the
// table's specs whose dispatch reaches a kernel above the reference), M (default 1 2 4 8 16 64 512
// 2048), one shape N × K (default 4096², 14336 × 4096, 4096 × 14336), threads (default 1 and all),
// cold unless `warm`, as text or one JSON object. MoE rows (MoeBenchShape's layer, BenchMoe):
// specs default int4_group_128 and fp8_block_128_128, M default 1 16 512 (`specs` and `m` replace
// the defaults of both kinds), the same threads; under kMoe, n and k set the experts' H and I.
struct BenchTableArgs {
  BenchLayers layers = BenchLayers::kAll;
  std::vector<std::string> specs;
  std::vector<int64_t> m;
  int64_t n = 0;
  int64_t k = 0;
  std::vector<int> threads;
  bool warm = false;
  bool json = false;
};

// The rows to print for one measured row: the row itself with each peer's figures filled in
// (bench_linear), one row per peer. The machine's limits are the table's.
using BenchPeers = std::function<Result<std::vector<BenchRow>>(const BenchWeights&, const BenchRow&,
                                                               const MachineLimits&)>;

// Checks the arguments (errors: --n without --k, a thread count below 1, an unknown spec or
// activation form, before anything is measured), measures the machine, and prints every row to
// `out` as it is measured (JSON: at the end).
Status RunBenchTable(const BenchTableArgs& args, std::ostream& out, const BenchPeers& peers = {});

}  // namespace quantpath
