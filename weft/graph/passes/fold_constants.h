// fold_constants: evaluates nodes whose inputs are all constant.
//
// Requires: a verified graph.
// Guarantees: no Constant node remains; Shape and Size of values with static shapes are
// constants; every other node that evaluate.h can fold and whose inputs are constant is
// replaced by its outputs as constants, unless an output would exceed kMaxFoldedElements
// (large constants are left to the generated kernels). Exporters' shape subgraphs
// (Shape -> Gather -> Concat -> Reshape, ConstantOfShape, Range) fold completely when the
// shapes they read are static.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

Status fold_constants(Graph& graph);

} // namespace weft
