// The one printer of the graph IR, as stable text and as JSON.
//
// Text form, one item per line, in graph order:
//   graph "model.onnx" opset 13
//     input %X: f32[N,3,224,224]
//     const %W: f32[64,3,7,7]
//     node conv1: %Y: f32[N,64,112,112] = Conv(%X, %W, _) {group=1, strides=[2, 2]}
//     output %Y: f32[N,64,112,112]
// An omitted optional input or output prints as "_". Attributes print in declaration order;
// unset optional attributes are left out. The output has no pointers or addresses, so it is
// the same from run to run.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "weft/graph/graph.h"

namespace weft {

std::string print_graph(const Graph& graph);
std::string print_node(const Node& node);
// {"file", "opset", "inputs", "constants", "ops", "outputs"}; each value is
// {"name", "dtype", "shape"} with symbolic dims as strings and an unknown rank as null.
nlohmann::json graph_to_json(const Graph& graph);

} // namespace weft
