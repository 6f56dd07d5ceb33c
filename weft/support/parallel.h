// parallel_for: independent work items on all cores, for the compiler's own work (kernel
// generation, tuning builds), not for generated kernels (those use OpenMP).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace weft {

// Calls work(i) for each i in [0, n), on up to one thread per core; the calling thread
// works too. Items are taken in order; work must be safe to run concurrently.
template <typename Work> void parallel_for(size_t n, Work&& work) {
  std::atomic<size_t> next = 0;
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++)
      work(i);
  };
  size_t workers = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), n);
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads)
    t.join();
}

} // namespace weft
