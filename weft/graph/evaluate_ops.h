// The pieces evaluate.cc's evaluators share, and the evaluators of the indexing ops
// (evaluate_indexing.cc). Internal to weft/graph.
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

Outputs eval_gather(const Node& node);
Outputs eval_gather_nd(const Node& node);
Outputs eval_gather_elements(const Node& node);
Outputs eval_scatter_elements(const Node& node);
Outputs eval_scatter_nd(const Node& node);
Outputs eval_tile(const Node& node);

} // namespace weft::evaluate_ops
