// compile_cpu: generated C++ into a shared object, with the system compiler.
//
// Builds are cached by a content hash of the source, the compiler and its flags, in
// $WEFT_CACHE_DIR (default ~/.cache/weft). Several processes may share the cache: each
// builds under a private name and renames the result into place atomically, and those that
// miss the same entry at once wait for one build (BuildLock) instead of each building it.
#pragma once

#include <string>
#include <vector>

#include "weft/support/status.h"

namespace weft::toolchain {

struct CpuCompiler {
  std::string cxx;                // $CXX, else "c++"; may hold several words ("ccache g++")
  std::vector<std::string> flags; // optimization, OpenMP and shared-object flags
  std::string cache_dir;          // $WEFT_CACHE_DIR, else ~/.cache/weft

  // The compiler and cache of this environment.
  static CpuCompiler from_environment();
};

struct CompiledLibrary {
  std::string path; // the shared object
  bool cache_hit = false;
};

// The command that builds "source_file" into the shared object "output", one word each.
std::vector<std::string> compile_command(const CpuCompiler& compiler,
                                         const std::string& source_file, const std::string& output);
// The command as one shell line, with words quoted where needed.
std::string shell_line(const std::vector<std::string>& argv);

// Compiles "source" (or finds it in the cache). On failure, the message holds the full
// command and the path of the compiler's log.
Result<CompiledLibrary> compile_cpu(const std::string& source, const CpuCompiler& compiler);
// The same for the source "prelude", then "\n" and each function (the same cache entry). A
// miss compiles the functions as up to "units" translation units at once, each including the
// prelude as a header that GCC reads precompiled (built once per prelude, compiler and flags,
// in the cache), and links them: GCC takes one core a unit, and the prelude's headers had
// cost 0.45 s a compile. "units": 0 for one per core (at most 8), fewer for a small source.
Result<CompiledLibrary> compile_cpu(const std::string& prelude,
                                    const std::vector<std::string>& functions,
                                    const CpuCompiler& compiler, int units = 0);

} // namespace weft::toolchain
