// The recurrent call's per-step product: a few rows (a step's states, and X's rows) times a
// matrix packed once as panels of columns (R^T and W^T), c = x.a x.panels (+ y.a y.panels),
// in blocks whose accumulators stay in registers, on the CPU's widest vectors. Each output
// sums over K in order, whatever its block, so a row's result does not depend on the rows
// beside it. Internal to library/ (recurrent_call.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace weft::library {

// A product's operand: rows of "a" (row stride lda) times K rows of panels (pack_panels).
struct Operand {
  const float* a;
  int64_t lda;
  const float* panels;
  int64_t K;
  Operand rows_from(int64_t r) const { return {a + r * lda, lda, panels, K}; }
  Operand columns_from(int64_t j) const { return {a, lda, panels + j * K, K}; }
};

// c[r, j] = sum over q of x.a[r, q] x.panels' [q, j], plus y's (y.K 0: none), for rows r < m
// and columns j < n (c's row stride ldc).
using Product = void (*)(const Operand& x, const Operand& y, int64_t m, float* c, int64_t ldc,
                         int64_t n);

// A product, and the columns of a panel it takes.
struct PanelProduct {
  Product run;
  int64_t width;
};
// Every product this CPU runs, widest vectors first; panel_product() is the first.
std::vector<PanelProduct> panel_products();
PanelProduct panel_product();

// Columns first to first + cols of R^T, R being rows of K ([rows, K] row-major), packed as
// panels of "width" columns into "out": panel p holds K rows of its columns, contiguous (a
// block's loads then stream; rows of R^T a whole width apart ran 4x slower), its columns past
// the last zeros.
void pack_panels(const float* r, int64_t K, int64_t first, int64_t cols, int64_t width, float* out);

} // namespace weft::library
