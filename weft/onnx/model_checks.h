// The protobuf side of the import (import_model.h): reading and parsing a model, its
// opset, and the checks that run on the protobuf before the graph is built (supported ops,
// and the spec's declared-rank rules that libonnx's checker missed). Internal to onnx/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "weft/graph/dtype.h"
#include "weft/graph/op.h"
#include "weft/support/status.h"

namespace weft {

// The file's bytes, or why not.
Result<std::string> read_file(const std::string& path);
// The ModelProto of "bytes"; "name" is for messages. Protobuf's own logging is silenced.
Result<onnx::ModelProto> parse_model(std::string_view bytes, const std::string& name);
bool is_onnx_domain(const std::string& domain);
// The op type Weft's graph gives a node: ONNX's for ai.onnx, qualified by the domain for
// the others.
std::string graph_op_type(const onnx::NodeProto& node);
// Its op, Op::kUnknown when Weft does not know it.
Op graph_op(const onnx::NodeProto& node);
// The ai.onnx opset, checked against the versions Weft reads.
Result<int> find_opset(const onnx::ModelProto& model, const std::string& name);
// The graphs of a node's attributes: If's branches, Loop's and Scan's bodies.
std::vector<const onnx::GraphProto*> subgraphs(const onnx::NodeProto& node);
// Every op of "graph" (and of its branches and bodies) is in the op table at "opset".
Status check_supported_ops(const onnx::GraphProto& graph, int opset, const std::string& name);
// The spec's rank rules on declared types and attributes, before any shape function runs.
Status check_declared_ranks(const onnx::GraphProto& graph, const std::string& name);
// Each node's inputs against its op's schema (op_inputs.inc): how many, and none that is
// required (a single or variadic input) left empty.
Status check_node_inputs(const onnx::GraphProto& graph, int opset, const std::string& name);

// Where ONNX's schema of "node" (ai.onnx, at "opset") binds inputs to one type parameter
// (Add's A and B, MatMul's, Gemm's A, B and C: its "T") and their types, "dtypes" (one per
// input, none for an absent one), differ, the message saying which; ONNX Runtime refuses such
// a model too. The schemas are libonnx's: an op newer than it is not checked.
std::optional<std::string> mixed_input_types(const onnx::NodeProto& node, int opset,
                                             const std::vector<std::optional<DType>>& dtypes);

} // namespace weft
