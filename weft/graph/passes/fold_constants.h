// fold_constants: evaluates nodes whose inputs are all constant.
//
// Requires: a verified graph.
// Guarantees: no Constant node remains; Shape and Size of values with static shapes are
// constants; every other node that evaluate.h can fold and whose inputs are constant is
// replaced by its outputs as constants, unless an output would exceed kMaxFoldedElements
// (large constants are left to the generated kernels: a fill or a mask computed in the
// kernel that reads it costs no memory traffic). Gathers from constant tables fold up to
// kMaxFoldedMovedElements: computed at run time they move as many bytes as the constant they
// make (Swin3D's relative-position bias, a GatherND of 115K elements from a 7.6K table by a
// slice of a 154K index, ran every inference). Slices, Transposes and reshapes of constants,
// which make no more elements than they read, fold at any size (ALBERT's shared weights,
// each transposed for 12 MatMuls, were transposed every inference: 0.5 GB a run), and so
// does any result of no more bytes than a constant it reads (a weight normalized by
// weight_norm), and a DequantizeLinear or Cast that only convolutions and matrix products
// read as their weights (a QDQ model's int8 weights, an f16 model's weights cast by
// narrow_in_f32: the library packs f32 weights once).
// Exporters' shape subgraphs (Shape -> Gather -> Concat -> Reshape, ConstantOfShape, Range)
// fold completely when the shapes they read are static.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;
inline constexpr int64_t kMaxFoldedMovedElements = int64_t{1} << 22;

Status fold_constants(Graph& graph);

} // namespace weft
