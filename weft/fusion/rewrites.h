// The rewrites of fuse() (fuse.h), one file each, and what they share. Internal to fusion/.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "weft/fusion/fuse.h"

namespace weft::fusion {

// The kernel IR names the rewrites use.
using kernel::Access;
using kernel::AffineExpr;
using kernel::BufferRole;
using kernel::ExprNode;
using kernel::ExprOp;
using kernel::Kernel;
using kernel::Statement;

// A producer whose expression is this large is not inlined again: chains are cut into
// kernels of bounded size (then stitched), which keeps planning linear.
constexpr size_t kMaxInlinedNodes = 64;

// 1. Producer inlining (inline_producers.cc): elementwise producers substituted into their
//    readers' expressions.
void inline_producers(std::vector<Step>& steps, const std::set<const Value*>& pinned,
                      std::vector<Decision>& decisions);
// 1b. The same through a Reshape (inline_through_aliases.cc): the reader rewritten over the
//     common refinement of the two shapes.
void inline_through_aliases(std::vector<Step>& steps, const std::set<const Value*>& kept,
                            std::vector<Decision>& decisions);
// 1c. Short inner dims (expand_operands.cc): a statement whose innermost dim (at most 16) a
//     per-group operand broadcasts (a channels-last GroupNorm's [S, G, C/G] reading its
//     statistics per G) runs over that dim merged with the one outside it, the operand
//     copied along it first ([G, C/G], a few hundred elements), so that its loop is long and
//     contiguous. The kernel's statement "si" (advanced past the copies inserted before it),
//     or each statement of the kernel; returns whether "si" changed.
bool merge_short_inner_dims(kernel::BoundKernel& k, size_t& si);
void merge_short_inner_dims(kernel::BoundKernel& k);
// 2. Stitching (stitch.cc): memory-bound kernels joined with their neighbours, cut where
//    the statement budget says (an exact plan, segments.h).
void stitch(std::vector<Step>& steps, const std::set<const Value*>& pinned,
            std::vector<Decision>& decisions);
// 3. Accumulating in outputs (accumulate_in_outputs.cc).
void accumulate_in_outputs(kernel::BoundKernel& k);

// Shared by the rewrites (fuse.cc and inline_producers.cc).
int64_t points(const std::vector<Dim>& domain);
std::map<const Value*, std::vector<size_t>> readers(const std::vector<Step>& steps);
const Value* written_value(const FusedKernel& k);
std::optional<std::string> not_elementwise(const kernel::Kernel& k);
std::optional<std::string> inline_into(const kernel::BoundKernel& producer, kernel::BoundKernel& c,
                                       const Value* v);

} // namespace weft::fusion
