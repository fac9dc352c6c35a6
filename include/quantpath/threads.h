// quantpath threads: the OpenMP team the kernels' parallel loops run on, as a value a caller sets.
//
// Goals: one place that reads and sets the team size (the benchmark's thread counts, MoeForward's
// MoeOptions::threads), so that no call runs on a thread count it does not name. Non-goals:
// scheduling inside kernels (each kernel's own loops), thread pools.
#pragma once

namespace quantpath {

// OpenMP's default team size (OMP_NUM_THREADS, else the CPUs the process may use); 1 without
// OpenMP.
int DefaultThreads();

// Sets the team size of the kernels' parallel regions for this scope and restores the previous
// one after; 0 keeps the current size. Without OpenMP every size is one thread.
class ThreadCount {
 public:
  explicit ThreadCount(int threads);
  ~ThreadCount();
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_ = 1;
};

}  // namespace quantpath
