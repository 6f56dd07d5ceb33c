// Timing a piece of work on the host: the median of repeated runs, as `weft tune` compares
// alternatives (a library call against generated code, a convolution's algorithms).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace weft {

// The median time in ms of "run" (which returns false when it failed) over at least 3 runs
// and about "seconds" in all, at most 200 runs; negative if a run failed.
inline double median_run_ms(const std::function<bool()>& run, double seconds) {
  std::vector<double> times;
  double spent = 0;
  while (times.size() < 3 || (spent < seconds && times.size() < 200)) {
    auto t0 = std::chrono::steady_clock::now();
    if (!run()) return -1;
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    times.push_back(t * 1e3);
    spent += t;
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace weft
