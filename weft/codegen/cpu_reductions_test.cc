// The CPU reduction strategies (codegen/cpu_strategy.h), generated, built and run at 1, 2
// and 4 threads against a float64 reference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>

#include "tests/testing/cpu_kernels.h"
#include "tests/testing/kernels.h"
#include "weft/kernel/kernel.h"
#include "weft/runtime/cpu/kernel_library.h"

namespace weft::runtime {
namespace {

using testing::CpuKernels;

// The CPU reduction strategies (codegen/cpu_strategy.h): every canonical form, with lanes,
// tails, thread splits and empty extents, against a float64 reference. Inputs are exact in
// any order of evaluation (small integers for sums, signs and powers of two for products),
// so results must equal the reference exactly, whatever the strategy and thread count.

struct Form {
  const char* name;
  std::vector<bool> reduced;
};
const Form kAllForm{"all", {true}};
const Form kRowForm{"row", {false, true}};
const Form kColumnForm{"column", {true, false}};
const Form kMiddleForm{"middle", {false, true, false}};
const Form kBatchedRowForm{"batched_row", {false, false, true}};

const char* combine_name(kernel::Combine c) {
  switch (c) {
    case kernel::Combine::kSum: return "sum";
    case kernel::Combine::kProd: return "prod";
    case kernel::Combine::kMax: return "max";
    case kernel::Combine::kMin: return "min";
    case kernel::Combine::kShiftMax: return "shift_max";
    case kernel::Combine::kNone: break;
  }
  return "none";
}

// The output element each element of x (row-major over "shape") combines into.
std::vector<size_t> owners(const std::vector<int64_t>& shape, const std::vector<bool>& reduced) {
  size_t n = 1;
  for (int64_t e : shape)
    n *= static_cast<size_t>(e);
  std::vector<size_t> out(n);
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t f = 0; f < n; ++f) {
    size_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!reduced[d]) o = o * static_cast<size_t>(shape[d]) + static_cast<size_t>(idx[d]);
    }
    out[f] = o;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// x reduced in float64; max and min propagate NaN, the shift max ignores it (as the C
// dialect's does).
std::vector<double> reference(const std::vector<float>& x, const std::vector<size_t>& owner,
                              size_t outputs, kernel::Combine c) {
  std::vector<double> y(outputs, kernel::combine_identity(c));
  for (size_t f = 0; f < x.size(); ++f) {
    double& a = y[owner[f]];
    double v = x[f];
    switch (c) {
      case kernel::Combine::kSum: a += v; break;
      case kernel::Combine::kProd: a *= v; break;
      case kernel::Combine::kMax: a = std::isnan(a) || std::isnan(v) ? NAN : std::max(a, v); break;
      case kernel::Combine::kMin: a = std::isnan(a) || std::isnan(v) ? NAN : std::min(a, v); break;
      case kernel::Combine::kShiftMax: a = std::isnan(v) ? a : std::max(a, v); break;
      case kernel::Combine::kNone: break;
    }
  }
  return y;
}

// Values whose combination is exact in float in any order: integers in [-4, 4] for sums
// (totals stay far below 2^24), +-1 with rare factors 2 and 1/2 for products, uniform reals
// for max and min.
std::vector<float> exact_inputs(size_t n, kernel::Combine c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(n);
  for (float& v : x) {
    uint32_t r = rng();
    switch (c) {
      case kernel::Combine::kSum: v = static_cast<float>(static_cast<int>(r % 9) - 4); break;
      case kernel::Combine::kProd:
        v = (r & 1 ? 1.0f : -1.0f) * ((r >> 1) % 1024 == 0   ? 2.0f
                                      : (r >> 1) % 1024 == 1 ? 0.5f
                                                             : 1);
        break;
      default: v = static_cast<float>(r % 2000001) / 1e6f - 1.0f; break;
    }
  }
  return x;
}

// NaN at the end of output 0's elements, +inf first in output 1, -inf in the middle of
// output 2, and both infinities in output 3.
void add_special_values(std::vector<float>& x, const std::vector<size_t>& owner) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<size_t>> members(4);
  for (size_t f = 0; f < x.size(); ++f) {
    if (owner[f] < 4) members[owner[f]].push_back(f);
  }
  if (!members[0].empty()) x[members[0].back()] = NAN;
  if (!members[1].empty()) x[members[1].front()] = inf;
  if (!members[2].empty()) x[members[2][members[2].size() / 2]] = -inf;
  if (members[3].size() >= 2) {
    x[members[3].front()] = inf;
    x[members[3].back()] = -inf;
  }
}

