// Control flow: If, Loop and Scan, as the importer gives them (docs/data-dependent-shapes.md).
//
// - If takes the condition, the then-branch outputs and the else-branch outputs (both
//   branches are imported into the graph) and passes one set through.
// - Loop takes [M, cond, carried..., captured..., the scan values of the iterations unrolled
//   so far]; its body is a graph of its own (LoopAttrs).
// - Scan takes [states..., scan inputs..., captured...] (ScanAttrs).
// They are host ops (data_dependent.h) that rewrite the graph rather than compute values,
// except a Loop that runs on the host (loop_runs_on_host), which computes its outputs.
#pragma once

#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// For If with a constant condition: the input each output passes through.
Result<std::vector<Value*>> chosen_branch(const Node& node);
// The nodes of a branch that an If took now run: they are no longer conditional
// (Node::conditional). The walk back from the branch's outputs stops at nodes outside
// branches, and at a nested If's branches, which stay conditional on that If.
void mark_taken(const std::vector<Value*>& outputs);

// One step of a Loop whose trip count and condition are constant: either one more
// iteration of its body goes into the graph before it (its inputs then name that
// iteration's results), or the loop is over and its outputs are replaced by the carried
// values and the concatenated scan values ("finished"; the node is then unused).
Status unroll_loop_step(Graph& graph, Node& loop, bool* finished);

// Does "loop" run on the host, one iteration at a time (run_loop_on_host), rather than unroll?
// It does when its body computes a shape operand from data (a value it carries or reads from
// outside, not only that value's shape: Mask R-CNN resizes each mask to its box's size), so
// that unrolled, each iteration's shapes would be known only at run time, and every node of
// its body evaluates on the host (evaluate.h, data_dependent.h; no control flow). Such a loop
// needs every input's value.
bool loop_runs_on_host(const Node& loop);

// The outputs of a Loop that runs on the host, every present input of which is constant: each
// iteration evaluates the body's nodes in order. Fails, naming the body's node, where one
// cannot be evaluated or rejects its inputs, and after 2^20 iterations.
Result<std::vector<Tensor>> run_loop_on_host(const Node& loop);

// Scan, once the extent of its scan axis is static: every iteration of the body goes into the
// graph before it, and its outputs are replaced by the last states and the stacked scan
// values (the node is then unused).
Status unroll_scan(Graph& graph, Node& scan);

// Shape functions (see shape_functions.h).
Result<std::vector<TensorType>> infer_if(const Node& node);
Result<std::vector<TensorType>> infer_loop(const Node& node);
Result<std::vector<TensorType>> infer_scan(const Node& node);

} // namespace weft
