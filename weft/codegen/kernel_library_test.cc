// Generated kernels, compiled by the system compiler and loaded with dlopen, against a
// float64 reference. The reduction strategies' tests are cpu_reductions_test.cc.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/cpu_kernels.h"
#include "tests/testing/kernels.h"
#include "weft/codegen/emit_c.h"
#include "weft/kernel/kernel.h"
#include "weft/poly/schedule_kernel.h"
#include "weft/runtime/cpu/kernel_library.h"
#include "weft/support/float16.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::runtime {
namespace {

using testing::CpuKernels;
namespace fs = std::filesystem;

TEST_F(CpuKernels, RowSumMatchesFloat64ReferenceAndCaches) {
  for (int64_t rows : {0, 1, 7, 1000}) {
    std::vector<float> x = random(static_cast<size_t>(rows) * 37, 1);
    std::vector<float> y(static_cast<size_t>(rows), -1.0f);
    KernelFn fn = build(testing::row_sum_kernel(Dim::symbol("N"), 37));
    ASSERT_NE(fn, nullptr);
    void* buffers[] = {x.data(), y.data()};
    int64_t extents[] = {rows};
    fn(buffers, extents);
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      for (int c = 0; c < 37; ++c)
        ref += x[static_cast<size_t>(r * 37 + c)];
      ASSERT_NEAR(y[static_cast<size_t>(r)], ref, 1e-5) << r;
    }
  }
  bool hit = false;
  build(testing::row_sum_kernel(Dim::symbol("N"), 37), &hit);
  EXPECT_TRUE(hit);
}

TEST_F(CpuKernels, ColumnSum) {
  std::vector<float> x = random(513 * 9, 2);
  std::vector<float> y(9);
  KernelFn fn = build(testing::column_sum_kernel(513, 9));
  ASSERT_NE(fn, nullptr);
  void* buffers[] = {x.data(), y.data()};
  fn(buffers, nullptr);
  for (int k = 0; k < 9; ++k) {
    double ref = 0;
    for (int r = 0; r < 513; ++r)
      ref += x[static_cast<size_t>(r * 9 + k)];
    EXPECT_NEAR(y[static_cast<size_t>(k)], ref, 1e-4) << k;
  }
}

TEST_F(CpuKernels, AllMaxPropagatesNanAndHandlesInfAndEmpty) {
  KernelFn fn = build(testing::all_max_kernel(Dim::symbol("N")));
  ASSERT_NE(fn, nullptr);
  auto run = [&](std::vector<float> x) {
    float y = 0;
    void* buffers[] = {x.data(), &y};
    int64_t extents[] = {static_cast<int64_t>(x.size())};
    fn(buffers, extents);
    return y;
  };
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(run({1, 5, -3}), 5);
  EXPECT_TRUE(std::isnan(run({1, NAN, 7})));
  EXPECT_TRUE(std::isnan(run({NAN, 1})));
  EXPECT_EQ(run({-inf, 2, inf}), inf);
  EXPECT_EQ(run({}), -inf); // the identity of max over no elements
  // In SIMD lanes too: a NaN that reaches an accumulator first stays through larger values.
  for (size_t at : {0, 7, 15, 16, 500, 999}) {
    std::vector<float> x(1000, 1);
    x[at] = NAN;
    EXPECT_TRUE(std::isnan(run(x))) << at;
  }
}

TEST_F(CpuKernels, BiasAddBroadcasts) {
  std::vector<float> x = random(3 * 16, 3), b = random(16, 4), z(3 * 16);
  KernelFn fn = build(testing::bias_add_kernel(Dim::symbol("B"), 16));
  ASSERT_NE(fn, nullptr);
  void* buffers[] = {x.data(), b.data(), z.data()};
  int64_t extents[] = {3};
  fn(buffers, extents);
  for (size_t i = 0; i < z.size(); ++i)
    EXPECT_EQ(z[i], x[i] + b[i % 16]);
}

