#include "weft/support/host_memory.h"

#include <cstdlib>
#include <mutex>
#include <string_view>
#include <unordered_map>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace weft {

namespace {

constexpr size_t kCacheLine = 64;

// The knobs are read once: a block's alignment at free must be the one it was allocated with.
bool huge_pages_on() {
  static const bool on = [] {
    const char* env = std::getenv("WEFT_HUGE_PAGES");
    return !(env && std::string_view(env) == "0");
  }();
  return on;
}

size_t cache_limit() {
  static const size_t limit = [] {
    const char* env = std::getenv("WEFT_HOST_CACHE_MB");
    if (!env || !*env) return kDefaultHostCacheBytes;
    char* end = nullptr;
    unsigned long long mb = std::strtoull(env, &end, 10);
    return *end == '\0' ? static_cast<size_t>(mb) << 20 : kDefaultHostCacheBytes;
  }();
  return limit;
}

// 0 when it overflows.
size_t round_up(size_t bytes, size_t align) {
  size_t rounded = (bytes + align - 1) / align * align;
  return rounded < bytes ? 0 : rounded;
}

size_t alignment_for(size_t bytes) {
  return bytes >= kHugePageBytes && huge_pages_on() ? kHugePageBytes : kCacheLine;
}

// Freed blocks of this size and more are kept for reuse.
bool kept(size_t bytes) { return bytes >= kKeptBlockBytes && huge_pages_on(); }

// The size a block of "bytes" is allocated and kept at: a whole number of 64 KiB (a tensor
// that grows by a little each run, a KV cache's, then takes the same block again for a while);
// 0 on overflow. Not of huge pages: a block's last one, faulted in whole, would hold up to 2
// MiB that nothing uses (a language model's 2.75 MiB weights took 4 MiB each).
size_t block_size(size_t bytes) {
  return round_up(bytes, kept(bytes) ? size_t{64} << 10 : kCacheLine);
}

// Freed large blocks by rounded size.
struct BlockCache {
  std::mutex mutex;
  std::unordered_multimap<size_t, void*> blocks;
  size_t bytes = 0;
};

BlockCache& block_cache() {
  static auto* cache = new BlockCache; // never destroyed: tensors may be freed after exit starts
  return *cache;
}

} // namespace

void* allocate_host_memory(size_t bytes) {
  size_t align = alignment_for(bytes);
  size_t rounded = block_size(bytes);
  if (rounded == 0 && bytes != 0) return nullptr; // overflow
  if (kept(bytes)) {
    BlockCache& cache = block_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.blocks.find(rounded);
    if (it != cache.blocks.end()) {
      void* p = it->second;
      cache.blocks.erase(it);
      cache.bytes -= rounded;
      return p;
    }
  }
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where the kernel has no THP, the pages stay small. The whole huge pages
  // only; the rest of the block, under 2 MiB, stays on small ones.
  if (p && align == kHugePageBytes)
    madvise(p, rounded / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return p;
}

void free_host_memory(void* p, size_t bytes) {
  if (!p) return;
  if (kept(bytes)) {
    size_t rounded = block_size(bytes);
    BlockCache& cache = block_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.bytes + rounded <= cache_limit()) {
      cache.blocks.emplace(rounded, p);
      cache.bytes += rounded;
      return;
    }
  }
  std::free(p);
}

void release_cached_host_memory() {
  BlockCache& cache = block_cache();
  std::unordered_multimap<size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    blocks.swap(cache.blocks);
    cache.bytes = 0;
  }
  for (const auto& [size, p] : blocks)
    std::free(p);
#if defined(__GLIBC__)
  // Blocks under glibc's mmap threshold (up to 32 MiB once it has risen) went back to its
  // heap, which keeps them from the system until trimmed: 160 MB of a language model's.
  malloc_trim(0);
#endif
}

size_t cached_host_bytes() {
  BlockCache& cache = block_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.bytes;
}

} // namespace weft
