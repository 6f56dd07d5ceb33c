#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "weft/support/dynamic_library.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

// pip's layout: PREFIX/bin/weft and PREFIX/lib/python3.X/site-packages/nvidia/*/lib.
TEST(DynamicLibrary, WheelDirectoriesAreTheNvidiaLibsOfTheProgramsPrefix) {
  fs::path prefix = fs::temp_directory_path() / fs::path("weft_wheels_" + std::to_string(getpid()));
  fs::remove_all(prefix);
  fs::path site = prefix / "lib" / "python3.11" / "site-packages";
  for (const char* d : {"nvidia/cu13/lib", "nvidia/cudnn/lib", "nvidia/nccl/include", "torch/lib"})
    fs::create_directories(site / d);
  fs::create_directories(prefix / "lib" / "other" / "site-packages" / "nvidia" / "x" / "lib");
  fs::create_directories(prefix / "bin");
  std::ofstream(prefix / "bin" / "weft") << "";
  std::vector<std::string> want = {(site / "nvidia" / "cu13" / "lib").string(),
                                   (site / "nvidia" / "cudnn" / "lib").string()};
  EXPECT_EQ(wheel_library_dirs((prefix / "bin" / "weft").string()), want);
  EXPECT_TRUE(wheel_library_dirs("/nonexistent/bin/weft").empty());
  fs::remove_all(prefix);
}

TEST(DynamicLibrary, AMissingLibraryIsNull) {
  EXPECT_EQ(open_first({"libweft_no_such_library.so.1"}), nullptr);
}

} // namespace
} // namespace weft
