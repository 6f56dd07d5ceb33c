#include "weft/codegen/generate.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include "weft/codegen/emit_c.h"
#include "weft/poly/schedule_kernel.h"
#include "weft/support/hash.h"

namespace weft::codegen {

namespace fs = std::filesystem;

namespace {

// Identifies the binary this code was loaded from; changes whenever it is rebuilt.
const std::string& build_fingerprint() {
  static const std::string fingerprint = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&generate_function), &info) == 0 || !info.dli_fname)
      return std::string();
    std::error_code ec;
    fs::path binary = fs::canonical(info.dli_fname, ec);
    if (ec) return std::string();
    auto size = fs::file_size(binary, ec);
    auto mtime = fs::last_write_time(binary, ec).time_since_epoch().count();
    if (ec) return std::string();
    return fmt::format("{}:{}:{}", binary.string(), size, mtime);
  }();
  return fingerprint;
}

Result<std::string> schedule_and_emit(const kernel::Kernel& k, Dialect dialect,
                                      const CpuSchedule& schedule, const CudaOptions& cuda) {
  WEFT_ASSIGN_OR_RETURN(poly::ScheduledKernel scheduled, poly::schedule_kernel(k));
  return emit_function(k, scheduled.loops, dialect, schedule, cuda);
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

} // namespace

Result<GeneratedFunction> generate_function(const kernel::Kernel& k, Dialect dialect,
                                            const std::string& cache_dir,
                                            const CpuSchedule& schedule, const CudaOptions& cuda) {
  const std::string& fingerprint = build_fingerprint();
  if (cache_dir.empty() || fingerprint.empty()) {
    WEFT_ASSIGN_OR_RETURN(std::string source, schedule_and_emit(k, dialect, schedule, cuda));
    return GeneratedFunction{std::move(source), false};
  }
  fs::path dir = fs::path(cache_dir) / "functions";
  std::string key = hash_hex(fmt::format("{}\n{}\n{}\n{}", fingerprint, static_cast<int>(dialect),
                                         dialect == Dialect::kCpu ? schedule.to_string()
                                         : cuda.deterministic     ? "deterministic"
                                                                  : "",
                                         kernel::print_kernel(k)));
  fs::path entry = dir / (key + ".txt");
  std::string cached = read_all(entry);
  if (!cached.empty()) return GeneratedFunction{std::move(cached), true};

  WEFT_ASSIGN_OR_RETURN(std::string source, schedule_and_emit(k, dialect, schedule, cuda));
  // A cache that cannot be written only costs time; the function is returned regardless.
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path tmp = dir / fmt::format("{}.{}.{}.tmp", key, ::getpid(), ::gettid());
  {
    std::ofstream out(tmp);
    out << source;
  }
  fs::rename(tmp, entry, ec);
  if (ec) fs::remove(tmp, ec);
  return GeneratedFunction{std::move(source), false};
}

Result<std::vector<std::string>> generate_variants(const kernel::Kernel& k,
                                                   const std::vector<CpuSchedule>& schedules,
                                                   const std::vector<std::string>& names) {
  WEFT_ASSIGN_OR_RETURN(poly::ScheduledKernel scheduled, poly::schedule_kernel(k));
  std::vector<std::string> functions;
  kernel::Kernel named = k;
  for (size_t i = 0; i < schedules.size(); ++i) {
    named.name = names[i];
    WEFT_ASSIGN_OR_RETURN(std::string f,
                          emit_function(named, scheduled.loops, Dialect::kCpu, schedules[i]));
    functions.push_back(std::move(f));
  }
  return functions;
}

} // namespace weft::codegen