class CpuReductions : public CpuKernels {
protected:
  void SetUp() override {
    CpuKernels::SetUp();
    default_threads_ = omp_get_max_threads();
  }
  void TearDown() override {
    omp_set_num_threads(default_threads_);
    CpuKernels::TearDown();
  }

  // Runs the form's kernel (symbolic extents d0, d1, ...) at each shape with 1, 2 and 4
  // threads, plain and with special values, and checks it against the reference.
  void check(const Form& form, kernel::Combine c, const std::vector<std::vector<int64_t>>& shapes) {
    std::vector<Dim> dims;
    for (size_t d = 0; d < form.reduced.size(); ++d)
      dims.push_back(Dim::symbol("d" + std::to_string(d)));
    std::string name = std::string(form.name) + "_" + combine_name(c);
    KernelFn fn = build(testing::reduce_kernel(name, dims, form.reduced, c));
    ASSERT_NE(fn, nullptr);
    for (const std::vector<int64_t>& shape : shapes) {
      std::vector<size_t> owner = owners(shape, form.reduced);
      size_t outputs = 1;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (!form.reduced[d]) outputs *= static_cast<size_t>(shape[d]);
      }
      for (bool special : {false, true}) {
        std::vector<float> x = exact_inputs(owner.size(), c, static_cast<uint32_t>(owner.size()));
        if (special) add_special_values(x, owner);
        std::vector<double> want = reference(x, owner, outputs, c);
        for (int threads : {1, 2, 4}) {
          omp_set_num_threads(threads);
          std::vector<float> y(outputs, 12345.0f);
          void* buffers[] = {x.data(), y.data()};
          fn(buffers, shape.data());
          for (size_t o = 0; o < outputs; ++o) {
            std::string where =
                fmt::format("{} shape [{}] threads {}{} output {}", name, fmt::join(shape, ","),
                            threads, special ? " with NaN/inf" : "", o);
            if (std::isnan(want[o])) {
              ASSERT_TRUE(std::isnan(y[o])) << where << ": " << y[o];
            } else {
              ASSERT_EQ(y[o], static_cast<float>(want[o])) << where;
            }
          }
        }
      }
    }
  }

  int default_threads_ = 1;
};

// Short lengths (no lanes: under 128), 1000 (the lanes' chains, then the first chain
// alone, then the tail), and past the point (2 * 16384 elements) where threads split the work.
TEST_F(CpuReductions, All) {
  std::vector<std::vector<int64_t>> shapes = {{0},  {1},    {7},      {31},     {32},
                                              {33}, {1000}, {100003}, {1000003}};
  check(kAllForm, kernel::Combine::kSum, shapes);
  check(kAllForm, kernel::Combine::kMax, shapes);
  check(kAllForm, kernel::Combine::kShiftMax, shapes);
  check(kAllForm, kernel::Combine::kProd, {{0}, {1}, {33}, {4097}, {100003}});
}

// [K, R]; few rows with a long R splits each row across the threads. Rows of 150 and 1000
// take the lanes' chains, then the first chain alone, then the tail; 8193 a second cascade
// block of one element.
TEST_F(CpuReductions, Row) {
  std::vector<std::vector<int64_t>> shapes = {{0, 5},    {3, 0},      {1, 1},     {5, 7},
                                              {3, 31},   {2, 33},     {5, 150},   {7, 1000},
                                              {4, 8193}, {1, 100003}, {3, 70001}, {1000, 37}};
  check(kRowForm, kernel::Combine::kSum, shapes);
  check(kRowForm, kernel::Combine::kMax, shapes);
  check(kRowForm, kernel::Combine::kShiftMax, shapes);
  check(kRowForm, kernel::Combine::kMin, shapes);
}

// [B, K, R]: the B and K loops run as one parallel loop (collapse), split anywhere.
TEST_F(CpuReductions, BatchedRow) {
  std::vector<std::vector<int64_t>> shapes = {{0, 3, 5}, {3, 0, 5},   {3, 5, 0},   {1, 1, 1},
                                              {3, 5, 7}, {9, 7, 150}, {2, 3, 1000}};
  check(kBatchedRowForm, kernel::Combine::kSum, shapes);
  check(kBatchedRowForm, kernel::Combine::kMax, shapes);
}

