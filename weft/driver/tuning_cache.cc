#include "weft/driver/tuning_cache.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <unistd.h>

#include "weft/kernel/kernel.h"
#include "weft/support/hash.h"
#include "weft/support/machine.h"

namespace weft {

namespace fs = std::filesystem;

int kernel_threads() { return omp_get_max_threads(); }

TuningCache::TuningCache(const toolchain::CpuCompiler& compiler, int threads)
    : TuningCache((fs::path(compiler.cache_dir) / "tuning").string(),
                  fmt::format("{}\n{} threads\n{} {}", cpu_model_name(), threads, compiler.cxx,
                              fmt::join(compiler.flags, " ")),
                  false) {}

TuningCache TuningCache::for_cuda(const std::string& device, bool deterministic) {
  return TuningCache(
      (fs::path(toolchain::CpuCompiler::from_environment().cache_dir) / "tuning").string(),
      fmt::format("cuda\n{}{}", device, deterministic ? "\ndeterministic" : ""), true);
}

std::string TuningCache::path_of(const std::string& kernel_ir) const {
  // The first line names the kernel ("kernel k3_Softmax"): the same kernel in another
  // model, or at another place, shares the record.
  std::string key = machine_ + std::string(kernel::kernel_body(kernel_ir));
  return (fs::path(dir_) / (hash_hex(key) + ".json")).string();
}

std::optional<TuningRecord> TuningCache::lookup(const std::string& kernel_ir) const {
  std::ifstream in(path_of(kernel_ir));
  if (!in) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  // Unreadable: the cost model applies, and a new tune rewrites it.
  const char* field = cuda_ ? "cuda" : "schedule";
  if (!j.is_object() || !j.contains(field) || !j[field].is_string()) return std::nullopt;
  TuningRecord r;
  std::string text = j[field].get<std::string>();
  if (cuda_) {
    std::optional<codegen::CudaOptions> cuda = codegen::CudaOptions::parse(text);
    if (!cuda) return std::nullopt;
    r.cuda = *cuda;
  } else {
    std::optional<codegen::CpuSchedule> schedule = codegen::CpuSchedule::parse(text);
    if (!schedule) return std::nullopt;
    r.schedule = *schedule;
  }
  r.best_ms = j.value("best_ms", 0.0);
  r.default_ms = j.value("default_ms", 0.0);
  r.candidates = j.value("candidates", 0);
  r.kernel = j.value("kernel", "");
  return r;
}

Status TuningCache::store(const std::string& kernel_ir, const TuningRecord& r) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return Status::error(fmt::format("cannot create the tuning cache {}: {}", dir_, ec.message()));
  nlohmann::json j = {
      {cuda_ ? "cuda" : "schedule", cuda_ ? r.cuda.to_string() : r.schedule.to_string()},
      {"best_ms", r.best_ms},
      {"default_ms", r.default_ms},
      {"candidates", r.candidates},
      {"kernel", r.kernel}};
  std::string path = path_of(kernel_ir);
  std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) return Status::error(fmt::format("cannot write the tuning record {}", tmp));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::error(fmt::format("cannot write the tuning record {}", path));
  }
  return Status();
}

} // namespace weft