// y[n, c, h, w] = x[n, c, h, w] * s[c]: h and w run as one loop (coalesced), whose output
// goes out in streaming stores when the schedule streams every output. The output starts
// 4 bytes past a cache line, so the plain stores before the first line and the tail both run.
// With "+ r[h]", a read that moves with h but not along w, h and w stay two loops.
TEST_F(CpuKernels, ChannelScaleCoalescesAndStreams) {
  const int64_t n = 2, c = 3, h = 7, w = 9, size = n * c * h * w;
  for (bool per_row : {false, true}) {
    kernel::Kernel k;
    k.name = per_row ? "channel_scale_row_bias" : "channel_scale";
    k.buffers = {{"x", DType::kF32, {n, c, h, w}, kernel::BufferRole::kInput},
                 {"s", DType::kF32, {c}, kernel::BufferRole::kInput},
                 {"y", DType::kF32, {n, c, h, w}, kernel::BufferRole::kOutput},
                 {"r", DType::kF32, {h}, kernel::BufferRole::kInput}};
    kernel::Statement st;
    st.name = "scale";
    st.domain = {n, c, h, w};
    std::vector<kernel::AffineExpr> all;
    for (int i = 0; i < 4; ++i)
      all.push_back(kernel::AffineExpr::iterator(i));
    st.write = {2, all};
    st.reads = {{0, all}, {1, {kernel::AffineExpr::iterator(1)}}};
    st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0, 0},
               {kernel::ExprOp::kLoad, DType::kF32, {}, 1, 0},
               {kernel::ExprOp::kMul, DType::kF32, {0, 1}, -1, 0}};
    if (per_row) {
      st.reads.push_back({3, {kernel::AffineExpr::iterator(2)}});
      st.expr.push_back({kernel::ExprOp::kLoad, DType::kF32, {}, 2, 0});
      st.expr.push_back({kernel::ExprOp::kAdd, DType::kF32, {2, 3}, -1, 0});
    }
    k.statements = {st};
    for (int64_t stream_min_bytes : {int64_t{0}, codegen::kNoStreaming}) {
      codegen::CpuSchedule schedule;
      schedule.stream_min_bytes = stream_min_bytes;
      std::string source;
      KernelFn fn = build(k, nullptr, schedule, &source);
      ASSERT_NE(fn, nullptr);
      EXPECT_EQ(!per_row, source.find("c3 as one loop") != std::string::npos) << source;
      bool streams = stream_min_bytes == 0;
      EXPECT_EQ(streams, source.find("weft_stream16(&b2[") != std::string::npos) << source;
      EXPECT_EQ(streams, source.find("weft_stream_fence();\n") != std::string::npos) << source;
      std::vector<float> x = random(size, 5), scale = random(c, 6), r = random(h, 7);
      alignas(64) float y[size + 32] = {};
      float* out = y + 1;
      void* buffers[] = {x.data(), scale.data(), out, r.data()};
      fn(buffers, nullptr);
      for (int64_t i = 0; i < size; ++i) {
        float want = x[static_cast<size_t>(i)] * scale[static_cast<size_t>(i / (h * w) % c)];
        if (per_row) want += r[static_cast<size_t>(i / w % h)];
        EXPECT_NEAR(out[i], want, 1e-6f) << k.name << " element " << i; // a * b + c may fuse
      }
      EXPECT_EQ(y[0], 0.0f);
      EXPECT_EQ(out[size], 0.0f);
    }
  }
}

