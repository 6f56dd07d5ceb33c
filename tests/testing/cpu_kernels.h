// A test fixture that builds generated kernels with the system compiler, as the CPU runtime
// does, and loads them; shared by the tests of CPU code generation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weft/codegen/cpu_schedule.h"
#include "weft/kernel/kernel.h"
#include "weft/runtime/cpu/kernel_library.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::testing {

class CpuKernels : public ::testing::Test {
protected:
  // A kernel cache of the test process's own, removed after each test.
  void SetUp() override;
  void TearDown() override;

  // "k" scheduled, emitted for the CPU, built and loaded; null (with a test failure) where a
  // step fails. "cache_hit" says whether the library came from the cache, "source" gets the
  // generated C++.
  runtime::KernelFn build(const kernel::Kernel& k, bool* cache_hit = nullptr,
                          const codegen::CpuSchedule& schedule = {}, std::string* source = nullptr);
  // "k" built with "-march=native" replaced by "arch" (one of kInstructionSets).
  runtime::KernelFn build_for(const kernel::Kernel& k, const char* arch, std::string* source);
  // The x86 instruction sets the prelude's vector helpers have paths for: AVX-512, AVX2
  // (with F16C), none.
  static constexpr const char* kInstructionSets[] = {"-march=native", "-march=haswell",
                                                     "-march=x86-64"};

  // "n" floats uniform in [-1, 1], from "seed".
  static std::vector<float> random(size_t n, uint32_t seed);

  // "op" (exp or shifted exp) at arguments up to "upper" against float64 exp (the test
  // ExpMatchesFloat64Reference says what it checks).
  void check_exp(kernel::ExprOp op, float upper);
  // y[i] = op(x[i]) in f32, built for "arch" and run; empty if the build failed.
  std::vector<float> apply_unary(kernel::ExprOp op, std::vector<float> x,
                                 const char* arch = "-march=native");

  toolchain::CpuCompiler compiler_;
  std::vector<std::shared_ptr<runtime::KernelLibrary>> libraries_;
};

} // namespace weft::testing
