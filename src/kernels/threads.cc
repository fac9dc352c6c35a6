// DefaultThreads and ThreadCount (threads.h): OpenMP's team size, read and set.
#include "quantpath/threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace quantpath {

int DefaultThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

ThreadCount::ThreadCount(int threads) : saved_(DefaultThreads()) {
#ifdef _OPENMP
  if (threads > 0) omp_set_num_threads(threads);
#endif
  (void)threads;
}

ThreadCount::~ThreadCount() {
#ifdef _OPENMP
  omp_set_num_threads(saved_);
#endif
}

}  // namespace quantpath
