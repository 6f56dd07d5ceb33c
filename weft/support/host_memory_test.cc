#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "weft/support/host_memory.h"

namespace weft {
namespace {

// The VmFlags line of the /proc/self/smaps mapping that holds "p"; empty where there is none.
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(HostMemory, SmallBlocksStartOnACacheLine) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{1} << 20}) {
    void* p = allocate_host_memory(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 1, bytes);
    free_host_memory(p, bytes);
  }
}

TEST(HostMemory, LargeBlocksStartOnAHugePageAndAskForHugePages) {
  // Their whole huge pages: the last 12345 bytes stay on small pages, where a huge one would
  // hold 2 MiB for them.
  size_t bytes = 3 * kHugePageBytes + 12345;
  auto* p = static_cast<unsigned char*>(allocate_host_memory(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  std::memset(p, 7, bytes);
  EXPECT_EQ(p[bytes - 1], 7);
#if defined(__linux__)
  std::string flags = vm_flags_of(p);
  // "hg": the mapping was advised MADV_HUGEPAGE (proc(5)). No smaps (some sandboxes): skip.
  if (!flags.empty()) {
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
    EXPECT_NE(vm_flags_of(p + 3 * kHugePageBytes - 1).find(" hg"), std::string::npos);
    std::string tail = vm_flags_of(p + 3 * kHugePageBytes);
    EXPECT_EQ(tail.find(" hg"), std::string::npos) << tail;
  }
#endif
  free_host_memory(p, bytes);
}

TEST(HostMemory, FreedLargeBlocksServeTheNextOfTheirSize) {
  size_t bytes = 5 * kHugePageBytes;
  void* a = allocate_host_memory(bytes);
  ASSERT_NE(a, nullptr);
  size_t cached = cached_host_bytes();
  free_host_memory(a, bytes);
  EXPECT_EQ(cached_host_bytes(), cached + bytes);
  void* b = allocate_host_memory(bytes - 100); // rounds to the same 5 pages
  EXPECT_EQ(a, b);
  void* c = allocate_host_memory(bytes); // the cached one is taken
  EXPECT_NE(c, b);
  free_host_memory(b, bytes - 100);
  free_host_memory(c, bytes);
  // More than the cache holds goes back to the system, and the blocks still work.
  size_t huge = kDefaultHostCacheBytes / 2 + kHugePageBytes;
  void* d = allocate_host_memory(huge);
  void* e = allocate_host_memory(huge);
  ASSERT_TRUE(d && e);
  static_cast<char*>(d)[huge - 1] = 1;
  static_cast<char*>(e)[huge - 1] = 1;
  free_host_memory(d, huge);
  free_host_memory(e, huge);
  EXPECT_LE(cached_host_bytes(), kDefaultHostCacheBytes);
}

TEST(HostMemory, ReleaseReturnsEveryKeptBlock) {
  // What a compile freed (an imported graph's constants) is not kept past it.
  size_t bytes = 3 * kHugePageBytes;
  void* a = allocate_host_memory(bytes);
  ASSERT_NE(a, nullptr);
  free_host_memory(a, bytes);
  if (cached_host_bytes() == 0) GTEST_SKIP() << "the cache is off (WEFT_HOST_CACHE_MB=0)";
  release_cached_host_memory();
  EXPECT_EQ(cached_host_bytes(), 0u);
  void* b = allocate_host_memory(bytes); // still works after
  ASSERT_NE(b, nullptr);
  static_cast<char*>(b)[bytes - 1] = 1;
  free_host_memory(b, bytes);
}

TEST(HostMemory, FreedMidSizeBlocksServeTheNextOfTheirRoundedSize) {
  // A KV cache's output grows by a row each decoding step: within 64 KiB it takes the block
  // its last step freed.
  size_t bytes = 200 << 10;
  void* a = allocate_host_memory(bytes);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  size_t cached = cached_host_bytes();
  free_host_memory(a, bytes);
  EXPECT_EQ(cached_host_bytes(), cached + (256 << 10));
  void* b = allocate_host_memory(bytes + 512);
  EXPECT_EQ(a, b);
  std::memset(b, 3, bytes + 512);
  free_host_memory(b, bytes + 512);
  // Below 128 KiB, malloc's own heap serves; nothing is kept.
  cached = cached_host_bytes();
  void* c = allocate_host_memory(100 << 10);
  ASSERT_NE(c, nullptr);
  free_host_memory(c, 100 << 10);
  EXPECT_EQ(cached_host_bytes(), cached);
}

bool env_is(const char* name, std::string_view value) {
  const char* env = std::getenv(name);
  return env && value == env;
}

// Run by ctest with the knob set (tests/CMakeLists.txt); skipped otherwise.
TEST(HostMemoryKnobs, HugePagesOffLeavesLargeBlocksToMalloc) {
  if (!env_is("WEFT_HUGE_PAGES", "0")) GTEST_SKIP() << "needs WEFT_HUGE_PAGES=0";
  size_t bytes = 3 * kHugePageBytes;
  auto* p = static_cast<unsigned char*>(allocate_host_memory(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 7, bytes);
  EXPECT_EQ(vm_flags_of(p).find(" hg"), std::string::npos) << vm_flags_of(p);
  free_host_memory(p, bytes);
  EXPECT_EQ(cached_host_bytes(), 0u);
}

TEST(HostMemoryKnobs, CacheOffKeepsNothing) {
  if (!env_is("WEFT_HOST_CACHE_MB", "0")) GTEST_SKIP() << "needs WEFT_HOST_CACHE_MB=0";
  size_t bytes = 3 * kHugePageBytes;
  void* p = allocate_host_memory(bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  free_host_memory(p, bytes);
  EXPECT_EQ(cached_host_bytes(), 0u);
}

TEST(HostMemory, ImpossibleSizesGiveNull) {
  EXPECT_EQ(allocate_host_memory(SIZE_MAX - 10), nullptr);
}

} // namespace
} // namespace weft
