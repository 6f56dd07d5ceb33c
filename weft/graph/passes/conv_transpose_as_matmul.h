// conv_transpose_as_matmul: a ConvTranspose whose kernel equals its strides (a U-Net's 2x2,
// stride 2 upsampling) as a matrix product and a pixel shuffle.
//
// Such a ConvTranspose's windows do not overlap: each input pixel's C channels, times the
// [C, M x kh x kw] weights, give the kh x kw block of output pixels it alone writes. oneDNN
// runs it as a deconvolution at a third of the machine's peak (1.7-1.9 ms of a U-Net's 19 at
// 256x256, 2 cores), a matrix product at all of it (0.57 ms). For the CPU's library calls,
// before channels_last (which then keeps the product's input and the shuffle channels-last):
//   y = Transpose(Reshape(Transpose(Reshape(MatMul(Transpose(x, NHWC), W'), [N, H, W, kh, kw,
//       M]), [0, 1, 3, 2, 4, 5]), [N, H*kh, W*kw, M]) + b, NCHW)
// with W' the constant weights as [C, kh * kw * M].
//
// Requires: a verified graph whose shapes are inferred (after specialize).
// Guarantees: the graph computes the same values (f32, 4-D, static shapes, constant weights,
// group 1, no pads, dilations or output padding; other ConvTransposes stay); returns whether
// it rewrote any.
#pragma once

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<bool> conv_transpose_as_matmul(Graph& graph);

} // namespace weft
