// The ONNX importer: an .onnx file (or its bytes) in, a verified graph IR out.
//
// Steps: read the file; parse the ModelProto (protobuf, Debian's libonnx classes); refuse IR
// versions above kMaxIrVersion, opsets outside [kMinOpset, kMaxOpset] and domains other than
// ai.onnx; inline the model's local functions; check the declared ranks; then build the
// graph, parsing each node's attributes through the op table and typing its outputs with
// the op's shape function. Every unsupported op is reported at once, with node names.
// libonnx's checker and shape inference are not used (docs/onnx-versions.md).
//
// Errors are one line naming the file and, where there is one, the node, op and opset.
#pragma once

#include <string>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

Result<Graph> import_model(const std::string& path);

// "name" stands in for the file in messages; external data resolves against "base_dir".
Result<Graph> import_model_bytes(std::string_view bytes, const std::string& name,
                                 const std::string& base_dir);

} // namespace weft
