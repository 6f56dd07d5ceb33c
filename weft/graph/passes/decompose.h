// decompose: composite operators (most of the newer opsets) that Weft runs as the primitives
// they are defined by, for fusion to stitch back into as few kernels as the data flow allows.
//
//   RMSNormalization(x, s)   (23): y = x / sqrt(mean(x^2 over axis..) + eps) * s
//   GroupNormalization(x, s, b) (18, 21): per group of channels, (x - mean) / sqrt(var + eps),
//                            then s and b per group (18) or per channel (21)
//   Attention(q, k, v, ...)  (23-25): MatMul, scale, bias, Softmax, MatMul (attention() in
//                            decompose.cc has the details)
//   RotaryEmbedding(x, cos, sin, positions) (23): the rotated halves (or pairs) of each head
//   LpNormalization(x)       (1): x / ReduceL1 or ReduceL2, 0 where the norm is 0
//   CenterCropPad(x, shape)  (18): a centred Slice, then a Pad with zeros
//   LpPool(x)                (1-22): (AveragePool of |x|^p counting the padding * the window's
//                            size)^(1/p); ceil mode as explicit end padding
//   SwiGLU(a, b)             (28): Swish(a) * b
//   AffineGrid(theta, size)  (20): a base grid computed from size's values (folding to a
//                            constant once size is) MatMul theta transposed
//   TensorScatter(cache, update, write_indices) (24): a ScatterElements along the axis
//   STFT(signal, frame_step, window, frame_length) (17): gathered frames, windowed, then a DFT
//                            (decompose_signal.h)
//   MelWeightMatrix(...)     (17): the filters, elementwise from the band edges
//                            (decompose_signal.h)
//   TfIdfVectorizer(x) (9), and Binarizer, ArrayFeatureExtractor, TreeEnsemble of ai.onnx.ml:
//                            windows gathered and compared with the pool's n-grams; the trees
//                            walked one level per step over constant tables (decompose_ml.h)
//
// The statistics are taken in stash_type (f32), with casts around them for other inputs,
// as the ONNX function bodies do; for f64 inputs in f64, as ONNX Runtime's kernels do.
//
// Requires: the input's rank; static shapes for Attention, RotaryEmbedding, CenterCropPad,
// TensorScatter, TfIdfVectorizer, TreeEnsemble and LpPool in ceil mode; for AffineGrid, the
// length of size (the nodes stay as they are without them, until specialization gives them;
// lowering refuses what is left).
// Guarantees: the output values keep their names and types; the nodes are gone.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Status decompose(Graph& graph);

} // namespace weft
