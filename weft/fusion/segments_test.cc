#include <gtest/gtest.h>

#include "weft/fusion/segments.h"

namespace weft::fusion {
namespace {

// Greedy filling would take [0, 3) (the budget) and cut between 2 and 3, where a large
// value crosses; the exact split cuts where only a small one does.
TEST(BestSegments, CutsWhereLeastCrosses) {
  std::vector<double> crossing = {1, 1, 100, 1, 1}; // bytes crossing a cut after item i
  SegmentCost cost = [&](size_t a, size_t b) -> std::optional<double> {
    if (b - a > 3) return std::nullopt; // the budget
    return 10.0 + crossing[b - 1];
  };
  Result<std::vector<size_t>> starts = best_segments(5, 3, cost);
  ASSERT_TRUE(starts.ok()) << starts.status().message();
  EXPECT_EQ(*starts, (std::vector<size_t>{0, 2})); // [0, 2) and [2, 5)
}

TEST(BestSegments, FewerLaunchesWhenAllowed) {
  SegmentCost cost = [](size_t, size_t) -> std::optional<double> { return 1.0; };
  Result<std::vector<size_t>> starts = best_segments(6, 6, cost);
  ASSERT_TRUE(starts.ok());
  EXPECT_EQ(*starts, (std::vector<size_t>{0}));
}

TEST(BestSegments, RespectsForbiddenSegments) {
  // Item 2 cannot join item 1's group: every split cuts before 2.
  SegmentCost cost = [](size_t a, size_t b) -> std::optional<double> {
    if (a <= 1 && b >= 3) return std::nullopt;
    return 1.0;
  };
  Result<std::vector<size_t>> starts = best_segments(4, 4, cost);
  ASSERT_TRUE(starts.ok());
  EXPECT_EQ(*starts, (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(best_segments(0, 4, cost)->empty());
}

TEST(BestSegments, AnItemAloneMustBeAllowed) {
  SegmentCost cost = [](size_t a, size_t b) -> std::optional<double> {
    if (a == 1 && b == 2) return std::nullopt;
    return 1.0;
  };
  EXPECT_FALSE(best_segments(3, 3, cost).ok());
}

} // namespace
} // namespace weft::fusion
