// emit_c: one C-family emitter for scheduled kernels. Dialects (CPU C++, CUDA) differ in the
// tables of dialect.cc (prelude, function prefix, loop annotations) and in how a kernel's
// top-level loop nests become functions.
//
// The emitted function has the ABI
//   extern "C" void NAME(void* const* buffers, const int64_t* extents);
// with the kernel's buffers in order, and its symbolic extents in kernel_symbols() order.
// Generated code is deterministic: stable names, no addresses, no timestamps.
#pragma once

#include <string>
#include <vector>

#include "weft/codegen/cpu_strategy.h"
#include "weft/codegen/cuda_strategy.h"
#include "weft/kernel/kernel.h"
#include "weft/poly/loop_ast.h"
#include "weft/runtime/cuda/launch.h"
#include "weft/support/status.h"

namespace weft::codegen {

// kCpu: C++17 with OpenMP, one function per kernel, for the system compiler.
// kCuda: CUDA C++ for NVRTC, one __global__ function per top-level loop nest of a kernel,
// "weft_NAME_p0", "weft_NAME_p1", ... (numbers may skip: an init folds into the next part),
// to be launched in that order. They take the buffers, then the symbolic extents, by value:
//   extern "C" __global__ void weft_NAME_pI(float* b0, const float* b1, ..., int64_t s0, ...);
// Each follows a line "// launch weft_NAME_pI block=B grid=G": B threads per block, and G
// blocks: "1", or "device" for a persistent grid the runtime sizes to the device (at most
// kCudaMaxGrid blocks; cuda_strategy.h). The line is for readers: the runtime takes the
// same as data (EmittedFunction::launches).
enum class Dialect { kCpu, kCuda };

// The symbolic extents a kernel's code takes as arguments, sorted by name.
std::vector<std::string> kernel_symbols(const kernel::Kernel& kernel);

// The helpers every kernel of "dialect" may use; a translation unit starts with it once.
std::string emit_prelude(Dialect dialect);
struct EmittedFunction {
  std::string source;
  // CUDA: how to launch each __global__ function of "source", in order (the "// launch"
  // lines say the same to a reader); CPU: none.
  std::vector<runtime::cuda::LaunchShape> launches;
};

// The function of one kernel; "schedule" sets the CPU skeletons' knobs, "cuda" the CUDA
// strategies' options.
Result<EmittedFunction> emit_function(const kernel::Kernel& kernel, const poly::AstNode& loops,
                                  Dialect dialect, const CpuSchedule& schedule = {},
                                  const CudaOptions& cuda = {});
// A translation unit holding one kernel: the prelude, then its function.
Result<std::string> emit_kernel(const kernel::Kernel& kernel, const poly::AstNode& loops,
                                Dialect dialect, const CpuSchedule& schedule = {},
                                const CudaOptions& cuda = {});

} // namespace weft::codegen
