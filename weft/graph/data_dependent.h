// Ops whose output shapes depend on their input values: NonZero, Unique,
// NonMaxSuppression and Compress with a computed condition; and the control flow of
// control_flow.h (If, Loop, Scan), host ops that rewrite the graph instead.
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
// its trip count and condition (every input, when it runs on the host: control_flow.h), Scan
// none (only static shapes).
bool needs_value(const Node& node, size_t i);

// The outputs of "node" (is_data_dependent, not If or Scan; a Loop only where
// loop_runs_on_host chose the host, since with every input constant the body's shapes no
// longer come from data), every present input of which is constant. Fails on inputs the op
// rejects, naming them.
Result<std::vector<Tensor>> evaluate_on_host(const Node& node);

// The outputs of a copy of "node" whose inputs hold "values" (one per input, null where
// absent): its output types inferred from them, then evaluate_node (evaluate.h) where it
// can, evaluate_on_host for the rest. Fails where an output would be too large to
// hold (sizes that data decides may be anything) and where the node does not evaluate for
// these inputs. The stages' host ops and the bodies of Loops on the host run this way.
Result<std::vector<Tensor>> evaluate_with_values(const Node& node,
                                                 const std::vector<TensorRef>& values);

// Shape functions (see shape_functions.h): the data-dependent extents are unknown.
Result<std::vector<TensorType>> infer_non_zero(const Node& node);
Result<std::vector<TensorType>> infer_unique(const Node& node);
Result<std::vector<TensorType>> infer_non_max_suppression(const Node& node);

} // namespace weft
