#include "weft/toolchain/compile_cpu.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/support/build_lock.h"
#include "weft/support/hash.h"
#include "weft/support/log.h"
#include "weft/support/machine.h"

extern char** environ;

namespace weft::toolchain {

namespace fs = std::filesystem;

namespace {

// How long a process waits for another that builds the same cache entry before building it
// too: longer than a cold build of the largest models (Keypoint R-CNN's kernels, 170 s).
constexpr std::chrono::minutes kBuildPatience{10};

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

// Starts "argv" with stdout and stderr to "log"; its pid, or -1 if it could not start.
pid_t spawn_logged(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The exit status of a process that spawn_logged started (-1 if it did not start or exit).
int wait_for(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whether the compiler "cxx" accepts "flags" (checked once per process by preprocessing an
// empty file, a few milliseconds): GCC 12's -mmove-max, which clang and older GCCs reject.
bool accepts(const std::string& cxx, const std::vector<std::string>& flags) {
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  std::string key = cxx + "\n" + fmt::format("{}", fmt::join(flags, " "));
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  std::vector<std::string> argv = split_words(cxx);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-E", "-x", "c++", "/dev/null", "-o", "/dev/null"});
  return known[key] = !argv.empty() && wait_for(spawn_logged(argv, "/dev/null")) == 0;
}

// The cores this process may run on.
size_t available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

std::string shell_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    bool plain = a.find_first_of(" \t\"'\\$") == std::string::npos;
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

std::vector<std::string> compile_command(const CpuCompiler& compiler,
                                         const std::string& source_file,
                                         const std::string& output) {
  std::vector<std::string> argv = split_words(compiler.cxx);
  argv.insert(argv.end(), compiler.flags.begin(), compiler.flags.end());
  argv.insert(argv.end(), {"-o", output, source_file});
  return argv;
}

CpuCompiler CpuCompiler::from_environment() {
  CpuCompiler c;
  const char* cxx = std::getenv("CXX");
  c.cxx = cxx && *cxx ? cxx : "c++";
  c.flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", "-w"};
  // Generated code reads neither the FP exception flags nor errno; telling GCC so lets it
  // compute both sides of a select and vectorize sqrt. Results stay IEEE (this is not
  // fast-math: no reassociation, NaN and inf kept).
  c.flags.insert(c.flags.end(), {"-fno-trapping-math", "-fno-math-errno"});
#if defined(__x86_64__)
  // GCC vectorizes with 256-bit registers even where AVX-512 is there; 512 bits halve the
  // instructions of compute-heavy loops (exp, erf: softmax and GELU run 2x faster), and this
  // flag changes nothing on machines without AVX-512.
  c.flags.push_back("-mprefer-vector-width=512");
  // And it copies a small array of known size (a contracted row's init: 32 floats) with
  // 256-bit moves all the same, so that a 512-bit load of the row right after waits for two
  // stores (a failed store forward): ShuffleNetV2's stem max pooling 0.043 -> 0.020 ms,
  // MobileNetV2's generated 3x3 depthwise convolution over [1,112,112,32] 0.226 -> 0.067.
  // With 512-bit moves allowed, copies match the loads (no effect without AVX-512).
  const std::vector<std::string> moves = {"-mmove-max=512", "-mstore-max=512"};
  if (accepts(c.cxx, moves)) c.flags.insert(c.flags.end(), moves.begin(), moves.end());
#endif
  c.cache_dir = weft_cache_dir();
  return c;
}

namespace {

// Runs the commands at once, each with its log; the first failure, if any.
Status run_all(const std::vector<std::vector<std::string>>& commands,
               const std::vector<std::string>& logs) {
  std::vector<pid_t> pids(commands.size(), -1);
  for (size_t i = 0; i < commands.size(); ++i) {
    log_debug("compiling: {}", shell_line(commands[i]));
    pids[i] = spawn_logged(commands[i], logs[i]);
  }
  Status first;
  for (size_t i = 0; i < commands.size(); ++i) {
    int status = wait_for(pids[i]);
    if (status != 0 && first.ok()) {
      first = Status::error(
          fmt::format("compiling a kernel failed (exit status {}): {}; compiler output in {}",
                      status, shell_line(commands[i]), logs[i]));
    }
  }
  return first;
}

// How many translation units: one per core (of those this process may run on), at most 8
// and one per function; one where the functions are too few bytes for a second unit to pay
// for the prelude again (0.05 s precompiled, 0.45 s parsed; GCC compiles 3-12 ms a KB of
// generated functions).
size_t unit_count(int units, const std::vector<std::string>& functions, bool precompiled) {
  size_t bytes = 0;
  for (const std::string& f : functions)
    bytes += f.size();
  size_t n = units > 0 ? static_cast<size_t>(units) : std::min<size_t>(available_cores(), 8);
  if (units <= 0 && bytes < (precompiled ? 16 : 64) * 1024) n = 1;
  return std::max<size_t>(1, std::min(n, functions.size()));
}

// The prelude as a header in the cache, and beside it GCC's precompiled form of it, which
// a translation unit that includes the header first reads instead of parsing it: the
// prelude's headers (immintrin.h, cmath, algorithm) took 0.45 s of every unit's 0.6 s for a
// few kernels, 0.25 s with the precompiled header, built once per prelude and flags (1.3 s;
// AMD EPYC, 2026-12-02). A compiler that cannot use it (another version, clang, ccache
// without its pch sloppiness) parses the header instead: the same code either way. The
// header's path, or empty if it could not be written.
std::string precompiled_prelude(const std::string& prelude, const CpuCompiler& compiler,
                                const std::string& unique) {
  std::string key = hash_hex(compiler.cxx + "\n" +
                             fmt::format("{}", fmt::join(compiler.flags, " ")) + "\n" + prelude);
  fs::path dir = compiler.cache_dir;
  fs::path header = dir / ("prelude-" + key + ".h"), pch = dir / ("prelude-" + key + ".h.gch");
  std::error_code ec;
  if (fs::exists(header, ec) && fs::exists(pch, ec)) return header.string();
  BuildLock lock((dir / ("prelude-" + key + ".lock")).string(), kBuildPatience);
  if (!fs::exists(header, ec)) {
    fs::path tmp = dir / (unique + ".h");
    std::ofstream(tmp) << prelude;
    fs::rename(tmp, header, ec);
    if (ec) return "";
  }
  if (!fs::exists(pch, ec)) {
    std::vector<std::string> argv = split_words(compiler.cxx);
    for (const std::string& f : compiler.flags)
      if (f != "-shared") argv.push_back(f);
    fs::path tmp = dir / (unique + ".h.gch");
    fs::path log = dir / (unique + ".pch.log");
    argv.insert(argv.end(), {"-x", "c++-header", "-o", tmp.string(), header.string()});
    log_debug("precompiling the prelude: {}", shell_line(argv));
    if (wait_for(spawn_logged(argv, log.string())) == 0)
      fs::rename(tmp, pch, ec);
    else
      log_debug("the prelude did not precompile; units parse it ({})", shell_line(argv));
    fs::remove(tmp, ec);
    fs::remove(log, ec);
  }
  return header.string();
}

} // namespace

Result<CompiledLibrary> compile_cpu(const std::string& source, const CpuCompiler& compiler) {
  return compile_cpu(source, {}, compiler, 1);
}

Result<CompiledLibrary> compile_cpu(const std::string& prelude,
                                    const std::vector<std::string>& functions,
                                    const CpuCompiler& compiler, int units) {
  if (split_words(compiler.cxx).empty()) return Status::error("no C++ compiler: $CXX is blank");
  std::string source = prelude;
  for (const std::string& f : functions)
    source += "\n" + f;
  std::string key = hash_hex(compiler.cxx + "\n" +
                             fmt::format("{}", fmt::join(compiler.flags, " ")) + "\n" + source);
  fs::path dir = compiler.cache_dir;
  fs::path library = dir / (key + ".so");
  std::error_code ec;
  if (fs::exists(library, ec)) {
    log_info("kernel cache hit: {}", library.string());
    return CompiledLibrary{library.string(), true};
  }
  fs::create_directories(dir, ec);
  if (ec)
    return Status::error(
        fmt::format("cannot create the kernel cache {}: {}", dir.string(), ec.message()));
  // One build of this entry at a time: another process (or thread) building it now has it
  // in the cache when the lock comes free.
  BuildLock lock((dir / (key + ".lock")).string(), kBuildPatience);
  if (lock.waited() && fs::exists(library, ec)) {
    log_info("kernel cache hit, built meanwhile by another process: {}", library.string());
    return CompiledLibrary{library.string(), true};
  }
  log_info("kernel cache miss: building {}", library.string());

  // Private names for this build (threads of one process may build the same source at
  // once); the finished library is renamed into place.
  std::string unique = fmt::format("{}.{}.{}", key, ::getpid(), ::gettid()); // per thread
  fs::path src = dir / (unique + ".cc");
  fs::path tmp = dir / (unique + ".so.tmp");
  auto write = [](const fs::path& path, const std::string& text) -> Status {
    std::ofstream out(path);
    out << text;
    return out ? Status() : Status::error(fmt::format("cannot write {}", path.string()));
  };
  WEFT_RETURN_IF_ERROR(write(src, source));
  std::string header = functions.empty() ? "" : precompiled_prelude(prelude, compiler, unique);
  size_t n = unit_count(units, functions, !header.empty());
  std::vector<fs::path> cleanup;
  Status built;
  if (header.empty() && n == 1) {
    built = run_all({compile_command(compiler, src.string(), tmp.string())},
                    {(dir / (key + ".log")).string()});
  } else {
    // Functions to units by size, the largest first, each to the unit with the fewest bytes.
    std::vector<size_t> order(functions.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return functions[a].size() > functions[b].size(); });
    // Each unit includes the prelude's header, whose precompiled form it reads.
    std::vector<std::string> text(n, header.empty() ? prelude
                                                    : fmt::format("#include \"{}\"\n", header));
    std::vector<size_t> bytes(n, 0);
    for (size_t f : order) {
      size_t u = static_cast<size_t>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
      text[u] += "\n" + functions[f];
      bytes[u] += functions[f].size();
    }
    CpuCompiler object = compiler; // each unit to an object file; the library links them
    std::erase(object.flags, std::string("-shared"));
    object.flags.push_back("-c");
    std::vector<std::vector<std::string>> commands;
    std::vector<std::string> logs, objects;
    for (size_t u = 0; u < n && built.ok(); ++u) {
      fs::path part = dir / fmt::format("{}.{}.cc", unique, u);
      objects.push_back((dir / fmt::format("{}.{}.o", unique, u)).string());
      logs.push_back((dir / fmt::format("{}.{}.log", key, u)).string());
      cleanup.insert(cleanup.end(), {part, objects.back()});
      built = write(part, text[u]);
      commands.push_back(compile_command(object, part.string(), objects.back()));
    }
    if (built.ok()) built = run_all(commands, logs);
    if (built.ok()) {
      std::vector<std::string> link = compile_command(compiler, objects[0], tmp.string());
      link.insert(link.end(), objects.begin() + 1, objects.end());
      logs.push_back((dir / (key + ".log")).string());
      built = run_all({link}, {logs.back()});
    }
    for (size_t u = 0; built.ok() && u < logs.size(); ++u)
      fs::remove(logs[u], ec);
  }
  for (const fs::path& p : cleanup) // a failed unit's source stays, beside its log
    if (built.ok() || p.extension() == ".o") fs::remove(p, ec);
  if (!built.ok()) return built;
  fs::rename(src, dir / (key + ".cc"), ec);
  fs::rename(tmp, library, ec);
  if (ec)
    return Status::error(
        fmt::format("cannot move {} into the kernel cache: {}", tmp.string(), ec.message()));
  fs::remove(dir / (key + ".log"), ec);
  return CompiledLibrary{library.string(), false};
}

} // namespace weft::toolchain
