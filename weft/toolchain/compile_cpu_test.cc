#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "weft/toolchain/compile_cpu.h"

namespace weft::toolchain {
namespace {

namespace fs = std::filesystem;

// The flags CpuCompiler::from_environment gives "$CXX" = "cxx".
CpuCompiler with_cxx(const std::string& cxx) {
  const char* before = std::getenv("CXX");
  std::string saved = before ? before : "";
  ::setenv("CXX", cxx.c_str(), 1);
  CpuCompiler c = CpuCompiler::from_environment();
  if (before)
    ::setenv("CXX", saved.c_str(), 1);
  else
    ::unsetenv("CXX");
  return c;
}

bool has_move_max(const CpuCompiler& c) {
  return std::count(c.flags.begin(), c.flags.end(), std::string("-mmove-max=512")) > 0;
}

// A compiler that rejects GCC 12's -mmove-max (clang, older GCCs; here a wrapper of c++ that
// refuses it) gets no such flag, and builds; the GCC that built this test gets it on x86.
TEST(CpuCompiler, FlagsAreOnlyThoseTheCompilerAccepts) {
  fs::path dir = fs::temp_directory_path() / ("weft_cxx_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string wrapper = (dir / "refuses-move-max").string();
  std::ofstream(wrapper) << "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in -mmove-max=*) exit 1;; "
                            "esac; done\nexec c++ \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  CpuCompiler refusing = with_cxx(wrapper);
  EXPECT_FALSE(has_move_max(refusing));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  EXPECT_TRUE(has_move_max(with_cxx("c++"))); // Debian's c++ is that GCC
#endif
  refusing.cache_dir = (dir / "cache").string();
  Result<CompiledLibrary> lib =
      compile_cpu("extern \"C\" int weft_seven() { return 7; }\n", refusing);
  EXPECT_TRUE(lib.ok()) << lib.status().to_string();
  fs::remove_all(dir);
}

// Two builders of the same source at once build it once: the second waits for the first's
// lock and then finds the library in the cache.
TEST(CompileCpu, ConcurrentBuildsOfOneSourceBuildOnce) {
  CpuCompiler compiler = CpuCompiler::from_environment();
  fs::path dir = fs::temp_directory_path() / ("weft_lock_test_" + std::to_string(::getpid()));
  compiler.cache_dir = dir.string();
  const std::string source = "extern \"C\" int weft_eight() { return 8; }\n";
  Result<CompiledLibrary> results[2] = {Status::error("not run"), Status::error("not run")};
  std::thread builders[2];
  for (int i = 0; i < 2; ++i)
    builders[i] = std::thread([&, i] { results[i] = compile_cpu(source, compiler); });
  for (std::thread& t : builders)
    t.join();
  ASSERT_TRUE(results[0].ok()) << results[0].status().to_string();
  ASSERT_TRUE(results[1].ok()) << results[1].status().to_string();
  EXPECT_EQ(results[0]->path, results[1]->path);
  EXPECT_NE(results[0]->cache_hit, results[1]->cache_hit); // one built, one found it
  for (const auto& entry : fs::directory_iterator(dir))    // no lock or temporary left
    EXPECT_TRUE(entry.path().extension() == ".so" || entry.path().extension() == ".cc")
        << entry.path();
  fs::remove_all(dir);
}

} // namespace
} // namespace weft::toolchain
