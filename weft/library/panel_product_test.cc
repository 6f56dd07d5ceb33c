#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "weft/library/panel_product.h"

namespace weft::library {
namespace {

// Small integers: every sum is exact in f32, whatever the order.
std::vector<float> integers(int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-4, 4);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v)
    e = static_cast<float>(d(rng));
  return v;
}

// A product of m rows over n columns, with the second operand or without, against a plain
// triple loop; c's other elements (past n, past m) stay as they were.
void expect_product(const PanelProduct& product, int64_t m, int64_t n, int64_t kx, int64_t ky) {
  std::mt19937 rng(static_cast<unsigned>(m * 1000 + n * 10 + kx + ky));
  const int64_t lda = kx + 3, ldb = ky + 5, ldc = n + 7;
  std::vector<float> a = integers(m * lda, rng), b = integers(m * ldb, rng);
  std::vector<float> r = integers(n * kx, rng), s = integers(n * ky, rng); // [n, K] rows
  const int64_t padded = (n + product.width - 1) / product.width * product.width;
  std::vector<float> rp(static_cast<size_t>(padded * kx + 1)),
      sp(static_cast<size_t>(padded * ky + 1));
  pack_panels(r.data(), kx, 0, n, product.width, rp.data());
  pack_panels(s.data(), ky, 0, n, product.width, sp.data());
  std::vector<float> c(static_cast<size_t>((m + 1) * ldc), -99.0f);
  product.run(Operand{a.data(), lda, rp.data(), kx}, Operand{b.data(), ldb, sp.data(), ky}, m,
              c.data(), ldc, n);
  for (int64_t i = 0; i < m + 1; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      float want = -99.0f;
      if (i < m && j < n) {
        want = 0.0f;
        for (int64_t q = 0; q < kx; ++q)
          want += a[i * lda + q] * r[j * kx + q];
        for (int64_t q = 0; q < ky; ++q)
          want += b[i * ldb + q] * s[j * ky + q];
      }
      ASSERT_EQ(c[i * ldc + j], want)
          << "panels " << product.width << " wide, m " << m << " n " << n << " K " << kx << "+"
          << ky << ": c[" << i << ", " << j << "]";
    }
  }
}

// Each of the CPU's products (AVX-512, AVX2, SSE as it has them).
void expect_product(int64_t m, int64_t n, int64_t kx, int64_t ky) {
  for (const PanelProduct& product : panel_products())
    expect_product(product, m, n, kx, ky);
}

TEST(PanelProduct, EveryRowCountAndRaggedColumns) {
  for (int64_t m = 1; m <= 19; ++m) {
    for (int64_t n : {1, 7, 16, 33, 64, 100, 130})
      expect_product(m, n, 24, 0);
  }
}

TEST(PanelProduct, SecondOperandAdded) {
  for (int64_t m : {1, 3, 4, 6, 8, 13, 32}) {
    for (int64_t n : {16, 50, 128})
      expect_product(m, n, 17, 9);
  }
}

TEST(PanelProduct, PackPanelsZeroPadsTheLastPanel) {
  const int64_t K = 3, width = 8;
  std::vector<float> r(5 * K); // rows 0-4 of R, each K long
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = static_cast<float>(i + 1);
  std::vector<float> out(2 * width * K, -1.0f);
  pack_panels(r.data(), K, 1, 4, width, out.data()); // columns 1-4 of R^T: rows 1-4 of R
  for (int64_t q = 0; q < K; ++q) {
    for (int64_t j = 0; j < width; ++j)
      EXPECT_EQ(out[q * width + j], j < 4 ? r[(1 + j) * K + q] : 0.0f) << q << ", " << j;
  }
  EXPECT_EQ(out[width * K], -1.0f); // one panel only
}

} // namespace
} // namespace weft::library
