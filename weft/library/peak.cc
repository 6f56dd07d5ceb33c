#include "weft/library/peak.h"

#include <algorithm>
#include <chrono>
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

} // namespace weft::library
