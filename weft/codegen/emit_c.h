// emit_c: one C-family emitter for scheduled kernels. Dialects (CPU C++ now, CUDA later)
// differ only in the tables of dialect.cc: type names, builtins, the kernel signature and
// the parallel-loop annotation.
//
// The emitted function has the ABI
//   extern "C" void NAME(void* const* buffers, const int64_t* extents);
// with the kernel's buffers in order, and its symbolic extents in kernel_symbols() order.
// Generated code is deterministic: stable names, no addresses, no timestamps.
#pragma once

#include <string>
#include <vector>

#include "weft/kernel/kernel.h"
#include "weft/poly/loop_ast.h"
#include "weft/support/status.h"

namespace weft::codegen {

enum class Dialect { kCpu };

// The symbolic extents a kernel's code takes as arguments, sorted by name.
std::vector<std::string> kernel_symbols(const kernel::Kernel& kernel);

// The helpers every kernel of "dialect" may use; a translation unit starts with it once.
std::string emit_prelude(Dialect dialect);
// The function of one kernel.
Result<std::string> emit_function(const kernel::Kernel& kernel, const poly::AstNode& loops,
                                  Dialect dialect);
// A translation unit holding one kernel: the prelude, then its function.
Result<std::string> emit_kernel(const kernel::Kernel& kernel, const poly::AstNode& loops,
                                Dialect dialect);

} // namespace weft::codegen
