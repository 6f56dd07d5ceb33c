// The kernel IR's text form, both ways: print_kernel (kernel.h; print_kernel.cc) writes it,
// parse_kernel (parse_kernel.cc) reads it back. The grammar is in docs/ir.md.
//
// Guarantees: for a kernel "k" whose buffer names are distinct, parse_kernel(print_kernel(k))
// succeeds and has no kernel_difference with "k" (for a kernel that verifies).
// Shared expression nodes, and nodes whose order a nested infix expression cannot give, are
// bound by "let %N = ..." lines, N the node's index; a node's dtype is written (":f64") only
// where the rules below do not give it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "weft/kernel/kernel.h"
#include "weft/support/status.h"

namespace weft::kernel {

// The kernel that "text" spells (one kernel; blank lines and lines starting with '#' are
// skipped), verified. An error names the line and column and what was expected there.
Result<Kernel> parse_kernel(std::string_view text);

// The first difference between "a" and "b" in words, or an empty string when they are
// structurally equal: every field that has a meaning, which for an expression node is its
// op, dtype and operands, plus its access (loads, iterators), value (constants; NaNs of
// one sign are equal) or extent (extents).
std::string kernel_difference(const Kernel& a, const Kernel& b);

// ---- The rules the printer and the parser share.

// The spelling of a binary op written infix ("+", "<=", ...); empty for ops written as calls.
std::string_view expr_op_infix(ExprOp op);
// The spelling of a statement's combine: "=", "+=", "*=", "max=", "min=", "shiftmax=".
std::string_view combine_spelling(Combine c);
// The dtype a node of "op" has when the text does not write it, from its operands' dtypes
// and, for a load, the buffer's: bool for comparisons, isnan and isinf; i64 for iterators;
// the second operand's for a select; the first operand's otherwise. Nullopt for a cast (its
// dtype is its spelling) and for constants and extents, which take it from where they stand
// (context_dtype).
std::optional<DType> natural_dtype(ExprOp op, const std::vector<DType>& operands,
                                   DType buffer_dtype);
// The dtype an unannotated constant or extent takes as operand "position" of "parent" when
// its sibling operand has dtype "sibling" (nullopt: unknown): the sibling's, in a binary op
// or between a select's two values; bool as a select's condition; nullopt elsewhere (then
// the text writes it, except for the stored value, which has the written buffer's dtype).
std::optional<DType> context_dtype(ExprOp parent, int position, std::optional<DType> sibling);
// Characters of a bare name (which starts with a letter or '_'), and of a bare symbol.
bool is_name_char(char c);
bool is_symbol_char(char c);
// The operand position whose dtype context_dtype takes for "position" of "parent", or -1.
int context_sibling(ExprOp parent, int position);

} // namespace weft::kernel
