#include "weft/library/panel_product.h"

#include <algorithm>
#include <cstring>

namespace weft::library {

namespace {

// GCC's vector types: the accumulators of a block as arrays of them, indexed by constants
// after the loops unroll, stay in registers (plain float arrays went to the stack).
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));

// kRows rows of c (row stride ldc) over kPanels panels' columns ("cols" of them stored), the
// panels K * kVecs vectors apart: x's product, then y's added (K 0: none).
template <class V, int kRows, int kVecs, int kPanels>
__attribute__((always_inline)) inline void product_block(const Operand& x, const Operand& y,
                                                         float* c, int64_t ldc, int64_t cols) {
  constexpr int kLanes = sizeof(V) / sizeof(float), kAcross = kPanels * kVecs;
  V acc[kRows][kAcross] = {};
  auto add = [&](const float* a, int64_t lda, const float* panel, int64_t K) {
    for (int64_t q = 0; q < K; ++q) {
      V b[kAcross];
#pragma GCC unroll 8
      for (int v = 0; v < kAcross; ++v)
        std::memcpy(&b[v], panel + ((v / kVecs) * K * kVecs + q * kVecs + v % kVecs) * kLanes,
                    sizeof(V));
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        V s;
        for (int l = 0; l < kLanes; ++l) // (V{} + a[...] adds 0.0f, which GCC keeps)
          s[l] = a[r * lda + q];
#pragma GCC unroll 8
        for (int v = 0; v < kAcross; ++v)
          acc[r][v] += s * b[v];
      }
    }
  };
  add(x.a, x.lda, x.panels, x.K);
  add(y.a, y.lda, y.panels, y.K);
  for (int r = 0; r < kRows; ++r) {
    if (cols == kAcross * kLanes) {
      std::memcpy(c + r * ldc, acc[r], sizeof(acc[r]));
    } else {
      float all[kAcross * kLanes];
      std::memcpy(all, acc[r], sizeof(all));
      std::copy_n(all, cols, c + r * ldc);
    }
  }
}

// The last 1-4 rows (kRows) over up to 4 panels at a time, as many as kMaxAcc accumulators
// hold (the registers), and the last panels together too: one row's accumulators of one panel
// alone would wait on each other's multiply-adds (their latency). (A thread's 64 columns, two
// panels, had gone one panel at a time: batch 1 at half the speed.)
template <class V, int kRows, int kVecs, int kMaxAcc>
__attribute__((always_inline)) inline void product_few(const Operand& x, const Operand& y, float* c,
                                                       int64_t ldc, int64_t n) {
  constexpr int64_t kCols = kVecs * sizeof(V) / sizeof(float);
  constexpr int kPanels = std::clamp(kMaxAcc / (kRows * kVecs), 1, 4);
  for (int64_t j = 0; j < n;) {
    const int64_t left = n - j, panels = std::min<int64_t>(kPanels, (left + kCols - 1) / kCols);
    const Operand xj = x.columns_from(j), yj = y.columns_from(j);
    const int64_t cols = std::min(left, panels * kCols);
    if (panels >= 4 && kPanels >= 4)
      product_block<V, kRows, kVecs, std::min(kPanels, 4)>(xj, yj, c + j, ldc, cols);
    else if (panels == 3 && kPanels >= 3)
      product_block<V, kRows, kVecs, std::min(kPanels, 3)>(xj, yj, c + j, ldc, cols);
    else if (panels == 2 && kPanels >= 2)
      product_block<V, kRows, kVecs, std::min(kPanels, 2)>(xj, yj, c + j, ldc, cols);
    else
      product_block<V, kRows, kVecs, 1>(xj, yj, c + j, ldc, cols);
    j += panels * kCols;
  }
}

