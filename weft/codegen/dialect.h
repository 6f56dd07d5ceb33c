// The per-dialect tables of the C-family emitter.
#pragma once

#include <string>
#include <string_view>

#include "weft/graph/dtype.h"
#include "weft/kernel/kernel.h"

namespace weft::codegen {

struct DialectTable {
  std::string prelude;                // helpers every kernel of the dialect may use
  std::string_view function_prefix;   // before "void NAME(...)"
  std::string_view parallel_for;      // the line before a parallel outermost loop (CPU)
  std::string_view parallel_for_simd; // the same, vectorized across its iterations (tiny rows)
  std::string_view parallel_for_2;    // the same, over two perfectly nested loops as one
  std::string_view simd_for;          // the line before an innermost dependence-free loop
  std::string_view simd_sum;          // the line before a loop summing into "acc"
  // Reductions take the CPU strategies of cpu_strategy.h (lanes, thread splits, cascades).
  bool cpu_reduction_strategies = false;
};

const DialectTable& cpu_dialect();
// CUDA C++ for NVRTC. A kernel is one __global__ function per top-level loop nest
// (emit_c.h); the generated code needs no header.
const DialectTable& cuda_dialect();

// C type a buffer of "t" is stored as, and the type arithmetic on it uses (f16 and bf16
// compute in float, bool in bool).
std::string_view storage_type(DType t);
std::string_view compute_type(DType t);

// The conversions between a stored element of "t" and its compute type: "weft_h2f(b0[i])"
// for f16, identity for f32. The sub-byte integers keep their low bits in storage.
std::string from_storage(DType t, const std::string& stored);
std::string to_storage(DType t, const std::string& value);

// "old" combined with "value" ("old + value", "weft_max(old, value)", ...).
std::string combine_expr(kernel::Combine c, const std::string& old, const std::string& value);

// The C spelling of "op" applied to "args" (already printed), computing in "t".
std::string apply_op(kernel::ExprOp op, DType t, const std::vector<std::string>& args);

// kMax or kMin of "x" and a float constant "bound" that is not NaN (a Relu's 0, a Clip's
// bounds): the value of weft_max(x, bound) or weft_min(x, bound), a NaN "x" kept and an
// equal "bound" chosen, in a compare and a blend.
std::string bound_by_constant(kernel::ExprOp op, const std::string& x, const std::string& bound);

} // namespace weft::codegen
