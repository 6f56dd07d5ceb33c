#include "tools/weft/inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "weft/driver/compile_model.h"
#include "weft/onnx/tensor_file.h"
#include "weft/runtime/cuda/device.h"

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

} // namespace

// The model's inputs, from --input files and --fill; one error line naming what is wrong.
Result<std::vector<Tensor>> gather_inputs(const std::string& model,
                                          const std::vector<std::string>& specs,
                                          const std::string& fill,
                                          const std::vector<runtime::TensorInfo>& declared) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::error(fmt::format("--input '{}' must be NAME=FILE", spec));
    }
    std::string name = spec.substr(0, eq);
    bool known = std::any_of(declared.begin(), declared.end(),
                             [&](const auto& d) { return d.name == name; });
    if (!known) {
      return Status::error(fmt::format("{}: the model has no input '{}'; its inputs are: {}", model,
                                       name, describe_inputs(declared)));
    }
    files[name] = spec.substr(eq + 1);
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < declared.size(); ++i) {
    const auto& d = declared[i];
    auto it = files.find(d.name);
    if (it == files.end()) {
      if (fill.empty()) {
        return Status::error(fmt::format(
            "{}: missing input '{}'; the model's inputs are: {}; pass --input NAME=FILE "
            "(.npy or .pb) or --fill random|zeros|ones",
            model, d.name, describe_inputs(declared)));
      }
      tensors.push_back(filled(d.type, fill, static_cast<uint32_t>(i)));
      continue;
    }
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_tensor_file(it->second));
    tensors.push_back(as_bf16_if_wanted(std::move(t), d.type.dtype));
  }
  return tensors;
}

Result<std::vector<Tensor>> gather_model_inputs(const std::string& model,
                                                const std::vector<std::string>& specs,
                                                const std::string& fill) {
  WEFT_ASSIGN_OR_RETURN(std::vector<runtime::TensorInfo> declared, model_inputs(model));
  return gather_inputs(model, specs, fill, declared);
}

bool device_available(const std::string& device) {
  if (device == "cpu") return true;
  Result<std::shared_ptr<runtime::cuda::Device>> opened = runtime::cuda::open_device();
  if (opened.ok()) return true;
  std::cerr << "error: --device " << device << ": " << opened.status().message() << "\n";
  return false;
}

std::vector<std::string> numbered_files(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> files;
  for (int i = 0;; ++i) {
    fs::path p = fs::path(dir) / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(p)) break;
    files.push_back(p.string());
  }
  return files;
}

Result<std::vector<Tensor>> read_data_set_inputs(const std::string& dir,
                                                 const std::vector<runtime::TensorInfo>& declared) {
  std::vector<Tensor> inputs;
  std::vector<std::string> files = numbered_files(dir, "input");
  if (files.size() != declared.size()) {
    return Status::error(fmt::format("{}: the model has {} inputs, the data set {}", dir,
                                     declared.size(), files.size()));
  }
  for (size_t i = 0; i < files.size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_tensor_file(files[i]));
    inputs.push_back(as_bf16_if_wanted(std::move(t), declared[i].type.dtype));
  }
  return inputs;
}

} // namespace weft::cli
