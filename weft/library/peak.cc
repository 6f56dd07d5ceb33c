#include "weft/library/peak.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <vector>

#include "weft/library/dnnl_kernel.h"

namespace weft::library {

double measure_peak_gflops() {
  constexpr int64_t n = 1024;
  constexpr int kRuns = 8;
  try {
    memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
    dnnl::matmul product(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), engine()));
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
    memory ma(md, engine(), a.data()), mb(md, engine(), b.data()), mc(md, engine(), c.data());
    dnnl::stream stream(engine());
    double best = 0;
    for (int run = 0; run < kRuns; ++run) {
      auto start = std::chrono::steady_clock::now();
      product.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
      stream.wait();
      std::chrono::duration<double> s = std::chrono::steady_clock::now() - start;
      if (run > 0 && s.count() > 0) best = std::max(best, 2.0 * n * n * n / s.count() / 1e9);
    }
    return best;
  } catch (const dnnl::error&) {
    return 0;
  }
}

double measure_read_bandwidth() {
  constexpr size_t kBytes = size_t{256} << 20;
  constexpr size_t n = kBytes / sizeof(float);
  constexpr int kRuns = 4;
  std::unique_ptr<float[]> data(new (std::nothrow) float[n]);
  if (!data) return 0;
  float* a = data.get();
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i)
    a[i] = 1.0f;
  double best = 0;
  volatile float sink = 0; // the sums are used: the reads stay
  for (int run = 0; run < kRuns; ++run) {
    auto start = std::chrono::steady_clock::now();
    float total = 0;
#pragma omp parallel reduction(+ : total)
    {
      float s[8] = {};
#pragma omp for schedule(static)
      for (size_t i = 0; i < n; i += 8) {
        for (int l = 0; l < 8; ++l)
          s[l] += a[i + static_cast<size_t>(l)];
      }
      total += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    }
    std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
    sink = sink + total;
    if (t.count() > 0) best = std::max(best, static_cast<double>(kBytes) / t.count() / 1e9);
  }
  return best;
}

} // namespace weft::library
