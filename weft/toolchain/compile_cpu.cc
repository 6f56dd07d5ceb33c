#include "weft/toolchain/compile_cpu.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/support/hash.h"
#include "weft/support/log.h"
#include "weft/support/machine.h"

extern char** environ;

namespace weft::toolchain {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

// Runs "argv" with stdout and stderr to "log"; returns its exit status (-1 if it could not run).
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
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
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
#endif
  c.cache_dir = weft_cache_dir();
  return c;
}

Result<CompiledLibrary> compile_cpu(const std::string& source, const CpuCompiler& compiler) {
  if (split_words(compiler.cxx).empty()) return Status::error("no C++ compiler: $CXX is blank");
  std::string key = hash_hex(compiler.cxx + "\n" +
                             fmt::format("{}", fmt::join(compiler.flags, " ")) + "\n" + source);
  fs::path dir = compiler.cache_dir;
  fs::path library = dir / (key + ".so");
  std::error_code ec;
  if (fs::exists(library, ec)) {
    log_info("kernel cache hit: {}", library.string());
    return CompiledLibrary{library.string(), true};
  }
  log_info("kernel cache miss: building {}", library.string());
  fs::create_directories(dir, ec);
  if (ec)
    return Status::error(
        fmt::format("cannot create the kernel cache {}: {}", dir.string(), ec.message()));

  // Private names for this build (threads of one process may build the same source at
  // once); the finished library is renamed into place.
  std::string unique = fmt::format("{}.{}.{}", key, ::getpid(), ::gettid()); // per thread
  fs::path src = dir / (unique + ".cc");
  fs::path tmp = dir / (unique + ".so.tmp");
  fs::path log = dir / (key + ".log");
  {
    std::ofstream out(src);
    out << source;
    if (!out) return Status::error(fmt::format("cannot write {}", src.string()));
  }
  std::vector<std::string> argv = compile_command(compiler, src.string(), tmp.string());
  log_debug("compiling: {}", shell_line(argv));
  int status = run_logged(argv, log.string());
  if (status != 0) {
    return Status::error(
        fmt::format("compiling a kernel failed (exit status {}): {}; compiler output in {}", status,
                    shell_line(argv), log.string()));
  }
  fs::rename(src, dir / (key + ".cc"), ec);
  fs::rename(tmp, library, ec);
  if (ec)
    return Status::error(
        fmt::format("cannot move {} into the kernel cache: {}", tmp.string(), ec.message()));
  fs::remove(log, ec);
  return CompiledLibrary{library.string(), false};
}

} // namespace weft::toolchain
