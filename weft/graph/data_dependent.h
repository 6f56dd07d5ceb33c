// Ops whose output shapes depend on their input values: NonZero, Unique,
// NonMaxSuppression, Compress with a computed condition, and If with a computed condition
// (Weft's If takes the condition, the then-branch outputs and the else-branch outputs, and
// passes one set through; the importer puts both branches in the graph).
//
// Kernels are generated for static shapes, so these ops run on the host, between stages of
// a model (docs/data-dependent-shapes.md): a stage computes their inputs, evaluate_on_host
// computes their outputs, and the stage after them is compiled for those outputs.
#pragma once

#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Does "node" need its input values to know its output shapes?
bool is_data_dependent(const Node& node);

// Does the host op "node" need the value of input "i"? If needs only its condition, Loop
// its trip count and condition.
bool needs_value(const Node& node, size_t i);

// For If with a constant condition: the input each output passes through.
std::vector<Value*> chosen_branch(const Node& node);

// One step of a Loop whose trip count and condition are constant: either one more
// iteration of its body goes into the graph before it (its inputs then name that
// iteration's results), or the loop is over and its outputs are replaced by the carried
// values and the concatenated scan values ("finished"; the node is then unused).
Status unroll_loop_step(Graph& graph, Node& loop, bool* finished);

// Scan, once the extent of its scan axis is static: every iteration of the body goes into the
// graph before it, and its outputs are replaced by the last states and the stacked scan
// values (the node is then unused).
Status unroll_scan(Graph& graph, Node& scan);

// The outputs of "node" (is_data_dependent, not If, Loop or Scan), every present input of which
// is constant.
// Fails on inputs the op rejects, naming them.
Result<std::vector<Tensor>> evaluate_on_host(const Node& node);

// Shape functions (see shape_functions.h): the data-dependent extents are unknown.
Result<std::vector<TensorType>> infer_non_zero(const Node& node);
Result<std::vector<TensorType>> infer_unique(const Node& node);
Result<std::vector<TensorType>> infer_non_max_suppression(const Node& node);
Result<std::vector<TensorType>> infer_if(const Node& node);
Result<std::vector<TensorType>> infer_loop(const Node& node);
Result<std::vector<TensorType>> infer_scan(const Node& node);

} // namespace weft
