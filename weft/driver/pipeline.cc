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

namespace weft {

namespace {

Status run_pass(std::string_view name, Status (*pass)(Graph&), Graph& graph,
                const PassObserver& observe) {
  WEFT_RETURN_IF_ERROR(pass(graph));
  WEFT_RETURN_IF_ERROR(verify_graph(graph, name));
  if (observe) observe(name, graph);
  return Status();
}

} // namespace

const std::vector<std::string_view>& pipeline_steps() {
  static const std::vector<std::string_view> steps = {
      "import",           "fold_constants",     "infer_shapes",  "decompose",
      "canonicalize",     "expand_recurrent",   "eliminate_identity", "split_moments",
      "eliminate_dead_code"};
  return steps;
}

Result<Graph> run_graph_pipeline(const ModelSource& model, const PassObserver& observe) {
  WEFT_ASSIGN_OR_RETURN(Graph graph, model.in_memory
                                         ? import_model_bytes(model.bytes, model.path, ".")
                                         : import_model(model.path));
  if (observe) observe("import", graph);
  // Folding comes first: Constant nodes and exporters' shape subgraphs become constants,
  // which the later passes read.
  WEFT_RETURN_IF_ERROR(run_pass("fold_constants", fold_constants, graph, observe));
  // Folded shape targets (Reshape, Expand, ...) now determine more dims.
  WEFT_RETURN_IF_ERROR(run_pass("infer_shapes", infer_shapes, graph, observe));
  // Fused ops of the newer opsets into primitives, which canonicalize then tidies.
  WEFT_RETURN_IF_ERROR(run_pass("decompose", decompose, graph, observe));
  // Needs the folded constants to move axes and bounds into attributes.
  WEFT_RETURN_IF_ERROR(run_pass("canonicalize", canonicalize, graph, observe));
  // Recurrent ops whose shapes are static already; the others wait for specialization.
  WEFT_RETURN_IF_ERROR(run_pass("expand_recurrent", expand_recurrent, graph, observe));
  // After canonicalize, which turns empty-axes reductions into Identity.
  WEFT_RETURN_IF_ERROR(run_pass("eliminate_identity", eliminate_identity, graph, observe));
  // Needs canonical reduction axes; what it leaves unused goes next.
  WEFT_RETURN_IF_ERROR(run_pass("split_moments", split_moments, graph, observe));
  // Last: removes what the passes above left unused.
  WEFT_RETURN_IF_ERROR(run_pass("eliminate_dead_code", eliminate_dead_code, graph, observe));
  return graph;
}

} // namespace weft
