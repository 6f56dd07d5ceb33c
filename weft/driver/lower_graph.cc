#include <cctype>

#include <fmt/format.h>

#include "weft/driver/stages.h"
#include "weft/kernel/lower_node.h"

namespace weft::stages {

namespace {

std::string kernel_name(size_t index, std::string_view op) {
  std::string name = fmt::format("k{}_{}", index, op);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

} // namespace

Result<std::vector<fusion::Step>> lower_graph(const Graph& graph, const LibrarySelection& library) {
  std::vector<fusion::Step> steps;
  size_t index = 0;
  for (const auto& node : graph.nodes()) {
    if (auto it = library.run_at.find(node.get()); it != library.run_at.end())
      steps.push_back({{}, nullptr, nullptr, it->second});
    if (library.absorbed.contains(node.get()) || library.calls.contains(node.get())) {
      ++index;
      continue;
    }
    Result<kernel::LoweredNode> lowered =
        kernel::lower_node(*node, kernel_name(index++, node->op_type.name()));
    if (!lowered.ok()) return lowered.status().with_location(location_of(graph, *node));
    if (lowered->alias_of) {
      steps.push_back({{}, node->outputs[0], lowered->alias_of});
      continue;
    }
    for (kernel::BoundKernel& k : lowered->kernels)
      steps.push_back({{{std::move(k), {node.get()}}}, nullptr, nullptr});
  }
  return steps;
}

std::vector<fusion::Step> fuse_steps(const Graph& graph, std::vector<fusion::Step> steps,
                                     const LibrarySelection& library,
                                     std::vector<fusion::Decision>* decisions) {
  std::set<const Value*> pinned(graph.outputs.begin(), graph.outputs.end());
  // A library call reads what it binds, which includes the inputs of the nodes it absorbed
  // (a Transpose before a MatMul), not only those of its own node: none may become a
  // temporary of another kernel.
  for (const auto& [node, call] : library.calls)
    pinned.insert(call.values.begin(), call.values.end());
  fusion::FusionResult fused = fusion::fuse(std::move(steps), pinned);
  *decisions = library.decisions;
  decisions->insert(decisions->end(), fused.decisions.begin(), fused.decisions.end());
  return std::move(fused.steps);
}

} // namespace weft::stages
