// Host memory for tensors and kernels' working memory.
//
// Every block starts on a cache line. Blocks of at least kHugePageBytes start on a 2 MiB
// boundary and are marked for transparent huge pages (madvise(MADV_HUGEPAGE) on Linux, whose
// default THP mode "madvise" backs only marked memory with them): a kernel that streams 64 MB
// then crosses 32 pages instead of 16384, and its hardware prefetchers are not restarted at
// every 4 KiB boundary (ROW, COLUMN, ALL and MIDDLE sums at 64 MB ran 25-40% faster, measured).
//
// Freed large blocks are kept, up to kMaxCachedHostBytes in all, for the next allocation of
// the same size: a run allocates its outputs anew each time, and a block fresh from the
// kernel costs a page fault and the zeroing of each page on first touch (softmax's 16 MB
// output took 0.9 of its 1.8 ms that way).
#pragma once

#include <cstddef>

namespace weft {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kMaxCachedHostBytes = size_t{512} << 20;

// Uninitialized; nullptr when the memory is not there. Thread-safe.
void* allocate_host_memory(size_t bytes);
// "bytes" is the size it was allocated with. Thread-safe.
void free_host_memory(void* p, size_t bytes);

} // namespace weft
