#include <gtest/gtest.h>

#include "weft/toolchain/cubin.h"
#include "weft/toolchain/nvrtc.h"

namespace weft::toolchain {
namespace {

// The occupancy the H200 runs of 2026-11-30 explained: LayerNorm's 256 lanes of 64 registers
// held 4 blocks a SM, ALL's 40 registers 6 and its 32 registers 8, GroupNorm's 1024 lanes of 64
// one.
TEST(Cubin, ResidentBlocksFollowRegistersThreadsAndShared) {
  auto blocks = [](int64_t registers, int64_t shared, int64_t block, const std::string& arch) {
    return resident_blocks({registers, 0, shared}, block, arch).value();
  };
  EXPECT_EQ(blocks(64, 1056, 256, "sm_90"), 4);
  EXPECT_EQ(blocks(40, 1060, 256, "sm_90"), 6);
  EXPECT_EQ(blocks(32, 1060, 256, "sm_90"), 8);
  EXPECT_EQ(blocks(64, 1152, 1024, "sm_90"), 1);
  EXPECT_EQ(blocks(16, 0, 64, "sm_90"), 32);         // the block limit
  EXPECT_EQ(blocks(16, 0, 256, "sm_86"), 6);         // 1536 threads
  EXPECT_EQ(blocks(16, 100 << 10, 256, "sm_90"), 2); // shared memory
  EXPECT_FALSE(resident_blocks({32, 0, 0}, 256, "sm_70").ok());
}

TEST(Cubin, RefusesWhatIsNotACudaElfObject) {
  EXPECT_FALSE(cubin_functions("").ok());
  EXPECT_FALSE(cubin_functions(std::string(64, 'x')).ok());
  std::string header(64, '\0');
  header.replace(0, 4,
                 "\x7f"
                 "ELF");
  header[4] = 2;
  EXPECT_FALSE(cubin_functions(header).ok()); // no sections where it says
}

// With NVRTC here: a function's registers, stack frame and shared memory from its machine code.
TEST(Cubin, ReadsNvrtcMachineCode) {
  Result<const Nvrtc*> nvrtc = Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << nvrtc.status().message();
  std::string source = "extern \"C\" __global__ void __launch_bounds__(128) f(float* y) {\n"
                       "  __shared__ float tile[64];\n"
                       "  tile[threadIdx.x % 64] = y[threadIdx.x];\n"
                       "  __syncthreads();\n"
                       "  y[threadIdx.x] = tile[(threadIdx.x + 1) % 64];\n"
                       "}\n"
                       "extern \"C\" __global__ void g(float* y) { y[threadIdx.x] += 1.0f; }\n"
                       // Shared memory past the file's end: its section has no bytes there.
                       "extern \"C\" __global__ void h(float* y) {\n"
                       "  __shared__ float big[8192];\n"
                       "  big[threadIdx.x] = y[threadIdx.x];\n"
                       "  __syncthreads();\n"
                       "  y[threadIdx.x] = big[8191 - threadIdx.x];\n"
                       "}\n";
  Result<std::string> cubin = (*nvrtc)->compile_to_cubin(source, "probe", "sm_90");
  if (!cubin.ok()) GTEST_SKIP() << cubin.status().message();
  Result<std::map<std::string, CubinFunction>> functions = cubin_functions(*cubin);
  ASSERT_TRUE(functions.ok()) << functions.status().message();
  ASSERT_EQ(functions->size(), 3u);
  const CubinFunction& f = functions->at("f");
  EXPECT_GT(f.registers, 0);
  EXPECT_LE(f.registers, 32);
  EXPECT_GE(f.shared_bytes, 64 * 4);
  EXPECT_EQ(f.frame_bytes, 0);
  EXPECT_GT(functions->at("g").registers, 0);
  EXPECT_GE(functions->at("h").shared_bytes, 8192 * 4);
}

} // namespace
} // namespace weft::toolchain