// A step's product of the states by R^T (and of X's rows by W^T, "y", added), for the columns
// one thread owns: c[r, j] = sum over q of a[r, q] R^T[q, j], r < m, j < n, q < K, R^T's
// columns packed in panels (pack_panels). Blocks of rows by a panel's columns, the
// accumulators in registers, each panel in L1 across the row blocks; every output sums over q
// in order, whatever its block. (oneDNN's sgemm per step, which forks and joins the threads at
// each call, had run 1.2-2x ONNX Runtime's time: docs/library.md.)
template <class V, int kTall, int kVecs, int kMaxAcc>
__attribute__((always_inline)) inline void product_t(const Operand& x, const Operand& y, int64_t m,
                                                     float* c, int64_t ldc, int64_t n) {
  static_assert(kTall >= 4 && kTall <= 8);
  constexpr int64_t kCols = kVecs * sizeof(V) / sizeof(float);
  const int64_t talls = m / kTall * kTall;
  for (int64_t j = 0; j < n; j += kCols) {
    const Operand xj = x.columns_from(j), yj = y.columns_from(j);
    int64_t cols = std::min<int64_t>(kCols, n - j);
    for (int64_t r = 0; r < talls; r += kTall)
      product_block<V, kTall, kVecs, 1>(xj.rows_from(r), yj.rows_from(r), c + r * ldc + j, ldc,
                                        cols);
  }
  int64_t fours = talls;
  if (m - fours >= 4) { // 4 rows over a tall block's accumulators (kTall 8: two panels at a
                        // time, 18% faster than one)
    product_few<V, 4, kVecs, kTall * kVecs>(x.rows_from(fours), y.rows_from(fours), c + fours * ldc,
                                            ldc, n);
    fours += 4;
  }
  const Operand xr = x.rows_from(fours), yr = y.rows_from(fours);
  float* cr = c + fours * ldc;
  switch (m - fours) {
    case 3: product_few<V, 3, kVecs, kMaxAcc>(xr, yr, cr, ldc, n); break;
    case 2: product_few<V, 2, kVecs, kMaxAcc>(xr, yr, cr, ldc, n); break;
    case 1: product_few<V, 1, kVecs, kMaxAcc>(xr, yr, cr, ldc, n); break;
    default: break;
  }
}

// Blocks of 8 x 32 (16 accumulators of AVX-512's 32 registers: two loads of R^T and 8
// broadcasts for 16 products), then 4 x 32, the last rows over up to 4 panels (24
// accumulators at most); with AVX2's 16 registers, 6 x 16 (12 accumulators: 8 leave Zen 3's
// two FMA pipes waiting on their 4-cycle latency; 4-8% faster than 4 x 16 at batch 32 in a
// micro-benchmark, even at batch 1 to 16), the last rows 12 accumulators at most.
__attribute__((target("avx512f,fma"))) void
product_avx512(const Operand& x, const Operand& y, int64_t m, float* c, int64_t ldc, int64_t n) {
  product_t<V16, 8, 2, 24>(x, y, m, c, ldc, n);
}
__attribute__((target("avx2,fma"))) void product_avx2(const Operand& x, const Operand& y, int64_t m,
                                                      float* c, int64_t ldc, int64_t n) {
  product_t<V8, 6, 2, 12>(x, y, m, c, ldc, n);
}
void product_default(const Operand& x, const Operand& y, int64_t m, float* c, int64_t ldc,
                     int64_t n) {
  product_t<V8, 4, 1, 6>(x, y, m, c, ldc, n);
}

} // namespace

std::vector<PanelProduct> panel_products() {
  std::vector<PanelProduct> all;
  if (__builtin_cpu_supports("avx512f")) all.push_back({product_avx512, 32});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    all.push_back({product_avx2, 16});
  all.push_back({product_default, 8});
  return all;
}

PanelProduct panel_product() { return panel_products().front(); }

void pack_panels(const float* r, int64_t K, int64_t first, int64_t cols, int64_t width,
                 float* out) {
  for (int64_t p = 0; p * width < cols; ++p) {
    float* panel = out + p * width * K;
    for (int64_t q = 0; q < K; ++q) {
      for (int64_t j = 0; j < width; ++j) {
        int64_t col = p * width + j;
        panel[q * width + j] = col < cols ? r[(first + col) * K + q] : 0.0f;
      }
    }
  }
}

} // namespace weft::library
