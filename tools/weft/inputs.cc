#include "tools/weft/inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>

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

// "1x3x48x320" as dims; nullopt when it is not that.
std::optional<std::vector<int64_t>> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t x = text.find('x', start);
    std::string part = text.substr(start, x == std::string::npos ? x : x - start);
    if (part.empty() || part.size() > 18 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    dims.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return dims;
}

// The dims of input "in" from --shapes "text": its rank, and its static dims kept.
Result<std::vector<int64_t>> shape_for(const std::string& model, const runtime::TensorInfo& in,
                                       const std::string& text) {
  std::optional<std::vector<int64_t>> dims = parse_dims(text);
  if (!dims)
    return Status::error(
        fmt::format("--shapes {}={}: the dims must be like 1x3x224x224", in.name, text));
  Shape declared;
  if (in.type.shape) {
    declared = *in.type.shape;
  } else { // no declared shape: any rank
    for (size_t i = 0; i < dims->size(); ++i)
      declared.push_back(Dim::symbol(fmt::format("d{}", i)));
  }
  bool fits = dims->size() == declared.size();
  for (size_t i = 0; fits && i < declared.size(); ++i)
    fits = !declared[i].is_static() || declared[i].value() == (*dims)[i];
  if (!fits)
    return Status::error(fmt::format("{}: --shapes {}={} does not fit the input's type {}", model,
                                     in.name, text, in.type.to_string()));
  int64_t count = 0;
  if (!dims_are_allocatable(in.type.dtype, *dims, &count))
    return Status::error(fmt::format("--shapes {}={}: too large", in.name, text));
  return *dims;
}

// A tensor for an input not given, of "dims", filled with random values, zeros or ones.
Tensor filled(DType dtype, const std::vector<int64_t>& dims, const std::string& fill,
              uint32_t seed) {
  Tensor t(dtype, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = fill == "ones" ? 1.0 : fill == "zeros" ? 0.0 : dist(rng);
    if (!dtype_is_float(dtype) && fill == "random") v = std::floor(v * 10);
    t.set_double(i, v);
  }
  return t;
}

} // namespace

// The model's inputs, from --input files and --fill; one error line naming what is wrong.
Result<std::vector<Tensor>> gather_inputs(const std::string& model,
                                          const std::vector<std::string>& specs,
                                          const std::string& fill,
                                          const std::vector<std::string>& shapes,
                                          const std::vector<runtime::TensorInfo>& declared) {
  // The names of the inputs' symbolic dims ("batch_size", "past_sequence_length"), and of
  // the symbols inside derived ones ("h" of "2*h").
  std::set<std::string> symbols;
  for (const auto& d : declared) {
    for (const Dim& dim : d.type.shape.value_or(Shape{})) {
      if (dim.is_static()) continue;
      symbols.insert(dim.symbol_name());
      for (std::string& s : dim_symbols(dim))
        symbols.insert(std::move(s));
    }
  }
  // NAME=VALUE pairs of --input or --shapes, by name; --shapes also takes SYMBOL=N, the extent
  // of a symbolic dim wherever it appears (ONNX Runtime's perf test's free dimension override).
  std::map<std::string, int64_t> extents;
  auto by_name = [&](const std::vector<std::string>& pairs, std::string_view option,
                     std::string_view value) -> Result<std::map<std::string, std::string>> {
    std::map<std::string, std::string> found;
    for (const std::string& spec : pairs) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        return Status::error(fmt::format("{} '{}' must be NAME={}", option, spec, value));
      std::string name = spec.substr(0, eq);
      bool known = std::any_of(declared.begin(), declared.end(),
                               [&](const auto& d) { return d.name == name; });
      if (!known && option == "--shapes" && symbols.contains(name)) {
        std::optional<std::vector<int64_t>> n = parse_dims(spec.substr(eq + 1));
        if (!n || n->size() != 1)
          return Status::error(fmt::format("--shapes {}: the extent of dim '{}' must be one "
                                           "number",
                                           spec, name));
        extents[name] = n->front();
        continue;
      }
      if (!known) {
        return Status::error(fmt::format(
            "{}: the model has no input '{}'{}; its inputs are: {}", model, name,
            option == "--shapes" ? " nor a dim of that name" : "", describe_inputs(declared)));
      }
      found[name] = spec.substr(eq + 1);
    }
    return found;
  };
  WEFT_ASSIGN_OR_RETURN(auto files, by_name(specs, "--input", "FILE"));
  WEFT_ASSIGN_OR_RETURN(auto dims, by_name(shapes, "--shapes", "1x3x224x224 or SYMBOL=N"));
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
      std::vector<int64_t> shape;
      if (auto given = dims.find(d.name); given != dims.end()) {
        WEFT_ASSIGN_OR_RETURN(shape, shape_for(model, d, given->second));
      } else if (!d.type.shape) {
        return Status::error(fmt::format("{}: input '{}' declares no shape, so --fill cannot "
                                         "make it; pass --shapes {}=DIMS or --input {}=FILE",
                                         model, d.name, d.name, d.name));
      } else {
        // Free dims are 1 unless named, as in ONNX Runtime's perf test; a derived dim ("2*h")
        // is evaluated from its symbols, each 1 unless named.
        for (const Dim& dim : *d.type.shape) {
          if (dim.is_static()) {
            shape.push_back(dim.value());
            continue;
          }
          if (auto named = extents.find(dim.symbol_name()); named != extents.end()) {
            shape.push_back(named->second);
            continue;
          }
          std::map<std::string, int64_t> at;
          for (const std::string& s : dim_symbols(dim))
            at[s] = extents.contains(s) ? extents.at(s) : 1;
          std::optional<int64_t> extent = eval_dim(dim, at);
          if (!extent)
            return Status::error(fmt::format("--shapes: input '{}' has no extent for its dim {} "
                                             "at these symbols",
                                             d.name, dim.to_string()));
          shape.push_back(*extent);
        }
        int64_t count = 0;
        if (!dims_are_allocatable(d.type.dtype, shape, &count))
          return Status::error(fmt::format("--shapes: input '{}' would be too large", d.name));
      }
      tensors.push_back(filled(d.type.dtype, shape, fill, static_cast<uint32_t>(i)));
      continue;
    }
    if (dims.contains(d.name)) {
      return Status::error(fmt::format("--shapes {0}: input '{0}' is read from {1}, which sets "
                                       "its shape",
                                       d.name, it->second));
    }
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_tensor_file(it->second, d.vocabulary));
    tensors.push_back(as_bf16_if_wanted(std::move(t), d.type.dtype));
  }
  return tensors;
}

Result<std::vector<Tensor>> gather_model_inputs(const std::string& model,
                                                const std::vector<std::string>& specs,
                                                const std::string& fill,
                                                const std::vector<std::string>& shapes) {
  WEFT_ASSIGN_OR_RETURN(std::vector<runtime::TensorInfo> declared, model_inputs(model));
  return gather_inputs(model, specs, fill, shapes, declared);
}

bool device_available(DeviceKind device) {
  if (device == DeviceKind::kCpu) return true;
  Result<std::shared_ptr<runtime::cuda::Device>> opened = runtime::cuda::open_device();
  if (opened.ok()) return true;
  std::cerr << "error: --device " << device_name(device) << ": " << opened.status().message() << "\n";
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
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_tensor_file(files[i], declared[i].vocabulary));
    inputs.push_back(as_bf16_if_wanted(std::move(t), declared[i].type.dtype));
  }
  return inputs;
}

} // namespace weft::cli
