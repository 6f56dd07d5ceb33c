// Generated kernels, compiled by the system compiler and loaded with dlopen, against a
// float64 reference.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include "tests/testing/kernels.h"
#include "weft/codegen/emit_c.h"
#include "weft/kernel/kernel.h"
#include "weft/poly/schedule_kernel.h"
#include "weft/runtime/cpu/kernel_library.h"
#include "weft/support/float16.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::runtime {
namespace {

namespace fs = std::filesystem;

class CpuKernels : public ::testing::Test {
protected:
  void SetUp() override {
    compiler_ = toolchain::CpuCompiler::from_environment();
    compiler_.cache_dir =
        (fs::temp_directory_path() / ("weft_cache_test_" + std::to_string(::getpid()))).string();
  }
  void TearDown() override { fs::remove_all(compiler_.cache_dir); }

  KernelFn build(const kernel::Kernel& k, bool* cache_hit = nullptr,
                 const codegen::CpuSchedule& schedule = {}, std::string* source = nullptr) {
    Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    Result<std::string> src = codegen::emit_kernel(k, s->loops, codegen::Dialect::kCpu, schedule);
    EXPECT_TRUE(src.ok()) << src.status().to_string();
    if (source && src.ok()) *source = *src;
    Result<toolchain::CompiledLibrary> lib = toolchain::compile_cpu(*src, compiler_);
    EXPECT_TRUE(lib.ok()) << lib.status().to_string();
    if (!lib.ok()) return nullptr;
    if (cache_hit) *cache_hit = lib->cache_hit;
    Result<std::shared_ptr<KernelLibrary>> loaded = KernelLibrary::load(lib->path);
    EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
    libraries_.push_back(*loaded);
    Result<KernelFn> fn = (*loaded)->function(k.name);
    EXPECT_TRUE(fn.ok()) << fn.status().to_string();
    return fn.ok() ? *fn : nullptr;
  }

  // "k" built with "-march=native" replaced by "arch" (one of kInstructionSets).
  KernelFn build_for(const kernel::Kernel& k, const char* arch, std::string* source) {
    toolchain::CpuCompiler native = compiler_;
    std::replace(compiler_.flags.begin(), compiler_.flags.end(), std::string("-march=native"),
                 std::string(arch));
    KernelFn fn = build(k, nullptr, {}, source);
    compiler_ = native;
    return fn;
  }
  // The x86 instruction sets the prelude's vector helpers have paths for: AVX-512, AVX2
  // (with F16C), none.
  static constexpr const char* kInstructionSets[] = {"-march=native", "-march=haswell",
                                                     "-march=x86-64"};

  static std::vector<float> random(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(n);
    for (float& x : v)
      x = dist(rng);
    return v;
  }

  // y[i] = op(x[i]) in f32, built and run; empty if the build failed.
  // "op" (exp or shifted exp) at arguments up to "upper" against float64 exp (the test
  // ExpMatchesFloat64Reference says what it checks).
  void check_exp(kernel::ExprOp op, float upper) {
    std::vector<float> x;
    const float inf = std::numeric_limits<float>::infinity();
    for (double v = -110; v <= 95; v += 0.0137)
      x.push_back(static_cast<float>(v));
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, 88.73f, -87.33f, -103.9f, -104.0f, -1e9f,
                    -3.4e38f, 3.4e38f, inf, -inf, NAN})
      x.push_back(v);
    std::erase_if(x, [&](float v) { return v > upper; });
    std::vector<float> y = apply_unary(op, x);
    ASSERT_EQ(y.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i]));
      } else if (std::isinf(want) || want == 0.0f) {
        EXPECT_EQ(y[i], want) << "x = " << x[i];
      } else if (want < std::numeric_limits<float>::min()) { // flushed (dialect.cc)
        EXPECT_EQ(y[i], 0.0f) << "x = " << x[i];
      } else {
        EXPECT_NEAR(y[i], want, 2.5e-7 * want) << "x = " << x[i];
      }
    }
  }

  std::vector<float> apply_unary(kernel::ExprOp op, std::vector<float> x,
                                 const char* arch = "-march=native") {
    int64_t n = static_cast<int64_t>(x.size());
    kernel::Kernel k;
    k.name = fmt::format("unary_f32_{}", static_cast<int>(op));
    k.buffers = {{"x", DType::kF32, {n}, kernel::BufferRole::kInput},
                 {"y", DType::kF32, {n}, kernel::BufferRole::kOutput}};
    kernel::Statement st;
    st.name = std::string(kernel::expr_op_name(op));
    st.domain = {n};
    st.write = {1, {kernel::AffineExpr::iterator(0)}};
    st.reads = {{0, {kernel::AffineExpr::iterator(0)}}};
    st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0, 0}, {op, DType::kF32, {0}, -1, 0}};
    k.statements = {st};
    KernelFn fn = build_for(k, arch, nullptr);
    if (!fn) return {};
    std::vector<float> y(x.size());
    void* buffers[] = {x.data(), y.data()};
    fn(buffers, nullptr);
    return y;
  }

  toolchain::CpuCompiler compiler_;
  std::vector<std::shared_ptr<KernelLibrary>> libraries_;
};

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