// A Clip's max and min against constant bounds (dialect.h: bound_by_constant) give what
// weft_max and weft_min give: a NaN passes through, a value equal to a bound gives the bound
// (0 for -0 at a lower bound of 0, as ONNX Runtime's Relu gives).
TEST_F(CpuKernels, ClipToConstantsKeepsNaNAndTakesTheBound) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {NAN, -0.0f, 0.0f, 6.0f, -1.0f, 3.5f, 7.0f, inf, -inf, -NAN};
  for (int i = 0; i < 40; ++i) // past a vector's lanes
    x.push_back(static_cast<float>(i) * 0.25f - 2.0f);
  int64_t n = static_cast<int64_t>(x.size());
  kernel::Kernel k;
  k.name = "clip_constants";
  k.buffers = {{"x", DType::kF32, {n}, kernel::BufferRole::kInput},
               {"y", DType::kF32, {n}, kernel::BufferRole::kOutput}};
  kernel::Statement st;
  st.name = "clip";
  st.domain = {n};
  st.write = {1, {kernel::AffineExpr::iterator(0)}};
  st.reads = {{0, {kernel::AffineExpr::iterator(0)}}};
  using kernel::ExprOp;
  st.expr = {{ExprOp::kLoad, DType::kF32, {}, 0, 0},
             {ExprOp::kConstant, DType::kF32, {}, -1, 0},
             {ExprOp::kMax, DType::kF32, {0, 1}, -1, 0},
             {ExprOp::kConstant, DType::kF32, {}, -1, 6},
             {ExprOp::kMin, DType::kF32, {2, 3}, -1, 0}};
  k.statements = {st};
  KernelFn fn = build(k);
  ASSERT_NE(fn, nullptr);
  std::vector<float> y(x.size());
  void* buffers[] = {x.data(), y.data()};
  fn(buffers, nullptr);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << i;
      continue;
    }
    float want = x[i] > 0.0f ? (x[i] < 6.0f ? x[i] : 6.0f) : 0.0f;
    EXPECT_EQ(y[i], want) << "x = " << x[i];
    EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << "x = " << x[i];
  }
}

// The generated f32 exp (a vectorizable polynomial, not libm) against float64 exp: within
// 2 ulp where the result is normal, exact at overflow, underflow, infinities and NaN.
// weft_erf (vectorizable, prelude) against libm's erf in double: within 2.5e-7 relative
// (3e-7 absolute near 0 would already fail for x = 1e-5, where erf(x) = 1.128e-5).
TEST_F(CpuKernels, ErfMatchesFloat64Reference) {
  std::vector<float> x;
  for (double v = -6; v <= 6; v += 0.00137)
    x.push_back(static_cast<float>(v));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-5f, 1.0f, -1.0f, 4.0f, 3.9999f, inf, -inf, NAN})
    x.push_back(v);
  std::vector<float> y = apply_unary(kernel::ExprOp::kErf, x);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double want = std::erf(static_cast<double>(x[i]));
    if (std::isnan(x[i]))
      EXPECT_TRUE(std::isnan(y[i]));
    else
      EXPECT_NEAR(y[i], want, 2.5e-7 * std::abs(want) + 1e-38) << "x = " << x[i];
  }
}

// weft_exp (vectorizable, prelude) against float64 exp: within 2 ulp (2.5e-7 relative) of
// every normal result; results below FLT_MIN are 0; inf above the range, NaN through.
// weft_shifted_exp the same up to 88.72, the arguments it takes.
TEST_F(CpuKernels, ExpMatchesFloat64Reference) {
  check_exp(kernel::ExprOp::kExp, std::numeric_limits<float>::infinity());
}

TEST_F(CpuKernels, ShiftedExpMatchesFloat64ReferenceUpTo88) {
  check_exp(kernel::ExprOp::kShiftedExp, 88.72f);
}

// weft_log (vectorizable, prelude) against float64 log: within an ulp over a sweep of every
// 4093rd positive float's bits (denormals, the powers of 2 near 1, the largest), -inf at +-0,
// NaN below 0 and through, inf at inf.
TEST_F(CpuKernels, LogMatchesFloat64Reference) {
  std::vector<float> x;
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 4093) {
    float v;
    std::memcpy(&v, &bits, 4);
    x.push_back(v);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {1.0f, 0.70710677f, 0.70710683f, 1.4142135f, 1.4142137f, 2.0f, 0.5f, 1e-45f,
                  std::numeric_limits<float>::max(), 0.0f, -0.0f, -1.0f, -1e-40f, inf, -inf, NAN})
    x.push_back(v);
  std::vector<float> y = apply_unary(kernel::ExprOp::kLog, x);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || x[i] < 0.0f) {
      EXPECT_TRUE(std::isnan(y[i])) << "x = " << x[i];
    } else if (x[i] == 0.0f || x[i] == inf) {
      EXPECT_EQ(y[i], x[i] == 0.0f ? -inf : inf) << "x = " << x[i];
    } else {
      double want = std::log(static_cast<double>(x[i]));
      float rounded = static_cast<float>(want);
      double ulp = std::nextafter(std::abs(rounded), inf) - std::abs(rounded);
      EXPECT_LE(std::abs(y[i] - want), ulp) << "x = " << x[i];
    }
  }
}

