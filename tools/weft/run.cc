#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/weft/commands.h"
#include "tools/weft/inputs.h"
#include "weft/driver/compile_model.h"
#include "weft/onnx/tensor_file.h"

namespace weft::cli {

namespace fs = std::filesystem;

namespace {

std::string file_name_for(const std::string& value) {
  std::string name = value;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return name;
}

// For an output the model declares as a sequence of maps (ZipMap), or as string labels:
// what the file holds.
std::string map_note(const Graph& graph, const std::string& output) {
  if (auto labels = graph.label_outputs.find(output); labels != graph.label_outputs.end())
    return fmt::format(" (string labels: each value's index into '{}')",
                       fmt::join(labels->second, "', '"));
  auto it = graph.map_outputs.find(output);
  if (it == graph.map_outputs.end()) return "";
  const MapKeys& keys = it->second;
  std::string labels = keys.ints.empty() ? fmt::format("'{}'", fmt::join(keys.strings, "', '"))
                                         : fmt::format("{}", fmt::join(keys.ints, ", "));
  return fmt::format(" (a ZipMap: each row's map from the labels {} to its columns)", labels);
}

} // namespace

int run(const RunOptions& o) {
  if (!device_available(o.device)) return 2;
  Result<std::vector<Tensor>> inputs = gather_model_inputs(o.model, o.inputs, o.fill, o.shapes);
  if (!inputs.ok()) {
    std::cerr << inputs.status().to_string() << "\n";
    return 1;
  }
  CompileSettings settings;
  settings.fusion = o.fusion;
  settings.device = o.device;
  settings.deterministic = o.deterministic;
  settings.allow_tf32 = o.allow_tf32;
  settings.allow_bf16 = o.allow_bf16;
  Result<CompiledModel> model = compile_model(o.model, *inputs, settings);
  if (!model.ok()) {
    std::cerr << model.status().to_string() << "\n";
    return 1;
  }
  Result<std::vector<Tensor>> outputs = model->run(*inputs);
  if (!outputs.ok()) {
    std::cerr << outputs.status().with_location({o.model, "", "", 0}).to_string() << "\n";
    return 1;
  }
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  const std::vector<std::string>& names = model->output_names;
  for (size_t i = 0; i < outputs->size(); ++i) {
    fs::path path = fs::path(o.output_dir) / (file_name_for(names[i]) + ".npy");
    Status s = write_tensor_file(path.string(), (*outputs)[i], names[i]);
    if (!s.ok()) {
      std::cerr << s.to_string() << "\n";
      return 1;
    }
    std::cout << fmt::format("{}: {} -> {}{}\n", names[i], (*outputs)[i].type().to_string(),
                             path.string(), map_note(model->graph, names[i]));
  }
  return 0;
}

} // namespace weft::cli
