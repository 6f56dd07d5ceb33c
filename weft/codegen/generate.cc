#include "weft/codegen/generate.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include "weft/codegen/emit_c.h"
#include "weft/poly/schedule_kernel.h"
#include "weft/support/build_lock.h"
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

// The CPU's vector loop is the innermost: its reductions of few terms run over outputs
// there. CUDA maps outputs to threads whatever the loop order, and keeps the domain's; its
// elementwise statements share loops only with a grid's worth of points.
poly::ScheduleOptions schedule_options(Dialect dialect) {
  return {.outputs_innermost = dialect == Dialect::kCpu,
          .min_shared_points = dialect == Dialect::kCpu ? 0 : kCudaMinSharedPoints,
          .chained_gathers_apart = dialect == Dialect::kCpu};
}

Result<EmittedFunction> schedule_and_emit(const kernel::Kernel& k, Dialect dialect,
                                          const CpuSchedule& schedule, const CudaOptions& cuda) {
  WEFT_ASSIGN_OR_RETURN(poly::ScheduledKernel scheduled,
                        poly::schedule_kernel(k, schedule_options(dialect)));
  return emit_function(k, scheduled.loops, dialect, schedule, cuda);
}

std::optional<std::string> read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return std::nullopt;
  return text.str();
}

// Writes "text" to "path" under a private name, then renames it into place.
void write_entry(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::path tmp = path;
  tmp += fmt::format(".{}.{}.tmp", ::getpid(), ::gettid());
  {
    std::ofstream out(tmp);
    out << text;
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

std::string format_launches(const std::vector<runtime::cuda::LaunchShape>& launches) {
  std::string text;
  for (const runtime::cuda::LaunchShape& l : launches)
    text += fmt::format("{} {} {}\n", l.function, l.block, l.one_block ? "1" : "device");
  return text;
}

std::optional<std::vector<runtime::cuda::LaunchShape>> parse_launches(const std::string& text) {
  std::vector<runtime::cuda::LaunchShape> launches;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    runtime::cuda::LaunchShape l;
    std::string grid;
    if (!(words >> l.function >> l.block >> grid) || l.block <= 0 ||
        (grid != "1" && grid != "device"))
      return std::nullopt;
    l.one_block = grid == "1";
    launches.push_back(std::move(l));
  }
  return launches;
}

} // namespace

Result<GeneratedFunction> generate_function(const kernel::Kernel& k, Dialect dialect,
                                            const std::string& cache_dir,
                                            const CpuSchedule& schedule, const CudaOptions& cuda) {
  const std::string& fingerprint = build_fingerprint();
  if (cache_dir.empty() || fingerprint.empty()) {
    WEFT_ASSIGN_OR_RETURN(EmittedFunction f, schedule_and_emit(k, dialect, schedule, cuda));
    return GeneratedFunction{std::move(f.source), std::move(f.launches), false};
  }
  fs::path dir = fs::path(cache_dir) / "functions";
  std::string key = hash_hex(fmt::format(
      "{}\n{}\n{}\n{}", fingerprint, static_cast<int>(dialect),
      dialect == Dialect::kCpu ? schedule.to_string() : cuda.key(), kernel::print_kernel(k)));
  fs::path entry = dir / (key + ".txt"), launch_entry = dir / (key + ".launch");
  auto cached = [&]() -> std::optional<GeneratedFunction> {
    std::optional<std::string> source = read_all(entry);
    if (!source || source->empty()) return std::nullopt;
    if (dialect == Dialect::kCpu) return GeneratedFunction{std::move(*source), {}, true};
    std::optional<std::string> text = read_all(launch_entry);
    if (auto launches = text ? parse_launches(*text) : std::nullopt; launches && !launches->empty())
      return GeneratedFunction{std::move(*source), std::move(*launches), true};
    return std::nullopt;
  };
  if (std::optional<GeneratedFunction> hit = cached()) return std::move(*hit);

  // A cache that cannot be written only costs time; the function is returned regardless.
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Processes that generate the same kernel at once (a cold cache shared by workers started
  // together) schedule it once: the others wait for the first and read its entry.
  BuildLock lock((dir / (key + ".lock")).string(), std::chrono::minutes(2));
  if (lock.waited())
    if (std::optional<GeneratedFunction> hit = cached()) return std::move(*hit);
  WEFT_ASSIGN_OR_RETURN(EmittedFunction f, schedule_and_emit(k, dialect, schedule, cuda));
  if (dialect == Dialect::kCuda) write_entry(launch_entry, format_launches(f.launches));
  write_entry(entry, f.source);
  return GeneratedFunction{std::move(f.source), std::move(f.launches), false};
}

Result<std::vector<EmittedFunction>> generate_variants(const kernel::Kernel& k, Dialect dialect,
                                                       const std::vector<Variant>& variants) {
  WEFT_ASSIGN_OR_RETURN(poly::ScheduledKernel scheduled,
                        poly::schedule_kernel(k, schedule_options(dialect)));
  std::vector<EmittedFunction> functions;
  kernel::Kernel named = k;
  for (const Variant& v : variants) {
    named.name = v.name;
    WEFT_ASSIGN_OR_RETURN(EmittedFunction f,
                          emit_function(named, scheduled.loops, dialect, v.schedule, v.cuda));
    functions.push_back(std::move(f));
  }
  return functions;
}

} // namespace weft::codegen
