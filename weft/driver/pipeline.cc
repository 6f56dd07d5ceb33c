#include "weft/driver/pipeline.h"

#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/decompose.h"
#include "weft/graph/passes/eliminate_dead_code.h"
#include "weft/graph/passes/eliminate_identity.h"
#include "weft/graph/passes/expand_recurrent.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/passes/split_moments.h"
#include "weft/graph/verify_graph.h"
#include "weft/onnx/import_model.h"
#include "weft/support/host_memory.h"

namespace weft {

namespace {

struct GraphPass {
  std::string_view name;
  Status (*run)(Graph&);
};

// The graph passes, in order; each is verified after it runs.
const std::vector<GraphPass>& graph_passes() {
  static const std::vector<GraphPass> passes = {
      // Constant nodes and exporters' shape subgraphs become constants, which the later
      // passes read.
      {"fold_constants", fold_constants},
      // Folded shape targets (Reshape, Expand, ...) now determine more dims.
      {"infer_shapes", infer_shapes},
      // Recurrent ops whose shapes are static; the others wait for specialization.
      {"expand_recurrent", expand_recurrent},
      // Fused ops of the newer opsets into primitives, which canonicalize then tidies.
      {"decompose", decompose},
      // Needs the folded constants to move axes and bounds into attributes.
      {"canonicalize", canonicalize},
      // After canonicalize, which turns empty-axes reductions into Identity.
      {"eliminate_identity", eliminate_identity},
      // Needs canonical reduction axes; what it leaves unused goes next.
      {"split_moments", split_moments},
      // Last: removes what the passes above left unused.
      {"eliminate_dead_code", eliminate_dead_code},
  };
  return passes;
}

Status run_passes(Graph& graph, size_t first, const PassObserver& observe) {
  const std::vector<GraphPass>& passes = graph_passes();
  for (size_t p = first; p < passes.size(); ++p) {
    WEFT_RETURN_IF_ERROR(passes[p].run(graph));
    WEFT_RETURN_IF_ERROR(verify_graph(graph, passes[p].name));
    if (observe) observe(passes[p].name, graph);
  }
  return Status();
}

} // namespace

const std::vector<std::string_view>& pipeline_steps() {
  static const std::vector<std::string_view> steps = [] {
    std::vector<std::string_view> names = {"import"};
    for (const GraphPass& p : graph_passes())
      names.push_back(p.name);
    return names;
  }();
  return steps;
}

Result<Graph> run_graph_pipeline(const ModelSource& model, const PassObserver& observe) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, model.in_memory
                                         ? import_model_bytes(model.serialized(), model.path, ".")
                                         : import_model(model.path));
  if (observe) observe("import", graph);
  WEFT_RETURN_IF_ERROR(run_passes(graph, 0, observe));
  release_cached_host_memory(); // the model's bytes and constants the passes replaced
  return graph;
}

Status refold(Graph& graph, std::string_view after) {
  for (size_t before = 0; before != graph.nodes().size();) {
    before = graph.nodes().size();
    WEFT_RETURN_IF_ERROR(fold_constants(graph));
    WEFT_RETURN_IF_ERROR(infer_shapes(graph));
  }
  WEFT_RETURN_IF_ERROR(verify_graph(graph, after));
  return run_passes(graph, 2, {}); // from expand_recurrent on
}

} // namespace weft
