#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/weft/commands.h"
#include "weft/driver/compile_model.h"
#include "weft/driver/pipeline.h"
#include "weft/graph/passes/specialize_shapes.h"
#include "weft/graph/print_graph.h"
#include "weft/kernel/lower_node.h"

namespace weft::cli {

namespace {

Status write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) return Status::error(fmt::format("{}: cannot write the file", path.string()));
  return Status();
}

// The kernels each node lowers to, in the kernel IR's text form. Lowering needs static
// shapes; a graph with symbolic dims says so instead ("weft run" specializes them).
void add_kernels(const Graph& graph, nlohmann::json& out) {
  out["kernels"] = nlohmann::json::array();
  for (const Value* in : graph.inputs) {
    if (!in->type.has_static_shape()) {
      out["kernels_note"] =
          fmt::format("input '{}' has symbolic dims ({}); kernels are generated once they are "
                      "known, by weft run",
                      in->name, in->type.to_string());
      return;
    }
  }
  size_t index = 0;
  for (const auto& node : graph.nodes()) {
    std::string name = fmt::format("k{}_{}", index++, node->op_type);
    if (!kernel::can_lower(*node)) continue;
    Result<kernel::LoweredNode> lowered = kernel::lower_node(*node, name);
    if (!lowered.ok()) continue;
    for (const kernel::BoundKernel& k : lowered->kernels) {
      out["kernels"].push_back({{"name", k.kernel.name},
                                {"node", node->name},
                                {"op_type", node->op_type},
                                {"ir", kernel::print_kernel(k.kernel)}});
    }
  }
}

// Adds the kernels, the generated source and build.sh to the dump, when the input types
// determine every shape; otherwise says why not (on stderr: the dump is a side product).
void dump_kernels(const InspectOptions& options, const Graph& graph) {
  std::vector<Tensor> zeros;
  for (const Value* in : graph.inputs) {
    if (!in->type.has_static_shape()) {
      std::cerr << fmt::format(
          "note: no kernels in {}: input '{}' has symbolic dims ({}); WEFT_DUMP_DIR={} weft run "
          "... dumps them for concrete shapes\n",
          options.dump_dir, in->name, in->type.to_string(), options.dump_dir);
      return;
    }
    zeros.emplace_back(in->type.dtype, shape_static_dims(*in->type.shape));
  }
  if (!shape_operand_inputs(graph).empty()) {
    std::cerr << fmt::format("note: no kernels in {}: some inputs determine shapes by their "
                             "values; WEFT_DUMP_DIR={} weft run ... dumps them for given values\n",
                             options.dump_dir, options.dump_dir);
    return;
  }
  CompileSettings settings;
  settings.dump_dir = options.dump_dir;
  settings.build = false;
  Result<CompiledModel> compiled = compile_model(options.model, zeros, settings);
  if (!compiled.ok())
    std::cerr << fmt::format("note: no kernels in {}: {}\n", options.dump_dir,
                             compiled.status().message());
}

} // namespace

int inspect(const InspectOptions& options) {
  if (!options.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.dump_dir, ec);
    if (ec) {
      std::cerr << fmt::format("error: {}: cannot create the dump directory: {}\n",
                               options.dump_dir, ec.message());
      return 1;
    }
  }
  nlohmann::json passes = nlohmann::json::array();
  nlohmann::json last_graph;
  std::string text;
  Status dump_status;
  int step = 0;
  auto observe = [&](std::string_view pass, const Graph& graph) {
    std::string printed = print_graph(graph);
    if (!options.dump_dir.empty() && dump_status.ok()) {
      auto file = std::filesystem::path(options.dump_dir) / fmt::format("{:02}_{}.txt", step, pass);
      dump_status = write_text(file, printed);
    }
    ++step;
    if (!options.after.empty() && pass != options.after) return;
    if (options.json) {
      last_graph = graph_to_json(graph);
      passes.push_back({{"pass", pass}, {"graph", last_graph}});
    } else {
      text += fmt::format("== {} ==\n{}", pass, printed);
    }
  };
  Result<Graph> graph = run_graph_pipeline(options.model, observe);
  if (!graph.ok()) {
    std::cerr << graph.status().to_string() << "\n";
    return 1;
  }
  if (!dump_status.ok()) {
    std::cerr << dump_status.to_string() << "\n";
    return 1;
  }
  if (!options.dump_dir.empty()) dump_kernels(options, *graph);
  if (options.json) {
    // Weft makes no library calls yet: MatMul, Gemm and Conv are generated kernels too.
    nlohmann::json out = {{"file", options.model},
                          {"device", options.device},
                          {"passes", passes},
                          {"ops", last_graph["ops"]},
                          {"library_calls", nlohmann::json::array()}};
    add_kernels(*graph, out);
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

} // namespace weft::cli
