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
#include "weft/toolchain/cubin.h"
#include "weft/toolchain/nvrtc.h"

namespace weft::cli {

namespace {

Status write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) return Status::error(fmt::format("{}: cannot write the file", path.string()));
  return Status();
}

// The kernel plan for the declared input types, or why there is none: lowering needs every
// shape, which symbolic dims or shape-determining input values leave open ("weft run" and
// WEFT_DUMP_DIR see the real ones). Nothing is compiled, and without a dump nothing generated.
Result<CompiledModel> plan(const InspectOptions& options, const Graph& graph, bool fusion,
                           const std::string& dump_dir, bool source = false) {
  std::vector<Tensor> zeros;
  for (const Value* in : graph.inputs) {
    if (!in->type.has_static_shape()) {
      return Status::error(fmt::format("input '{}' has symbolic dims ({}); kernels are generated "
                                       "once they are known, by weft run",
                                       in->name, in->type.to_string()));
    }
    zeros.emplace_back(in->type.dtype, shape_static_dims(*in->type.shape));
  }
  if (!shape_operand_inputs(graph).empty()) {
    return Status::error("some inputs determine shapes by their values; kernels are generated "
                         "once they are known, by weft run");
  }
  CompileSettings settings;
  settings.dump_dir = dump_dir;
  // The dump has the source; the report needs none.
  settings.goal = dump_dir.empty() && !source ? CompileGoal::kPlan : CompileGoal::kSource;
  settings.fusion = fusion;
  settings.device = options.device;
  return compile_model(options.model, zeros, settings);
}

size_t bytes_moved(const CompiledModel& m) {
  size_t bytes = 0;
  for (const KernelSummary& k : m.kernels)
    bytes += k.info.bytes();
  return bytes;
}

nlohmann::json kernels_json(const CompiledModel& m) {
  nlohmann::json out = nlohmann::json::array();
  for (const KernelSummary& k : m.kernels) {
    out.push_back({{"name", k.name},
                   {"node", k.info.node},
                   {"op_type", k.info.op_type},
                   {"strategy", k.info.strategy},
                   {"shapes", k.info.shapes},
                   {"bytes", k.info.bytes()},
                   {"ir", k.ir}});
  }
  return out;
}

// The fusion report: kernels and bytes moved with and without fusion, and every decision.
nlohmann::json fusion_json(const CompiledModel& fused, const CompiledModel& unfused) {
  nlohmann::json decisions = nlohmann::json::array();
  for (const fusion::Decision& d : fused.fusion_decisions) {
    decisions.push_back(
        {{"producer", d.producer}, {"consumer", d.consumer}, {"fused", d.fused}, {"how", d.how}});
  }
  return {{"kernels", fused.kernels.size()},
          {"kernels_without_fusion", unfused.kernels.size()},
          {"bytes_moved", bytes_moved(fused)},
          {"bytes_moved_without_fusion", bytes_moved(unfused)},
          {"decisions", decisions}};
}

std::string fusion_text(const CompiledModel& fused, const CompiledModel& unfused) {
  std::string out = fmt::format("== kernels ==\n{} kernels, {} bytes moved ({} kernels and {} "
                                "bytes without fusion)\n",
                                fused.kernels.size(), bytes_moved(fused), unfused.kernels.size(),
                                bytes_moved(unfused));
  for (const KernelSummary& k : fused.kernels) {
    out += fmt::format("  {}: {} ({}): {}, {}, {} bytes\n", k.name, k.info.node, k.info.op_type,
                       k.info.strategy, k.info.shapes, k.info.bytes());
  }
  if (fused.staged()) {
    out += fmt::format("  then on the host: {}; the kernels after them are generated when a run "
                       "gives their shapes (docs/data-dependent-shapes.md)\n",
                       fmt::join(fused.host_ops, ", "));
  }
  out += "== fusion ==\n";
  for (const fusion::Decision& d : fused.fusion_decisions) {
    out += fmt::format("  {} -> {}: {}\n", d.producer, d.consumer,
                       d.fused ? d.how : "not fused: " + d.how);
  }
  return out;
}

