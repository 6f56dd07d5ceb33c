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

// Imports "path" and runs every graph pass in order, verifying the graph after each one.
Result<Graph> run_graph_pipeline(const std::string& path, const PassObserver& observe = {});

// "import" followed by the graph passes, in pipeline order (for `weft inspect --after`).
const std::vector<std::string_view>& pipeline_steps();

} // namespace weft
