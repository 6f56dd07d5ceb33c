// A MatMul of two activations over symbolic dims (attention's scores Q x K^T and its
// weighted sum P x V in a dynamic-shape compile) runs on oneDNN's sgemm, which takes its
// dims at each call, instead of a primitive built per set of extents: a decoding loop's past
// grows by one every step, and each new length cost two primitive builds per layer, about
// 150 us each, for products of a few microseconds (oneDNN 2.6's matmul over run-time dims is
// its reference kernel, 140x slower). Internal to library/; docs/library.md.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for "node" when it is an f32 MatMul of two non-constant operands of rank 2 or
// more with a symbolic dim, absorbing the Transposes of its operands and of its result that
// sgemm reads or writes through strides (a matrix's rows or columns contiguous); none
// otherwise. It absorbs no epilogue: attention's scale and mask fuse into the softmax after.
std::optional<LibraryCall> sgemm_call(const Node& node, const SoleReader& sole_reader,
                                      const std::function<bool(const Node*)>& free);

} // namespace weft::library
