// weft test-onnx: the ONNX backend test layout (model.onnx + test_data_set_N/{input,output}_K.pb).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "tools/weft/commands.h"
#include "tools/weft/inputs.h"
#include "weft/driver/compile_model.h"
#include "weft/onnx/tensor_file.h"

namespace weft::cli {

namespace fs = std::filesystem;

namespace {

// Why "got" differs from "expected", or nothing when they agree within the tolerances.
std::optional<std::string> compare(const std::string& name, const Tensor& got,
                                   const Tensor& expected, double rtol, double atol) {
  if (got.dtype() != expected.dtype()) {
    return fmt::format("output '{}' has dtype {}, expected {}", name, dtype_name(got.dtype()),
                       dtype_name(expected.dtype()));
  }
  if (got.dims() != expected.dims()) {
    return fmt::format("output '{}' has shape {}, expected {}", name, got.type().to_string(),
                       expected.type().to_string());
  }
  bool exact = !dtype_is_float(got.dtype());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    bool ok;
    if (exact) {
      ok = got.get_int64(i) == expected.get_int64(i);
    } else {
      double g = got.get_double(i), e = expected.get_double(i);
      ok = (std::isnan(g) && std::isnan(e)) || g == e ||
           std::fabs(g - e) <= atol + rtol * std::fabs(e);
    }
    if (!ok) {
      return fmt::format("output '{}' element {}: got {}, expected {} (rtol {}, atol {})", name, i,
                         got.get_double(i), expected.get_double(i), rtol, atol);
    }
  }
  return std::nullopt;
}

// Runs one data set; the reason it fails, or nothing.
std::optional<std::string> run_data_set(const fs::path& model, const fs::path& data,
                                        const TestOnnxOptions& o) {
  Result<std::vector<runtime::TensorInfo>> declared = model_inputs(model.string());
  if (!declared.ok()) return declared.status().message();
  Result<std::vector<Tensor>> read = read_data_set_inputs(data.string(), *declared);
  if (!read.ok()) return read.status().message();
  std::vector<Tensor> inputs = std::move(read).value();
  CompileSettings settings;
  settings.device = o.device;
  settings.deterministic = o.deterministic;
  settings.allow_tf32 = o.allow_tf32;
  settings.allow_bf16 = o.allow_bf16;
  if (o.compile_only && o.device == DeviceKind::kCuda) {
    settings.goal = CompileGoal::kPtx;
    settings.cuda_archs = o.archs;
  }
  settings.fusion = o.fusion;
  settings.dynamic_shapes = o.dynamic_shapes;
  Result<CompiledModel> compiled = compile_model(model.string(), inputs, settings);
  if (!compiled.ok()) return compiled.status().message();
  if (o.compile_only) return std::nullopt;
  Result<std::vector<Tensor>> outputs = compiled->run(inputs);
  if (!outputs.ok()) return outputs.status().message();
  std::vector<std::string> expected = numbered_files(data.string(), "output");
  if (expected.size() != outputs->size()) {
    return fmt::format("the model has {} outputs, the data set {}", outputs->size(),
                       expected.size());
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    Result<Tensor> e = read_tensor_file(expected[i]);
    if (!e.ok()) return e.status().message();
    Tensor want = as_bf16_if_wanted(std::move(e).value(), (*outputs)[i].dtype());
    const std::string& name = compiled->output_names[i];
    if (auto why = compare(name, (*outputs)[i], want, o.rtol, o.atol)) return why;
  }
  return std::nullopt;
}

std::optional<std::string> run_case(const fs::path& dir, const TestOnnxOptions& o) {
  fs::path model = dir / "model.onnx";
  if (!fs::is_regular_file(model)) return fmt::format("{} has no model.onnx", dir.string());
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_N directories";
  for (const fs::path& data : sets) {
    if (auto why = run_data_set(model, data, o))
      return fmt::format("{}: {}", data.filename().string(), *why);
  }
  return std::nullopt;
}

} // namespace

int test_onnx(const TestOnnxOptions& o) {
  // Generating and NVRTC-compiling CUDA kernels needs no GPU; running them needs the runtime.
  if (!(o.compile_only && o.device == DeviceKind::kCuda) && !device_available(o.device)) return 2;
  int passed = 0, failed = 0;
  for (const std::string& c : o.cases) {
    fs::path dir = fs::path(c).lexically_normal();
    std::string name = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
    std::optional<std::string> why;
    try {
      why = run_case(dir, o);
    } catch (const std::exception& e) {
      why = std::string("internal error: ") + e.what();
    }
    if (why) {
      std::cout << "FAIL " << name << ": " << *why << "\n";
      ++failed;
    } else {
      std::cout << "PASS " << name << "\n";
      ++passed;
    }
    std::cout.flush();
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

} // namespace weft::cli
