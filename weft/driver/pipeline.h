// The pipeline: from an ONNX file to the optimized graph, one pass after another.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/support/status.h"

namespace weft {

// Called after each step with its name ("import", then each pass) and the graph it left.
using PassObserver = std::function<void(std::string_view pass, const Graph& graph)>;

// Where a model comes from: an .onnx file, or its bytes in memory.
struct ModelSource {
  std::string path;  // the file; for bytes, the name that messages use
  std::string bytes; // the serialized ModelProto, when "in_memory" and held here
  std::string_view borrowed; // or the caller's, which it keeps while a compile reads them
  bool in_memory = false;

  ModelSource(std::string file) : path(std::move(file)) {} // NOLINT(google-explicit-constructor)
  ModelSource(const char* file) : path(file) {}            // NOLINT(google-explicit-constructor)
  // External data of in-memory models resolves against the working directory.
  static ModelSource memory(std::string bytes, std::string name = "<model bytes>") {
    ModelSource s(std::move(name));
    s.bytes = std::move(bytes);
    s.in_memory = true;
    return s;
  }
  // The caller's bytes, not a copy (a model's weights): Model::compile_bytes reads them
  // before it returns, and keeps a copy only where a dump may run the passes again.
  static ModelSource borrowed_memory(std::string_view bytes, std::string name) {
    ModelSource s(std::move(name));
    s.borrowed = bytes;
    s.in_memory = true;
    return s;
  }
  std::string_view serialized() const { return bytes.empty() ? borrowed : bytes; }
};

// Imports the model and runs every graph pass in order, verifying the graph after each one.
Result<Graph> run_graph_pipeline(const ModelSource& model, const PassObserver& observe = {});

// "import" followed by the graph passes, in pipeline order (for `weft inspect --after`).
const std::vector<std::string_view>& pipeline_steps();

// The pipeline again, after a change that makes more values constant or more dims static
// (specialization, host ops, a layout pass): constants folded and shapes inferred to a fixed
// point, verified as "after" left them, then the passes from expand_recurrent on.
Status refold(Graph& graph, std::string_view after);

} // namespace weft
