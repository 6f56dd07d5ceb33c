// Replay: a fixed set of models, each compiled for the CPU and for CUDA (generation only, no
// build), must give the kernels (the IR after lowering and fusion) and the generated
// functions kept beside it under tests/golden/replay/NAME/; each dialect's prelude, the
// same for every model, is kept once (tests/golden/replay/prelude.{cc,cu}). A change to lowering,
// fusion or code generation shows up here as a diff naming the kernel, and lands together with its
// updated goldens: scripts/update-goldens.sh rewrites them (WEFT_UPDATE_GOLDENS=1).
//
// The replay pins what the output depends on besides Weft's code: no oneDNN calls (the
// convolutions and matmuls are generated), no tuning records, the cache size the CPU
// schedule assumes ($WEFT_LLC_BYTES) and a private function cache.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testing/goldens.h"
#include "tests/testing/onnx_text.h"
#include "weft/codegen/emit_c.h"
#include "weft/driver/compile_model.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

const fs::path kReplayDir = fs::path(WEFT_SOURCE_DIR) / "tests" / "golden" / "replay";

using testing::golden_mismatch;
using testing::lines_of;
using testing::read_file;

struct Replayed {
  std::string kernels;   // kernels.txt: each kernel's node, strategy and IR
  std::string functions; // the translation unit after the prelude
};

codegen::Dialect dialect_of(DeviceKind device) {
  return device == DeviceKind::kCuda ? codegen::Dialect::kCuda : codegen::Dialect::kCpu;
}

Result<Replayed> replay(const fs::path& dir, DeviceKind device, const fs::path& scratch) {
  std::string name = dir.filename().string();
  std::optional<ModelSource> model;
  if (fs::exists(dir / "model.onnxtxt")) {
    model =
        ModelSource::memory(testing::model_bytes(read_file(dir / "model.onnxtxt")), name + ".onnx");
  } else {
    std::string path = lines_of(read_file(dir / "model.path")).at(0);
    model = ModelSource(std::string(WEFT_SOURCE_DIR) + "/" + path);
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<runtime::TensorInfo> infos, model_inputs(*model));
  std::vector<Tensor> inputs;
  bool symbolic = false;
  for (const runtime::TensorInfo& info : infos) {
    std::vector<int64_t> dims;
    for (const Dim& d : *info.type.shape) {
      symbolic |= !d.is_static();
      dims.push_back(d.is_static() ? d.value() : 4);
    }
    inputs.emplace_back(info.type.dtype, dims);
  }
  CompileSettings settings;
  settings.device = device;
  settings.goal = CompileGoal::kSource;
  settings.library = false;
  settings.tuning = false;
  settings.dynamic_shapes = symbolic;
  settings.dump_dir = (scratch / (name + "-" + std::string(device_name(device)))).string();
  WEFT_ASSIGN_OR_RETURN(CompiledModel compiled, compile_model(*model, inputs, settings));
  std::string prelude = codegen::emit_prelude(dialect_of(device));
  if (!compiled.source.starts_with(prelude))
    return Status::error(name + ": the source does not start with the prelude");
  return Replayed{read_file(fs::path(settings.dump_dir) / "kernels.txt"),
                  compiled.source.substr(prelude.size())};
}

class Replay : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    scratch_ = fs::temp_directory_path() / fmt::format("weft-replay-{}", ::getpid());
    fs::create_directories(scratch_);
    setenv("WEFT_CACHE_DIR", (scratch_ / "cache").c_str(), 1);
    setenv("WEFT_LLC_BYTES", "33554432", 1); // 32 MiB
    unsetenv("WEFT_ONEDNN");
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
  static fs::path scratch_;
};
fs::path Replay::scratch_;

std::vector<fs::path> replay_models() {
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(kReplayDir))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

TEST_F(Replay, GeneratedCodeMatchesGoldens) {
  using testing::check_golden;
  check_golden(kReplayDir / "prelude.cc", codegen::emit_prelude(codegen::Dialect::kCpu));
  check_golden(kReplayDir / "prelude.cu", codegen::emit_prelude(codegen::Dialect::kCuda));
  std::vector<fs::path> dirs = replay_models();
  ASSERT_GE(dirs.size(), 6u) << kReplayDir;
  for (const fs::path& dir : dirs) {
    for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kCuda}) {
      SCOPED_TRACE(fmt::format("{} on {}", dir.filename().string(), device_name(device)));
      Result<Replayed> r = replay(dir, device, scratch_);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      // The kernels are the same for both devices here (no library calls).
      if (device == DeviceKind::kCpu) check_golden(dir / "kernels.txt", r->kernels);
      check_golden(dir / (device == DeviceKind::kCpu ? "cpu.cc" : "cuda.cu"), r->functions);
    }
  }
}

// The kernel IR of every model reads back as it is printed (kernel_text.h).
TEST_F(Replay, KernelsParseBack) {
  for (const fs::path& dir : replay_models()) {
    std::string text = read_file(dir / "kernels.txt");
    ASSERT_FALSE(testing::kernel_texts(text).empty()) << dir;
    testing::expect_kernels_round_trip((dir.filename() / "kernels.txt").string(), text);
  }
}

// The check fails on a one-character change to a generated kernel, and says which one.
TEST_F(Replay, OneCharacterChangeIsCaught) {
  const fs::path golden = kReplayDir / "softmax_layernorm" / "cpu.cc";
  std::string text = read_file(golden);
  EXPECT_FALSE(golden_mismatch("cpu.cc", text, text));
  size_t at = text.find('+', text.find("void weft_k"));
  ASSERT_NE(at, std::string::npos) << golden;
  std::string changed = text;
  changed[at] = '-';
  std::optional<std::string> diff = golden_mismatch("cpu.cc", changed, text);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("in weft_k"), std::string::npos) << *diff;
  EXPECT_NE(diff->find("now:"), std::string::npos) << *diff;
}

} // namespace
} // namespace weft
