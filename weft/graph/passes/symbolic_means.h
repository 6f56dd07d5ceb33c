// decompose_symbolic_means: in a dynamic-shape compile, a ReduceMean (or GlobalAveragePool)
// over an axis whose extent is a symbol becomes ReduceSum divided by the product of the reduced
// extents, which a Shape reads at run time (library::shape_call): a mean's own kernel divides by a
// count that the kernel IR holds only as a constant.
//
// Requires: a verified graph whose shapes are inferred.
// Guarantees: no f32 or f64 ReduceMean with known axes, nor GlobalAveragePool, reduces a
// symbolic dim. Returns whether
// any was decomposed.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> decompose_symbolic_means(Graph& graph);

} // namespace weft
