#include "tests/testing/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <unistd.h>

#include "weft/codegen/emit_c.h"
#include "weft/poly/schedule_kernel.h"

namespace weft::testing {

namespace fs = std::filesystem;
using runtime::KernelFn;
using runtime::KernelLibrary;

void CpuKernels::SetUp() {
  compiler_ = toolchain::CpuCompiler::from_environment();
  compiler_.cache_dir =
      (fs::temp_directory_path() / ("weft_cache_test_" + std::to_string(::getpid()))).string();
}

void CpuKernels::TearDown() { fs::remove_all(compiler_.cache_dir); }

KernelFn CpuKernels::build(const kernel::Kernel& k, bool* cache_hit,
                           const codegen::CpuSchedule& schedule, std::string* source) {
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

KernelFn CpuKernels::build_for(const kernel::Kernel& k, const char* arch, std::string* source) {
  toolchain::CpuCompiler native = compiler_;
  std::replace(compiler_.flags.begin(), compiler_.flags.end(), std::string("-march=native"),
               std::string(arch));
  KernelFn fn = build(k, nullptr, {}, source);
  compiler_ = native;
  return fn;
}

std::vector<float> CpuKernels::random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float& x : v)
    x = dist(rng);
  return v;
}

void CpuKernels::check_exp(kernel::ExprOp op, float upper) {
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

std::vector<float> CpuKernels::apply_unary(kernel::ExprOp op, std::vector<float> x,
                                           const char* arch) {
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

} // namespace weft::testing