// weft_tanh (vectorizable, prelude) against float64 tanh on every x86 instruction set: within
// 1.5 ulp of the exact value over every 1021st float's bits, both signs (denormals, the cut
// at 0.625, the cap at 9.5), +-1 from 9.5 and at +-inf, -0 kept, NaN through.
TEST_F(CpuKernels, TanhMatchesFloat64Reference) {
  std::vector<float> x;
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 1021) {
    float v;
    std::memcpy(&v, &bits, 4);
    x.push_back(v);
    x.push_back(-v);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v :
       {0.0f, -0.0f, 0.6249999f, 0.625f, -0.625f, 9.4999995f, 9.5f, 44.0f, inf, -inf, NAN})
    x.push_back(v);
#if defined(__x86_64__)
  const std::vector<const char*> arches(std::begin(kInstructionSets), std::end(kInstructionSets));
#else
  const std::vector<const char*> arches = {"-march=native"};
#endif
  for (const char* arch : arches) {
    std::vector<float> y = apply_unary(kernel::ExprOp::kTanh, x, arch);
    ASSERT_EQ(y.size(), x.size()) << arch;
    for (size_t i = 0; i < x.size(); ++i) {
      double want = std::tanh(static_cast<double>(x[i]));
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << arch;
      } else if (std::abs(x[i]) >= 9.5f || want == 0) {
        EXPECT_EQ(y[i], static_cast<float>(want)) << arch << ": x = " << x[i];
        EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i])) << arch << ": x = " << x[i];
      } else {
        // The spacing of floats at the exact value (below 1: 2^-24).
        double ulp = std::ldexp(1.0, std::max(std::ilogb(want), -126) - 23);
        ASSERT_LE(std::abs(y[i] - want), 1.5 * ulp) << arch << ": x = " << x[i];
      }
    }
  }
}

// Sin, Cos, Tan, their inverses, the hyperbolic functions and theirs in f32, which the
// prelude declares as glibc's vector forms (libmvec): within 4 ulp of float64 over the floats
// (every 65,521st bit pattern, both signs) and at the edges, overflow to inf and NaN as
// float64 rounds them; with GCC on x86-64 glibc, the library calls those vector forms
// (names that start with _ZGV) instead of a scalar call per element.
TEST_F(CpuKernels, TrigonometricAndHyperbolicFunctionsMatchFloat64Reference) {
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65521) {
    float v;
    uint32_t u = static_cast<uint32_t>(bits);
    std::memcpy(&v, &u, 4);
    x.push_back(v);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-30f, 1.5707964f, 3.1415927f, 88.7f, 89.5f,
                  1e5f, 1e30f, -3.4e38f, inf, -inf, NAN})
    x.push_back(v);
  using kernel::ExprOp;
  const std::pair<ExprOp, double (*)(double)> functions[] = {
      {ExprOp::kSin, std::sin},     {ExprOp::kCos, std::cos},    {ExprOp::kTan, std::tan},
      {ExprOp::kAsin, std::asin},   {ExprOp::kAcos, std::acos},  {ExprOp::kAtan, std::atan},
      {ExprOp::kSinh, std::sinh},   {ExprOp::kCosh, std::cosh},  {ExprOp::kAsinh, std::asinh},
      {ExprOp::kAcosh, std::acosh}, {ExprOp::kAtanh, std::atanh}};
  for (auto [op, reference] : functions) {
    std::vector<float> y = apply_unary(op, x);
    ASSERT_EQ(y.size(), x.size()) << kernel::expr_op_name(op);
    int wrong = 0;
    for (size_t i = 0; i < x.size() && wrong < 5; ++i) {
      double want = reference(static_cast<double>(x[i]));
      float rounded = static_cast<float>(want);
      bool ok;
      if (std::isnan(want)) {
        ok = std::isnan(y[i]);
      } else if (std::isinf(rounded)) {
        ok = y[i] == rounded;
      } else {
        double ulp = std::max(double{std::nextafter(std::abs(rounded), inf) - std::abs(rounded)},
                              double{std::numeric_limits<float>::denorm_min()});
        ok = std::abs(y[i] - want) <= 4 * ulp;
      }
      if (!ok) ++wrong;
      EXPECT_TRUE(ok) << kernel::expr_op_name(op) << "(" << x[i] << ") = " << y[i] << ", float64 "
                      << want;
    }
  }
