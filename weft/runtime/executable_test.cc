#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "weft/runtime/executable.h"

namespace weft::runtime {
namespace {

size_t aligned(size_t n) { return (n + 63) / 64 * 64; }

bool live_together(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

// The plan by its definition: largest first (ties in order), each at the lowest 64-byte
// offset clear of every placed buffer that is live with it, comparing every pair.
size_t first_fit(const std::vector<Lifetime>& buffers, std::vector<size_t>* offsets) {
  offsets->assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size()), placed;
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  size_t total = 0;
  for (size_t i : order) {
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      if (live_together(buffers[i], buffers[j]))
        busy.emplace_back((*offsets)[j], (*offsets)[j] + aligned(buffers[j].bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + aligned(buffers[i].bytes) <= begin) break;
      offset = std::max(offset, end);
    }
    (*offsets)[i] = offset;
    total = std::max(total, offset + aligned(buffers[i].bytes));
    placed.push_back(i);
  }
  return total;
}

TEST(PlanArena, IsFirstFitAndKeepsLiveBuffersApart) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    int n = 1 + static_cast<int>(rng() % 400), launches = 1 + static_cast<int>(rng() % 200);
    std::vector<Lifetime> buffers;
    for (int i = 0; i < n; ++i) {
      int first = static_cast<int>(rng() % launches);
      // Mostly short lives, some over much of the run; sizes with many ties.
      int length =
          rng() % 8 == 0 ? static_cast<int>(rng() % launches) : static_cast<int>(rng() % 3);
      buffers.push_back({64 * (rng() % 50) + rng() % 3, first, first + length});
    }
    std::vector<size_t> offsets, expected;
    size_t total = plan_arena(buffers, &offsets);
    EXPECT_EQ(total, first_fit(buffers, &expected));
    EXPECT_EQ(offsets, expected);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(offsets[i] % 64, 0u);
      EXPECT_LE(offsets[i] + buffers[i].bytes, total);
      for (int j = 0; j < i; ++j) {
        if (!live_together(buffers[i], buffers[j]) || !buffers[i].bytes || !buffers[j].bytes)
          continue;
        bool apart = offsets[i] + buffers[i].bytes <= offsets[j] ||
                     offsets[j] + buffers[j].bytes <= offsets[i];
        EXPECT_TRUE(apart) << "buffers " << i << " and " << j;
      }
    }
  }
}

} // namespace
} // namespace weft::runtime
