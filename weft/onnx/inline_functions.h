// Inlining of a model's local functions (ModelProto.functions, IR 8 on). Exporters write
// them for modules and decompositions (PyTorch's dynamo exporter, onnxscript); Weft imports
// the graph they stand for.
//
// Each call, in the main graph and in the graphs of If/Loop/Scan, becomes the function's
// nodes: formal inputs and outputs renamed to the call's values, every other value renamed
// with a prefix unique to the call, attribute references (ref_attr_name) resolved from the
// call or the function's defaults. Calls inside a function are inlined too, up to a depth
// that a recursive function cannot exceed. After it the model has no functions left.
#pragma once

#include <string>

#include "weft/support/status.h"

namespace onnx {
class ModelProto;
}

namespace weft {

Status inline_local_functions(onnx::ModelProto& model, const std::string& name);

} // namespace weft
