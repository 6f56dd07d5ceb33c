// Small node-building steps shared by the decompositions (decompose.cc,
// decompose_sequence_models.cc).
#pragma once

#include <algorithm>
#include <string>

#include "weft/graph/node_builder.h"

namespace weft::decompose_builders {

// A scalar constant of "dtype".
inline Value* scalar(NodeBuilder& b, const std::string& what, DType dtype, double v) {
  Tensor t(dtype, {});
  t.set_double(0, v);
  return b.constant(what, std::move(t));
}

inline Value* shape_constant(NodeBuilder& b, const std::string& what, const Ints& dims) {
  return b.constant(what, Tensor::vector_i64(dims));
}

// "x" as "to", or "x" itself when it has that type.
inline Value* cast_to(NodeBuilder& b, Value* x, DType to) {
  return x->type.dtype == to ? x : b.op(Op::kCast, {x}, CastAttrs{to});
}

// The type a normalization of "x" takes its statistics in: stash_type, or f64 for an f64
// input. The spec's function bodies cast to stash_type (f32 by default) even from f64; ONNX
// Runtime's kernels and PyTorch keep f64, and an f64 model wants f64's precision.
inline DType statistics_type(DType stash_type, const Value* x) {
  return x->type.dtype == DType::kF64 ? DType::kF64 : stash_type;
}

// "x" reshaped to the constant "dims", spelled out: a 0 among them is an empty dim (allowzero,
// as reshape_to), unless a -1 is there too, which allowzero does not take.
inline Value* constant_shape(NodeBuilder& b, Value* x, const Ints& dims,
                             const std::string& what = "shape") {
  bool zero = std::find(dims.begin(), dims.end(), 0) != dims.end();
  bool inferred = std::find(dims.begin(), dims.end(), -1) != dims.end();
  return b.op(Op::kReshape, {x, shape_constant(b, what, dims)},
              ReshapeAttrs{zero && !inferred, {}, {}});
}

// "v" into "into" (an output of the decomposed node) when that is wanted.
inline void define(NodeBuilder& b, Value* v, Value* into) {
  if (into) b.op(Op::kIdentity, {v}, NoAttrs{}, into);
}

} // namespace weft::decompose_builders
