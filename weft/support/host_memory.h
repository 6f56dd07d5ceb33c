// Host memory for tensors and kernels' working memory.
//
// Every block starts on a cache line. Blocks of at least kHugePageBytes start on a 2 MiB
// boundary and their whole 2 MiB pages are marked for transparent huge pages
// (madvise(MADV_HUGEPAGE) on Linux; in the common THP mode "madvise" only marked memory gets
// them): a kernel that streams 64 MB then crosses 32 pages instead of 16384, with fewer TLB
// misses and fewer page boundaries, where hardware prefetchers stop (ROW, COLUMN, ALL and
// MIDDLE sums at 64 MB ran 25-40% faster). The rest of a block, under 2 MiB, is on small pages.
//
// Freed blocks of 128 KiB and more are kept, up to 512 MiB in all by default, for the next
// allocation of the same rounded size (a whole number of 64 KiB): a run
// allocates its outputs anew each time, and a block fresh from the kernel costs a page fault
// and the zeroing of each page on first touch (softmax's 16 MB output took 0.9 of its 1.8 ms
// that way; malloc maps blocks of 128 KiB and more afresh once their size grows, as a KV
// cache's outputs do at every decoding step: a small Llama's step 2.9 -> 1.9 ms).
#pragma once

#include <cstddef>

namespace weft {

// Knobs (docs/knobs.md), read once: WEFT_HUGE_PAGES=0 makes every block plain malloc memory
// on a cache line, never kept; WEFT_HOST_CACHE_MB is how much freed memory is kept (0: none).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kKeptBlockBytes = size_t{128} << 10;
inline constexpr size_t kDefaultHostCacheBytes = size_t{512} << 20;

// Uninitialized; nullptr when the memory is not there. Thread-safe.
void* allocate_host_memory(size_t bytes);
// "bytes" is the size it was allocated with. Thread-safe.
void free_host_memory(void* p, size_t bytes);
// Bytes of freed blocks kept for reuse now.
size_t cached_host_bytes();
// Returns the kept blocks, and the C library's free memory, to the system. A compile calls it
// when done: the blocks it freed
// (an imported graph's constants, folded ones) are not what runs reuse, and a language
// model's came to the whole cache, 512 MiB kept besides its weights.
void release_cached_host_memory();

} // namespace weft
