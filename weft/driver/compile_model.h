// compile_model: from an ONNX file and concrete input types to an executable.
//
// The graph pipeline runs; then the graph is specialized to the input types (shapes known
// at the first call are specialized, as the CLI contract says) and the graph passes run
// again so that shape computations fold. Each node is lowered to kernels, each kernel is
// scheduled on isl and emitted; all kernels of the model form one translation unit, built
// once by the system compiler and cached by content.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/runtime/cpu/executable.h"
#include "weft/support/status.h"

namespace weft {

struct CompiledModel {
  Graph graph; // after specialization
  std::unique_ptr<runtime::Executable> executable;
  std::string source; // the generated translation unit
  bool cache_hit = false;
};

// The declared inputs of a model: names and types, symbolic dims included.
Result<std::vector<runtime::TensorInfo>> model_inputs(const std::string& path);

// Compiles for "inputs": their types, and the values of small integer inputs that only
// determine shapes (freeze_shape_operands); later runs must pass the same values for those.
Result<CompiledModel> compile_model(const std::string& path, const std::vector<Tensor>& inputs);

} // namespace weft
