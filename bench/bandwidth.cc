// Memory bandwidth of this machine, measured the way a reduction would use it: a vectorized
// read with several independent accumulators, and a copy, over all threads. Prints JSON:
// {"read_gbs": ..., "copy_gbs": ...} (medians of repeated runs, 1 GB = 1e9 bytes).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 512ull) << 20;
  size_t n = bytes / sizeof(float);
  float* a = static_cast<float*>(std::aligned_alloc(64, bytes));
  float* b = static_cast<float*>(std::aligned_alloc(64, bytes));
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) a[i] = b[i] = 1.0f;
  std::vector<double> read, copy;
  volatile float sink = 0;
  for (int rep = 0; rep < 9; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
      // Eight independent accumulators so that the adds never wait on each other.
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
#pragma omp for schedule(static)
      for (size_t i = 0; i < n; i += 8) {
        s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3];
        s4 += a[i + 4]; s5 += a[i + 5]; s6 += a[i + 6]; s7 += a[i + 7];
      }
      total += ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    }
    read.push_back(bytes / seconds(t0) / 1e9);
    sink = sink + total;
    t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) b[i] = a[i];
    copy.push_back(2.0 * bytes / seconds(t0) / 1e9);  // read + write
  }
  std::printf("{\"read_gbs\": %.2f, \"copy_gbs\": %.2f, \"bytes\": %zu, \"threads\": %d}\n", median(read),
              median(copy), bytes, omp_get_max_threads());
  std::free(a);
  std::free(b);
  return sink == 12345 ? 1 : 0;
}
