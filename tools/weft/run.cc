#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "tools/weft/commands.h"
#include "weft/driver/compile_model.h"
#include "weft/onnx/tensor_file.h"

namespace weft::cli {

namespace fs = std::filesystem;

namespace {

std::string describe_inputs(const std::vector<runtime::TensorInfo>& inputs) {
  std::vector<std::string> parts;
  for (const auto& in : inputs)
    parts.push_back(in.name + " " + in.type.to_string());
  return fmt::format("{}", fmt::join(parts, ", "));
}

// A tensor for an input not given: free (symbolic) dims are 1, as in ONNX Runtime's perf test.
Tensor filled(const TensorType& type, const std::string& fill, uint32_t seed) {
  std::vector<int64_t> dims;
  for (const Dim& d : *type.shape)
    dims.push_back(d.is_static() ? d.value() : 1);
  Tensor t(type.dtype, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = fill == "ones" ? 1.0 : fill == "zeros" ? 0.0 : dist(rng);
    if (!dtype_is_float(type.dtype) && fill == "random") v = std::floor(v * 10);
    t.set_double(i, v);
  }
  return t;
}

std::string file_name_for(const std::string& value) {
  std::string name = value;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return name;
}

// The model's inputs, from --input files and --fill; one error line naming what is wrong.
Result<std::vector<Tensor>> gather_inputs(const RunOptions& o,
                                          const std::vector<runtime::TensorInfo>& declared) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : o.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::error(fmt::format("--input '{}' must be NAME=FILE", spec));
    }
    std::string name = spec.substr(0, eq);
    bool known = std::any_of(declared.begin(), declared.end(),
                             [&](const auto& d) { return d.name == name; });
    if (!known) {
      return Status::error(fmt::format("{}: the model has no input '{}'; its inputs are: {}",
                                       o.model, name, describe_inputs(declared)));
    }
    files[name] = spec.substr(eq + 1);
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < declared.size(); ++i) {
    const auto& d = declared[i];
    auto it = files.find(d.name);
    if (it == files.end()) {
      if (o.fill.empty()) {
        return Status::error(fmt::format(
            "{}: missing input '{}'; the model's inputs are: {}; pass --input NAME=FILE "
            "(.npy or .pb) or --fill random|zeros|ones",
            o.model, d.name, describe_inputs(declared)));
      }
      tensors.push_back(filled(d.type, o.fill, static_cast<uint32_t>(i)));
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_tensor_file(it->second));
    tensors.push_back(as_bf16_if_wanted(std::move(t), d.type.dtype));
  }
  return tensors;
}

} // namespace

int run(const RunOptions& o) {
  if (o.device != "cpu") {
    std::cerr << "error: --device " << o.device
              << ": the CUDA backend has not landed yet; use --device cpu\n";
    return 2;
  }
  Result<std::vector<runtime::TensorInfo>> declared = model_inputs(o.model);
  if (!declared.ok()) {
    std::cerr << declared.status().to_string() << "\n";
    return 1;
  }
  Result<std::vector<Tensor>> inputs = gather_inputs(o, *declared);
  if (!inputs.ok()) {
    std::cerr << inputs.status().to_string() << "\n";
    return 1;
  }
  Result<CompiledModel> model = compile_model(o.model, *inputs);
  if (!model.ok()) {
    std::cerr << model.status().to_string() << "\n";
    return 1;
  }
  Result<std::vector<Tensor>> outputs = model->executable->run(*inputs);
  if (!outputs.ok()) {
    std::cerr << outputs.status().with_location({o.model, "", "", 0}).to_string() << "\n";
    return 1;
  }
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  const auto& infos = model->executable->outputs();
  for (size_t i = 0; i < outputs->size(); ++i) {
    fs::path path = fs::path(o.output_dir) / (file_name_for(infos[i].name) + ".npy");
    Status s = write_tensor_file(path.string(), (*outputs)[i], infos[i].name);
    if (!s.ok()) {
      std::cerr << s.to_string() << "\n";
      return 1;
    }
    std::cout << fmt::format("{}: {} -> {}\n", infos[i].name, (*outputs)[i].type().to_string(),
                             path.string());
  }
  return 0;
}

} // namespace weft::cli