// [R, K]: R split with a partial row per thread, K split when wide (over 2048 columns per
// thread), K in chunks of 2048.
TEST_F(CpuReductions, Column) {
  std::vector<std::vector<int64_t>> shapes = {
      {0, 5},     {5, 0},      {1, 1},     {7, 3},     {31, 33},  {1000, 7}, {33, 1000},
      {513, 300}, {100003, 3}, {70001, 1}, {2049, 65}, {3, 5000}, {20, 4100}};
  check(kColumnForm, kernel::Combine::kSum, shapes);
  check(kColumnForm, kernel::Combine::kMax, shapes);
  check(kColumnForm, kernel::Combine::kShiftMax, shapes);
  check(kColumnForm, kernel::Combine::kMin, shapes);
}

// [K1, R, K2]; few K1 with much work splits each inner COLUMN across the threads.
TEST_F(CpuReductions, Middle) {
  std::vector<std::vector<int64_t>> shapes = {
      {0, 3, 3},   {2, 0, 3},     {3, 3, 0},     {1, 1, 1},   {3, 7, 5},
      {5, 31, 33}, {2, 1000, 33}, {2, 50001, 3}, {300, 9, 2}, {2, 20, 4100}};
  check(kMiddleForm, kernel::Combine::kSum, shapes);
  check(kMiddleForm, kernel::Combine::kMax, shapes);
  check(kMiddleForm, kernel::Combine::kShiftMax, shapes);
  check(kMiddleForm, kernel::Combine::kProd, {{1, 1, 1}, {3, 7, 5}, {2, 50001, 3}});
}

// y[k, j] += x[r, k, j] where j == r: the guard fixes j by the reduced r, so isl's nest is
// "for r (reduction) for k (parallel)" whose write still moves with r. Not a COLUMN nest:
// it keeps its plain loops.
TEST_F(CpuReductions, GuardedWriteMovingWithTheReducedLoop) {
  using kernel::AffineExpr;
  kernel::Kernel k =
      testing::reduce_kernel("diagonal", {4, 4, 3}, {true, false, false}, kernel::Combine::kSum);
  kernel::Statement& update = k.statements[1];
  update.guards = {{0, {{2, 1}, {0, -1}}}, {0, {{0, 1}, {2, -1}}}}; // i2 - i0 >= 0, i0 - i2 >= 0
  KernelFn fn = build(k);
  ASSERT_NE(fn, nullptr);
  std::vector<float> x = exact_inputs(4 * 4 * 3, kernel::Combine::kSum, 3), y(4 * 3, -1.0f);
  void* buffers[] = {x.data(), y.data()};
  fn(buffers, nullptr);
  for (size_t kk = 0; kk < 4; ++kk) {
    for (size_t j = 0; j < 3; ++j)
      EXPECT_EQ(y[kk * 3 + j], x[j * 12 + kk * 3 + j]) << kk << ", " << j;
  }
}

