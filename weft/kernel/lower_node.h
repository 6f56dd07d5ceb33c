// lower_node: one graph node into kernels (or an alias), until fusion groups nodes.
//
// Requires: canonicalized attributes, static shapes on the node's values.
// Guarantees: each kernel verifies; each kernel buffer is bound to the graph value it holds
// (or to nothing, for a temporary). Reductions go through coalesce_reduction and use one
// canonical form per step; f16 and bf16 accumulate in f32.
#pragma once

#include <string>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/kernel/kernel.h"
#include "weft/support/status.h"

namespace weft::kernel {

// A kernel and the graph value each of its buffers holds (null: a temporary). A buffer's
// shape may be a view of its value (same elements, row-major, e.g. folded axes).
struct BoundKernel {
  Kernel kernel;
  std::vector<const Value*> values;
};

struct LoweredNode {
  std::vector<BoundKernel> kernels; // run in order
  const Value* alias_of = nullptr;  // set instead when the output is the input's bytes
};

Result<LoweredNode> lower_node(const Node& node, const std::string& kernel_name);

// Does lower_node handle "node" (its op, and its attribute forms)?
bool can_lower(const Node& node);

// Does every window of average pooling "node" (AveragePool or its channels-last form, over
// static shapes) count all its taps: none that ceil_mode runs past the padding, and no padding
// at all unless count_include_pad counts it?
bool pool_counts_every_tap(const Node& node);

} // namespace weft::kernel
