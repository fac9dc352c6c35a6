// OneDnnSeconds (peers.h): oneDNN's matmul on the CPU engine, weights in the layout it picks.
#ifdef _OPENMP
#include <omp.h>
#endif

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench/peers/peers.h"
#include "fmt/format.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "quantpath/bench.h"
#include "quantpath/numeric.h"

namespace quantpath::peers {

Result<double> OneDnnSeconds(bool int8, int64_t m, int64_t n, int64_t k, int threads,
                             int64_t copies) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  try {
#ifdef _OPENMP
    omp_set_num_threads(threads);  // Debian's oneDNN runs on OpenMP
#endif
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const dt in = int8 ? dt::u8 : dt::bf16, weight = int8 ? dt::s8 : dt::bf16,
             out = int8 ? dt::s32 : dt::bf16;
    const dnnl::memory::desc src_md({m, k}, in, tag::ab);
    const dnnl::memory::desc dst_md({m, n}, out, tag::ab);
    const dnnl::memory::desc any_weights({k, n}, weight, tag::any);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, any_weights, dst_md), engine);
    // W [N, K] row-major is [K, N] in "ba"; reordered once per copy, untimed.
    dnnl::memory plain(dnnl::memory::desc({k, n}, weight, tag::ba), engine);
    const size_t bytes = static_cast<size_t>(n * k) * (int8 ? 1 : 2);
    if (int8) {
      std::memset(plain.get_data_handle(), 1, bytes);
    } else {
      std::vector<uint16_t> ones(static_cast<size_t>(n * k), FloatToBf16(1.0f / 64));
      std::memcpy(plain.get_data_handle(), ones.data(), bytes);
    }
    std::vector<dnnl::memory> weights;
    for (int64_t c = 0; c < copies; ++c) {
      weights.emplace_back(pd.weights_desc(), engine);
      dnnl::reorder(plain, weights.back()).execute(stream, plain, weights.back());
    }
    dnnl::memory src(pd.src_desc(), engine), dst(pd.dst_desc(), engine);
    std::memset(src.get_data_handle(), int8 ? 1 : 0x3C, src.get_desc().get_size());
    stream.wait();
    const dnnl::matmul matmul(pd);
    size_t next = 0;
    const auto call = [&] {
      matmul.execute(stream,
                     {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights[next]}, {DNNL_ARG_DST, dst}});
      stream.wait();
      next = (next + 1) % weights.size();
    };
    return BestSecondsPerCall(call);
  } catch (const dnnl::error& e) {
    // Debian's oneDNN 2.6 has no bf16 matmul below AVX-512: that peer is missing, not broken.
    const std::string what =
        fmt::format("oneDNN {} matmul {}×{}×{}: {}", int8 ? "int8" : "bf16", m, n, k, e.what());
    return e.status == dnnl_unimplemented ? Unsupported(what + " (none for this CPU)")
                                          : InternalError(what);
  } catch (const std::exception& e) {
    return InternalError(
        fmt::format("oneDNN {} matmul {}×{}×{}: {}", int8 ? "int8" : "bf16", m, n, k, e.what()));
  }
}

std::string OneDnnConfiguration() {
  const dnnl_version_t* v = dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                                                             : "other";
  return fmt::format("oneDNN {}.{}.{} ({}, CPU runtime {})", v->major, v->minor, v->patch, v->hash,
                     runtime);
}

}  // namespace quantpath::peers
