// Views of values in bound kernels, for fusion: lowering views one value with several
// shapes (a coalesced [256, 64] for [2, 128, 64]; a Reshape splits and merges dims), and
// inlining a producer into a reader needs the producer over the reader's view.
#pragma once

#include <optional>
#include <vector>

#include "weft/graph/shape.h"
#include "weft/kernel/lower_node.h"

namespace weft::fusion {

// "e" with each iterator j replaced by "sub[j]".
kernel::AffineExpr compose(const kernel::AffineExpr& e, const std::vector<kernel::AffineExpr>& sub);

// Every index of "s" (its reads, its write and its guards) composed with "sub".
void compose_indices(kernel::Statement& s, const std::vector<kernel::AffineExpr>& sub);

// The index of a buffer bound to "v" in "k" (a temporary never matches), or -1. With
// "shape", only a buffer of that view matches.
int buffer_of(const kernel::BoundKernel& k, const Value* v, const Shape* shape = nullptr);
// Adds a buffer to "k" (a unique name), bound to "v"; returns its index.
int add_buffer(kernel::BoundKernel& k, kernel::Buffer b, const Value* v);
// Drops buffers no access mentions, renumbering the rest.
void drop_unused_buffers(kernel::BoundKernel& k);
// Sets each aliased buffer's view_group to the first aliased buffer bound to its value.
void group_views(kernel::BoundKernel& k);
// Is "a" the identity over "rank" iterators (no indirect dims)?
bool is_identity(const kernel::Access& a, size_t rank);

// The common refinement of two static row-major shapes of one element count: the shape
// whose dims split both (each dim of either is the product of consecutive dims of it), e.g.
// [32, 8, 8, 56, 56] for [32, 8, 25088] and [32, 64, 56, 56]; none when their dim boundaries
// cross ([6, 4] and [4, 6]), a dim is symbolic, or there are no elements. Its dims are all
// above 1.
std::optional<Shape> common_refinement(const Shape& a, const Shape& b);

// The iterators of "shape" in terms of those of "fine", a refinement of it: each dim of
// "shape" covers consecutive dims of "fine", and its iterator is their row-major
// combination (a dim of extent 1 is the constant 0).
std::vector<kernel::AffineExpr> split_iterators(const Shape& shape, const Shape& fine);

// Elementwise producer "p" (one statement, identity write) computed over the row-major view
// "view" of its output (same element count, static): first over the common refinement of
// the two, where each of its iterators splits into several that index everything
// affinely, then over "view", which merges some of those. An index survives the merge when
// it uses each merged group of iterators only through the group's row-major position (an
// identity read, a per-channel operand kept whole, a constant); a read that is the
// identity over the output's shape becomes the identity over a view of its buffer. None
// when an index does not survive, or an expression uses an iterator. With symbols in
// either shape, "view" may only merge dims ([N, T, 64] as [N*T, 64]), and an index may use
// only iterators of dims that stay alone.
std::optional<kernel::BoundKernel> reviewed(const kernel::BoundKernel& p, const Shape& view);

} // namespace weft::fusion
