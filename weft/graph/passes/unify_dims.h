// unify_dims: in a dynamic-shape compile, two different dims that meet in a broadcast are
// taken to be equal. A KV-cache decoder's step gets its attention mask as [N, total], a
// symbol of its own, and its scores are [N, heads, T, P + T] (BLOOM's ALiBi bias, built
// from the mask, is added to them): the exporter cannot say that total is P + T.
//
// Where one of two dims meeting on a broadcast axis is a symbol of a graph input that the
// other does not contain, the graph takes the other dim for it everywhere: values' shapes,
// the graph inputs' types, the symbolic shapes of attributes and the dim limits. Each run
// then checks that the input's extent equals the dim it took (Executable::bind); a run
// where it does not (the mask's axis broadcast from 1, say) compiles for its own shapes.
// Where one of them is a difference M - P of such a symbol M (a Slice from a symbolic start
// to M: OPT's positions past the past length P of its mask of length M) and the other is T,
// M is taken to be T + P. Dims that an op requires to be equal (a Concat's inputs' off its
// axis, a MatMul's or Gemm's inner dims, a Conv's channels and bias, a normalization's
// per-channel inputs, RoiAlign's boxes of 4) are unified likewise, a static one included: a KV
// cache's past [N, 4, P, D] concatenated with the new keys [N, 4, T, 64] gives D = 64, so a
// run with another D compiles for its own shapes (and meets the model's error) rather than
// reading past the end of the past. A dim limit that requires an input's symbol to equal
// another dim (graph.dim_limits, kEqual: GroupNormalization's channels against its scale of
// one per channel, which its decomposition only broadcasts) unifies them too. And where the
// model declares a value's dim as an input's
// symbol and its node computes another dim over the inputs' symbols (ONNX Runtime GenAI's
// present [N, 4, total_sequence_length, 64], the mask's length, is the past's P + T), the
// symbol is taken to be the computed dim: the declared one sized the buffer that the node
// wrote P + T rows into. A computed input symbol takes a declared static dim likewise, and a
// declared static dim that the node computes as another expression is an error (the caller
// then compiles per shape).
//
// Requires: inferred shapes (a broadcast of two different symbols gives an unknown dim).
// Returns whether it unified any symbol; shapes must then be inferred again.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> unify_dims(Graph& graph);

} // namespace weft
