// OpenBlasSeconds (peers.h): cblas_sgemm, Y = X · Wᵀ with W [N, K] row-major as stored.
#include <cblas.h>

#include <string>
#include <vector>

#include "bench/peers/peers.h"
#include "fmt/format.h"
#include "quantpath/bench.h"

namespace quantpath::peers {

Result<double> OpenBlasSeconds(int64_t m, int64_t n, int64_t k, int threads, int64_t copies) {
  openblas_set_num_threads(threads);
  const std::vector<float> x(static_cast<size_t>(m * k), 1.0f / 64);
  std::vector<std::vector<float>> weights(
      static_cast<size_t>(copies), std::vector<float>(static_cast<size_t>(n * k), 1.0f / 64));
  std::vector<float> y(static_cast<size_t>(m * n));
  size_t next = 0;
  const auto call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, x.data(), static_cast<int>(k), weights[next].data(),
                static_cast<int>(k), 0.0f, y.data(), static_cast<int>(n));
    next = (next + 1) % weights.size();
  };
  return BestSecondsPerCall(call);
}

std::string OpenBlasConfiguration() {
  // openblas_get_parallel(): 0 sequential, 1 its own threads, 2 OpenMP.
  const int parallel = openblas_get_parallel();
  return fmt::format("{} (kernels for {}; {}, {} threads by default; each row sets its own)",
                     openblas_get_config(), openblas_get_corename(),
                     parallel == 0   ? "sequential"
                     : parallel == 1 ? "pthreads"
                                     : "OpenMP",
                     openblas_get_num_threads());
}

}  // namespace quantpath::peers
