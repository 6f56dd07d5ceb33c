#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "weft/driver/stages.h"
#include "weft/support/hash.h"
#include "weft/support/log.h"
#include "weft/toolchain/compile_cpu.h"

namespace weft::stages {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::string dump_dir_for(const ModelSource& model, const std::vector<Tensor>& inputs,
                         const CompileSettings& settings) {
  if (!settings.dump_dir.empty()) return settings.dump_dir;
  const char* root = std::getenv("WEFT_DUMP_DIR");
  if (!root || !*root) return "";
  std::string key = model.path;
  for (const Tensor& t : inputs)
    key += "," + t.type().to_string();
  std::string stem = std::filesystem::path(model.path).stem().string();
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return (std::filesystem::path(root) / fmt::format("{}-{}", stem, hash_hex(key).substr(0, 8)))
      .string();
}

std::string rebuild_script() {
  toolchain::CpuCompiler compiler = toolchain::CpuCompiler::from_environment();
  return "#!/bin/sh\n# Rebuilds kernels.so from kernels.cc as Weft built it.\n"
         "cd \"$(dirname \"$0\")\" && " +
         toolchain::shell_line(toolchain::compile_command(compiler, "kernels.cc", "kernels.so")) +
         "\n";
}

Dumper::Dumper(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    status_ =
        Status::error(fmt::format("{}: cannot create the dump directory: {}", dir_, ec.message()));
}

void Dumper::write(const std::string& name, const std::string& text) {
  if (dir_.empty() || !status_.ok()) return;
  std::filesystem::path path = std::filesystem::path(dir_) / name;
  std::ofstream out(path);
  out << text;
  if (!out) status_ = Status::error(fmt::format("{}: cannot write the file", path.string()));
}

PhaseTimer::PhaseTimer(std::vector<PhaseTime>* phases) : phases_(phases), start_ms_(now_ms()) {}

void PhaseTimer::end(std::string phase) {
  double now = now_ms();
  phases_->push_back({std::move(phase), now - start_ms_});
  start_ms_ = now;
}

void log_phases(const std::string& model, const std::vector<PhaseTime>& phases) {
  std::string times;
  for (const PhaseTime& p : phases)
    times += fmt::format(" {} {:.1f} ms,", p.phase, p.ms);
  log_info("compiled {}:{}", model, times.substr(0, times.size() - 1));
}

} // namespace weft::stages