// Static extents take the same skeletons without run-time extents; a row shorter than the
// lanes keeps the scalar accumulator. Columns of at most 128 rows, or of at most 256 columns
// (each cascade block), go in register blocks of 64 columns, then a tail through the L1 buffer
// (150 = 2 x 64 + 22).
TEST_F(CpuReductions, StaticExtents) {
  struct Case {
    Form form;
    std::vector<int64_t> shape;
    kernel::Combine combine = kernel::Combine::kSum;
  };
  for (const Case& c : std::vector<Case>{{kRowForm, {5, 7}},
                                         {kRowForm, {3, 1000}},
                                         {kColumnForm, {70001, 3}},
                                         {kAllForm, {100003}},
                                         {kMiddleForm, {2, 40000, 3}},
                                         {kColumnForm, {16, 150}},
                                         {kColumnForm, {100, 64}, kernel::Combine::kMax},
                                         {kMiddleForm, {5, 16, 130}},
                                         {kMiddleForm, {3, 7, 70}, kernel::Combine::kShiftMax},
                                         {kColumnForm, {1000, 150}},
                                         {kColumnForm, {300, 256}, kernel::Combine::kMax},
                                         {kMiddleForm, {3, 300, 200}, kernel::Combine::kShiftMax},
                                         {kColumnForm, {50, 5}}}) { // short rows, no register block
    std::vector<Dim> dims(c.shape.begin(), c.shape.end());
    std::string name = fmt::format("static_{}_{}_{}", c.form.name, fmt::join(c.shape, "x"),
                                   combine_name(c.combine));
    KernelFn fn = build(testing::reduce_kernel(name, dims, c.form.reduced, c.combine));
    ASSERT_NE(fn, nullptr);
    std::vector<size_t> owner = owners(c.shape, c.form.reduced);
    size_t outputs = 1 + *std::max_element(owner.begin(), owner.end());
    std::vector<float> x = exact_inputs(owner.size(), c.combine, 7);
    add_special_values(x, owner);
    std::vector<double> want = reference(x, owner, outputs, c.combine);
    for (int threads : {1, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> y(outputs);
      void* buffers[] = {x.data(), y.data()};
      fn(buffers, nullptr);
      for (size_t o = 0; o < outputs; ++o) {
        if (std::isnan(want[o])) {
          ASSERT_TRUE(std::isnan(y[o])) << name << " output " << o;
        } else {
          ASSERT_EQ(y[o], static_cast<float>(want[o])) << name << " output " << o;
        }
      }
    }
  }
}

// Long sums are cascaded: each lane sums 128 elements of a block (128 x lanes; columns: blocks of
// 128 rows), and blocks join a float64 total, so the error does not grow with n (here about
// 1e-6, the rounding of 128 additions). Sequential float32 summation of 10^7 values of 0.1f
// gives 1087937 (relative error 8.8e-2: past 2^20 each addition of 0.1f rounds by up to
// 1/32), and on ones it stops at 2^24 (2^24 + 1 rounds back to 2^24); the test checks that
// the naive sums indeed fail.
TEST_F(CpuReductions, LongSumsAreCascadedAndDeterministic) {
  const int64_t n = 10'000'000;
  std::vector<float> tenths(static_cast<size_t>(n), 0.1f);
  const double total = static_cast<double>(n) * static_cast<double>(0.1f);
  const double tolerance = 2e-6;
  float naive = 0;
  for (float v : tenths)
    naive += v;
  ASSERT_GT(std::abs(naive - total), tolerance * total) << "the naive sum passes: " << naive;

  struct Case {
    Form form;
    std::vector<int64_t> shape;
    size_t outputs;
  };
  for (const Case& c : std::vector<Case>{{kAllForm, {n}, 1},
                                         {kRowForm, {1, n}, 1},
                                         {kRowForm, {2, n / 2}, 2},
                                         {kColumnForm, {n / 2, 2}, 2},
                                         {kColumnForm, {n / 1000, 1000}, 1000},
                                         {kMiddleForm, {1, n / 2, 2}, 2}}) {
    std::vector<Dim> dims;
    for (size_t d = 0; d < c.shape.size(); ++d)
      dims.push_back(Dim::symbol("d" + std::to_string(d)));
    std::string name = fmt::format("long_{}", c.form.name);
    KernelFn fn = build(testing::reduce_kernel(name, dims, c.form.reduced, kernel::Combine::kSum));
    ASSERT_NE(fn, nullptr);
    const double want = total / static_cast<double>(c.outputs);
    for (int threads : {1, 2, 3}) {
      omp_set_num_threads(threads);
      std::vector<float> y(c.outputs), again(c.outputs);
      void* buffers[] = {tenths.data(), y.data()};
      fn(buffers, c.shape.data());
      void* buffers_again[] = {tenths.data(), again.data()};
      fn(buffers_again, c.shape.data());
      for (size_t o = 0; o < c.outputs; ++o) {
        ASSERT_NEAR(y[o], want, tolerance * want)
            << name << " [" << fmt::format("{}", fmt::join(c.shape, ",")) << "] threads " << threads
            << " output " << o;
        ASSERT_EQ(y[o], again[o]) << "not deterministic: " << name << " threads " << threads;
      }
    }
  }

  // 2^24 + 2^22 ones: exact in blocks of 4096, whatever the thread count.
  const int64_t ones = (int64_t{1} << 24) + (int64_t{1} << 22);
  std::vector<float> x(static_cast<size_t>(ones), 1.0f);
  float naive_ones = 0;
  for (float v : x)
    naive_ones += v;
  ASSERT_EQ(naive_ones, 16777216.0f);
  KernelFn all =
      build(testing::reduce_kernel("long_ones", {Dim::symbol("n")}, {true}, kernel::Combine::kSum));
  ASSERT_NE(all, nullptr);
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    float y = 0;
    void* buffers[] = {x.data(), &y};
    all(buffers, &ones);
    EXPECT_EQ(y, static_cast<float>(ones)) << "threads " << threads;
  }
}

} // namespace
} // namespace weft::runtime
