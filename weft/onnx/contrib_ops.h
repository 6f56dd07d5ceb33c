// ONNX Runtime's own ops (domain com.microsoft) that its tools write into models: the
// quantizer's QOperator format (QLinearAdd, QLinearConcat, QGemm, ...) next to ai.onnx's
// QLinearConv and QLinearMatMul, and the transformer optimizer's fused ops (Attention,
// SkipLayerNormalization, ...: contrib_transformer_ops.h). Each becomes ai.onnx nodes at
// import, at the model's opset (contrib_expansion.h): a quantized op is DequantizeLinear ->
// the float op -> QuantizeLinear, exactly what the contrib op computes (docs/library.md,
// "Quantized models"), and Weft then runs it as a QDQ model. A com.microsoft op not listed by
// contrib_ops_list() stays and the op check names it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace onnx {
class ModelProto;
}

namespace weft {

inline constexpr std::string_view kMicrosoftDomain = "com.microsoft";

// Expands every com.microsoft op Weft knows in the model's graph and in its nested graphs.
// "base_dir": where the model's external data lies (MatMulNBits reads its weights here).
// Returns the outputs that the model declares as sequences of maps (ai.onnx.ml's ZipMap), now
// f32 tensors (Graph::map_outputs).
Result<std::map<std::string, MapKeys>> expand_contrib_ops(onnx::ModelProto& model, int opset,
                                                          const std::string& name,
                                                          const std::string& base_dir);

// The com.microsoft ops expand_contrib_ops() expands ("QGemm", ...), and the same as a list
// for messages: "BiasAdd, ... and SkipSimplifiedLayerNormalization".
std::vector<std::string> contrib_op_names();
// The ai.onnx.ml ops it expands (ml_legacy_ops.h: "LinearClassifier", ...).
std::vector<std::string> ml_expanded_op_names();
std::string contrib_ops_list();

} // namespace weft