// Each CUDA function of "m" built for "arch" by NVRTC: its block, registers, stack frame,
// static shared memory and the blocks an SM holds (cubin.h).
Result<nlohmann::json> cuda_functions(const CompiledModel& m, const std::string& model,
                                      const std::string& arch) {
  WEFT_ASSIGN_OR_RETURN(const toolchain::Nvrtc* nvrtc, toolchain::Nvrtc::get());
  WEFT_ASSIGN_OR_RETURN(std::string cubin, nvrtc->compile_to_cubin(m.source, model, arch));
  WEFT_ASSIGN_OR_RETURN(auto functions, toolchain::cubin_functions(cubin));
  nlohmann::json out = nlohmann::json::array();
  for (const runtime::cuda::LaunchShape& launch : m.cuda_launches) {
    const std::string& name = launch.function;
    int64_t block = launch.block;
    auto f = functions.find(name);
    if (f == functions.end())
      return Status::error(
          fmt::format("{}: function {} is not in NVRTC's machine code", model, name));
    WEFT_ASSIGN_OR_RETURN(int64_t blocks, toolchain::resident_blocks(f->second, block, arch));
    out.push_back({{"function", name},
                   {"block", block},
                   {"registers", f->second.registers},
                   {"stack_bytes", f->second.frame_bytes},
                   {"shared_bytes", f->second.shared_bytes},
                   {"blocks_per_sm", blocks}});
  }
  return out;
}

std::string cuda_functions_text(const nlohmann::json& functions, const std::string& arch) {
  std::string out = fmt::format("== CUDA functions ({}, NVRTC's machine code) ==\n", arch);
  for (const nlohmann::json& f : functions) {
    int64_t stack = f["stack_bytes"], blocks = f["blocks_per_sm"], block = f["block"];
    out += fmt::format("  {}: block {}, {} registers, {} shared bytes{}: {} blocks a SM ({} "
                       "threads)\n",
                       f["function"].get<std::string>(), block, f["registers"].get<int64_t>(),
                       f["shared_bytes"].get<int64_t>(),
                       stack ? fmt::format(", {} stack bytes (spills or local arrays)", stack) : "",
                       blocks, blocks * block);
  }
  return out;
}

} // namespace

int inspect(const InspectOptions& options) {
  if (!options.registers.empty() && options.device != DeviceKind::kCuda) {
    std::cerr << "error: --registers needs --device cuda\n";
    return 2;
  }
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
  // The kernel plan (with the dump's kernels, source and build.sh), and the same without
  // fusion for the comparison, when the JSON or the fusion report asks for it.
  Result<CompiledModel> fused = Status::error("not planned");
  Result<CompiledModel> unfused = Status::error("not planned");
  bool registers = !options.registers.empty();
  if (!options.dump_dir.empty() || options.json || options.fusion_report || registers) {
    fused = plan(options, *graph, options.fusion, options.dump_dir, registers);
    if (fused.ok() && (options.json || options.fusion_report))
      unfused = plan(options, *graph, false, "");
    if (!fused.ok() && !options.dump_dir.empty())
      std::cerr << fmt::format("note: no kernels in {}: {}\n", options.dump_dir,
                               fused.status().message());
  }
  Result<nlohmann::json> functions = nlohmann::json::array();
  if (registers) {
    functions = fused.ok() ? cuda_functions(*fused, options.model, options.registers)
                           : Result<nlohmann::json>(fused.status());
    if (!functions.ok()) {
      std::cerr << functions.status().to_string() << "\n";
      return 1;
    }
  }
  if (options.json) {
    nlohmann::json out = {{"file", options.model},
                          {"device", std::string(device_name(options.device))},
                          {"passes", passes},
                          {"ops", last_graph["ops"]},
                          {"library_calls", nlohmann::json::array()},
                          {"kernels", nlohmann::json::array()}};
    if (fused.ok() && unfused.ok()) {
      out["kernels"] = kernels_json(*fused);
      for (const KernelSummary& k : fused->kernels) {
        if (k.library)
          out["library_calls"].push_back({{"name", k.name},
                                          {"node", k.info.node},
                                          {"op_type", k.info.op_type},
                                          {"strategy", k.info.strategy}});
      }
      out["host_ops"] = fused->host_ops;
      out["fusion"] = fusion_json(*fused, *unfused);
    } else {
      out["kernels_note"] = fused.status().message();
    }
    if (registers) out["cuda_functions"] = *functions;
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << text;
    if (options.fusion_report) {
      if (fused.ok() && unfused.ok())
        std::cout << fusion_text(*fused, *unfused);
      else
        std::cout << "== kernels ==\nnone: " << fused.status().message() << "\n";
    }
    if (registers) std::cout << cuda_functions_text(*functions, options.registers);
  }
  return 0;
}

} // namespace weft::cli
