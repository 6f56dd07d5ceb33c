#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/testing/kernels.h"
#include "weft/codegen/generate.h"

namespace weft::codegen {
namespace {

namespace fs = std::filesystem;

// Two generators of one kernel at once into an empty function cache schedule it once: the
// second waits for the first's lock, then reads its entry (the same source).
TEST(GenerateFunction, ConcurrentGenerationsOfOneKernelScheduleItOnce) {
  fs::path dir = fs::temp_directory_path() / ("weft_generate_test_" + std::to_string(::getpid()));
  kernel::Kernel k = testing::copy_kernel(70, 90, true);
  Result<GeneratedFunction> results[2] = {Status::error("not run"), Status::error("not run")};
  std::thread generators[2];
  for (int i = 0; i < 2; ++i)
    generators[i] =
        std::thread([&, i] { results[i] = generate_function(k, Dialect::kCpu, dir.string()); });
  for (std::thread& t : generators)
    t.join();
  ASSERT_TRUE(results[0].ok()) << results[0].status().to_string();
  ASSERT_TRUE(results[1].ok()) << results[1].status().to_string();
  EXPECT_EQ(results[0]->source, results[1]->source);
  EXPECT_NE(results[0]->cache_hit, results[1]->cache_hit);            // one scheduled, one read it
  for (const auto& entry : fs::directory_iterator(dir / "functions")) // no lock left
    EXPECT_EQ(entry.path().extension(), ".txt") << entry.path();
  fs::remove_all(dir);
}

} // namespace
} // namespace weft::codegen
