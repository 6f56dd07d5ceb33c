// The pieces evaluate.cc's evaluators share, and the evaluators of the indexing ops
// (evaluate_indexing.cc) and of MatMul and Softmax (evaluate_products.cc). Internal to weft/graph.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft::evaluate_ops {

// An evaluator's result: its outputs, none where the node is left unfolded, or an error.
using Outputs = Result<std::vector<Tensor>>;

Outputs single(Tensor t);

// The constant of input "i".
inline const Tensor& arg(const Node& node, size_t i) { return *node.inputs[i]->constant; }

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// Copies the element at flat "from" of "src" to flat "to" of "dst" (same dtype).
void copy_element(const Tensor& src, int64_t from, Tensor& dst, int64_t to);

// Index into "in" (broadcast to "out_dims") of the element at flat "out_index".
int64_t broadcast_index(int64_t out_index, const std::vector<int64_t>& out_dims,
                        const std::vector<int64_t>& in_dims);

Outputs eval_gather(const Node& node);
Outputs eval_gather_nd(const Node& node);
Outputs eval_gather_elements(const Node& node);
Outputs eval_scatter_elements(const Node& node);
Outputs eval_scatter_nd(const Node& node);
Outputs eval_tile(const Node& node);
// evaluate_products.cc
Outputs eval_matmul(const Node& node);
Outputs eval_softmax(const Node& node);

} // namespace weft::evaluate_ops
