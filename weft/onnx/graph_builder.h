// The graph IR built from a checked ModelProto (import_model.h): values, initializers,
// attributes, the bodies of If, Loop and Scan, shape inference. Internal to onnx/.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// "model" (its local functions inlined, its ops supported at "opset") as Weft's graph;
// "name" is for messages, "base_dir" where external data lies.
Result<Graph> build_graph(const onnx::ModelProto& model, int opset, const std::string& name,
                          const std::string& base_dir);

} // namespace weft