#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__clang__)
  int vector_forms = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(compiler_.cache_dir)) {
    if (e.path().extension() != ".so") continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    vector_forms += bytes.find("_ZGV") != std::string::npos;
  }
  EXPECT_EQ(vector_forms, std::size(functions));
#endif
}

// A Transpose in 16 x 16 tiles, y[i, j] = x[j, i], with partial tiles at both edges, built for
// each x86 instruction set that weft_store_transposed16 has a path for (AVX-512, AVX, none):
// each stores every element where the reference does.
TEST_F(CpuKernels, TransposingTilesMatchOnEveryInstructionSet) {
#if defined(__x86_64__)
  const int64_t rows = 1030, columns = 250;
  kernel::Kernel k = testing::copy_kernel(rows, columns, true);
  std::vector<float> x = random(static_cast<size_t>(rows * columns), 11);
  for (const char* arch : kInstructionSets) {
    std::string source;
    KernelFn fn = build_for(k, arch, &source);
    ASSERT_NE(fn, nullptr) << arch;
    EXPECT_NE(source.find("weft_store_transposed16(&b1["), std::string::npos) << source;
    std::vector<float> y(static_cast<size_t>(rows * columns), NAN);
    void* buffers[] = {x.data(), y.data()};
    fn(buffers, nullptr);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) {
        ASSERT_EQ(y[static_cast<size_t>(r * columns + c)], x[static_cast<size_t>(c * rows + r)])
            << arch << ": y[" << r << ", " << c << "]";
      }
    }
  }
#else
  GTEST_SKIP() << "x86 only";
#endif
}

// y = Cast(x, f16) + h over [3, 1037] (x f32; h and y f16), in blocks of 16 with a tail of 13,
// built for each x86 instruction set that the blocks' conversions have a path for (AVX-512,
// F16C, none): every element equals the host's conversions (half to even, overflow to inf,
// denormals), NaN where they give NaN.
TEST_F(CpuKernels, HalfBlocksMatchOnEveryInstructionSet) {
#if defined(__x86_64__)
  const int64_t rows = 3, columns = 1037;
  kernel::Kernel k = testing::half_add_kernel(rows, columns);
  const size_t n = static_cast<size_t>(rows * columns);
  std::vector<float> x(n);
  std::vector<uint16_t> h(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> scale(-30, 18);
  for (size_t i = 0; i < n; ++i) {
    x[i] = normal(rng) * std::exp2(scale(rng));
    h[i] = static_cast<uint16_t>(rng()); // every pattern: denormals, inf and NaN among them
  }
  const float edges[] = {0.0f,     -0.0f,        0x1p-24f,     0x1p-25f, 0x3p-26f,
                         0x1p-14f, 1 + 0x1p-11f, 1 + 0x3p-11f, 65504,    65519.996f,
                         65520,    -65520,       1e10f,        INFINITY, NAN,
                         1e-40f,   -1e-40f,      2049,         2051};
  for (size_t i = 0; i < std::size(edges); ++i)
    x[i] = x[1500 + i] = edges[i];
  for (const char* arch : kInstructionSets) {
    std::string source;
    KernelFn fn = build_for(k, arch, &source);
    ASSERT_NE(fn, nullptr) << arch;
    EXPECT_NE(source.find("weft_h2f16(&b1["), std::string::npos) << source;
    std::vector<uint16_t> y(n, 0);
    void* buffers[] = {x.data(), h.data(), y.data()};
    fn(buffers, nullptr);
    for (size_t i = 0; i < n; ++i) {
      float sum = half_to_float(float_to_half(x[i])) + half_to_float(h[i]);
      uint16_t want = float_to_half(sum);
      if (std::isnan(sum))
        ASSERT_TRUE(std::isnan(half_to_float(y[i]))) << arch << ": y[" << i << "]";
      else
        ASSERT_EQ(y[i], want) << arch << ": y[" << i << "] for x " << x[i] << ", h " << h[i];
    }
  }
#else
  GTEST_SKIP() << "x86 only";
#endif
}

TEST_F(CpuKernels, CompilerFailureNamesCommandAndLog) {
  Result<toolchain::CompiledLibrary> lib = toolchain::compile_cpu("this is not C++", compiler_);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("-fopenmp"), std::string::npos) << lib.status().message();
  EXPECT_NE(lib.status().message().find(".log"), std::string::npos) << lib.status().message();
}

