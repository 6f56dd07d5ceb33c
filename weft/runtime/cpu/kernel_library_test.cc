// Generated kernels, compiled by the system compiler and loaded with dlopen, against a
// float64 reference.
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/testing/kernels.h"
#include "weft/codegen/compile_cpu.h"
#include "weft/codegen/emit_c.h"
#include "weft/kernel/kernel.h"
#include "weft/poly/schedule_kernel.h"
#include "weft/runtime/cpu/kernel_library.h"

namespace weft::runtime {
namespace {

namespace fs = std::filesystem;

class CpuKernels : public ::testing::Test {
protected:
  void SetUp() override {
    compiler_ = codegen::CpuCompiler::from_environment();
    compiler_.cache_dir =
        (fs::temp_directory_path() / ("weft_cache_test_" + std::to_string(::getpid()))).string();
  }
  void TearDown() override { fs::remove_all(compiler_.cache_dir); }

  KernelFn build(const kernel::Kernel& k, bool* cache_hit = nullptr) {
    Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    Result<std::string> src = codegen::emit_kernel(k, s->loops, codegen::Dialect::kCpu);
    EXPECT_TRUE(src.ok()) << src.status().to_string();
    Result<codegen::CompiledLibrary> lib = codegen::compile_cpu(*src, compiler_);
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

  static std::vector<float> random(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(n);
    for (float& x : v)
      x = dist(rng);
    return v;
  }

  codegen::CpuCompiler compiler_;
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

// The generated f32 exp (a vectorizable polynomial, not libm) against float64 exp: within
// 2 ulp where the result is normal, exact at overflow, underflow, infinities and NaN.
TEST_F(CpuKernels, ExpMatchesFloat64Reference) {
  std::vector<float> x;
  for (double v = -110; v <= 95; v += 0.0137)
    x.push_back(static_cast<float>(v));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, 88.73f, -87.33f, -103.9f, inf, -inf, NAN})
    x.push_back(v);
  kernel::Kernel k;
  k.name = "exp_f32";
  k.buffers = {{"x", DType::kF32, {static_cast<int64_t>(x.size())}, kernel::BufferRole::kInput},
               {"y", DType::kF32, {static_cast<int64_t>(x.size())}, kernel::BufferRole::kOutput}};
  kernel::Statement st;
  st.name = "exp";
  st.domain = {static_cast<int64_t>(x.size())};
  st.write = {1, {kernel::AffineExpr::iterator(0)}};
  st.reads = {{0, {kernel::AffineExpr::iterator(0)}}};
  st.expr = {{kernel::ExprOp::kLoad, DType::kF32, {}, 0, 0},
             {kernel::ExprOp::kExp, DType::kF32, {0}, -1, 0}};
  k.statements = {st};
  KernelFn fn = build(k);
  ASSERT_NE(fn, nullptr);
  std::vector<float> y(x.size());
  void* buffers[] = {x.data(), y.data()};
  fn(buffers, nullptr);
  for (size_t i = 0; i < x.size(); ++i) {
    float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(y[i], want) << "x = " << x[i];
    } else if (want < std::numeric_limits<float>::min()) { // subnormal results
      EXPECT_NEAR(y[i], want, 4 * std::numeric_limits<float>::denorm_min()) << "x = " << x[i];
    } else {
      EXPECT_NEAR(y[i], want, 2.5e-7 * want) << "x = " << x[i];
    }
  }
}

TEST_F(CpuKernels, CompilerFailureNamesCommandAndLog) {
  Result<codegen::CompiledLibrary> lib = codegen::compile_cpu("this is not C++", compiler_);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("-fopenmp"), std::string::npos) << lib.status().message();
  EXPECT_NE(lib.status().message().find(".log"), std::string::npos) << lib.status().message();
}

} // namespace
} // namespace weft::runtime
