// The kernel registry and dispatcher (filled in with the first kernels).