// A library of several functions built as translation units at once (each the precompiled
// prelude and a share of the functions) links into one library whose functions all run; its
// cache entry is that of the whole source. A unit that fails names its command and log.
TEST_F(CpuKernels, FunctionsInSeveralUnitsLinkIntoOneLibrary) {
  std::vector<kernel::Kernel> kernels;
  for (int i = 0; i < 3; ++i) {
    kernels.push_back(testing::bias_add_kernel(Dim(4), Dim(8 + i)));
    kernels.back().name = fmt::format("bias_add_{}", i);
  }
  std::string prelude = codegen::emit_prelude(codegen::Dialect::kCpu), whole = prelude;
  std::vector<std::string> functions;
  for (const kernel::Kernel& k : kernels) {
    Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    Result<std::string> src = codegen::emit_kernel(k, s->loops, codegen::Dialect::kCpu);
    ASSERT_TRUE(src.ok()) << src.status().to_string();
    functions.push_back(src->substr(src->find("// kernel")));
    whole += "\n" + functions.back();
  }
  Result<toolchain::CompiledLibrary> lib = toolchain::compile_cpu(prelude, functions, compiler_, 3);
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  EXPECT_FALSE(lib->cache_hit);
  Result<std::shared_ptr<KernelLibrary>> loaded = KernelLibrary::load(lib->path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  for (int i = 0; i < 3; ++i) {
    Result<KernelFn> fn = (*loaded)->function(kernels[static_cast<size_t>(i)].name);
    ASSERT_TRUE(fn.ok()) << fn.status().to_string();
    size_t cols = static_cast<size_t>(8 + i);
    std::vector<float> x = random(4 * cols, 7), b = random(cols, 8), z(4 * cols);
    void* buffers[] = {x.data(), b.data(), z.data()};
    (*fn)(buffers, nullptr);
    for (size_t e = 0; e < z.size(); ++e)
      ASSERT_EQ(z[e], x[e] + b[e % cols]) << i << ": " << e;
  }
  // The units included the prelude's header, precompiled beside it in the cache.
  size_t precompiled = 0;
  for (const auto& entry : fs::directory_iterator(compiler_.cache_dir)) {
    std::string name = entry.path().filename().string();
    precompiled += name.starts_with("prelude-") && name.ends_with(".h.gch");
  }
  EXPECT_EQ(precompiled, 1u);
  Result<toolchain::CompiledLibrary> again = toolchain::compile_cpu(whole, compiler_);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->path, lib->path);

  functions[1] += "\nthis is not C++\n";
  Result<toolchain::CompiledLibrary> broken =
      toolchain::compile_cpu(prelude, functions, compiler_, 3);
  ASSERT_FALSE(broken.ok());
  const std::string& message = broken.status().message();
  EXPECT_NE(message.find(" -c "), std::string::npos) << message;
  EXPECT_NE(message.find(".log"), std::string::npos) << message;
}

} // namespace
} // namespace weft::runtime
