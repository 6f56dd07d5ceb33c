#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "weft/library/permute_copy.h"

namespace weft::library {
namespace {

using Dims = std::vector<int64_t>;

// Row-major strides of "dims" laid out in "order" (outermost axis first).
Dims strides_in(const Dims& dims, const std::vector<int>& order) {
  Dims s(dims.size());
  int64_t step = 1;
  for (size_t k = order.size(); k-- > 0;) {
    s[order[k]] = step;
    step *= dims[order[k]];
  }
  return s;
}

// Copies with every tile width and compares with an element-by-element reading of the layouts.
void expect_copies(const Dims& dims, const std::vector<int>& from_order,
                   const std::vector<int>& to_order) {
  Dims from = strides_in(dims, from_order), to = strides_in(dims, to_order);
  std::optional<PermuteCopy> copy = PermuteCopy::between(dims, from, to);
  ASSERT_TRUE(copy.has_value());
  int64_t n = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
  std::vector<float> src(n), want(n, -1.0f);
  std::iota(src.begin(), src.end(), 0.0f);
  for (int64_t e = 0; e < n; ++e) { // e: the element's row-major index over dims
    int64_t f = 0, t = 0, rest = e;
    for (size_t k = dims.size(); k-- > 0;) {
      f += rest % dims[k] * from[k];
      t += rest % dims[k] * to[k];
      rest /= dims[k];
    }
    want[t] = src[f];
  }
  for (PermuteCopy::Tiles tiles :
       {PermuteCopy::Tiles::kScalar, PermuteCopy::Tiles::kAvx2, PermuteCopy::Tiles::kAvx512}) {
    if (tiles == PermuteCopy::Tiles::kAvx2 && !__builtin_cpu_supports("avx2")) continue;
    if (tiles == PermuteCopy::Tiles::kAvx512 && !__builtin_cpu_supports("avx512f")) continue;
    std::vector<float> got(n, -1.0f);
    copy->run(src.data(), got.data(), tiles);
    EXPECT_EQ(got, want) << "tiles " << static_cast<int>(tiles);
  }
}

TEST(PermuteCopy, ChannelsLastToPlainAndBack) {
  for (const Dims& dims :
       {Dims{1, 1024, 14, 14}, Dims{1, 64, 16, 16}, Dims{2, 37, 5, 7}, Dims{3, 17, 1, 33}}) {
    expect_copies(dims, {0, 2, 3, 1}, {0, 1, 2, 3});
    expect_copies(dims, {0, 1, 2, 3}, {0, 2, 3, 1});
  }
}

TEST(PermuteCopy, OtherPermutations) {
  expect_copies({3, 4, 5, 6, 7}, {0, 2, 3, 4, 1}, {0, 1, 2, 3, 4});
  expect_copies({3, 4, 5, 6, 7}, {4, 3, 2, 1, 0}, {0, 1, 2, 3, 4});
  expect_copies({40, 3, 50}, {2, 0, 1}, {1, 2, 0});
  expect_copies({5, 6}, {0, 1}, {0, 1}); // the same layout: runs
  expect_copies({1, 1, 1}, {0, 1, 2}, {2, 1, 0});
}

TEST(PermuteCopy, EmptyCopiesNothing) {
  std::optional<PermuteCopy> copy = PermuteCopy::between({0, 3}, {3, 1}, {1, 0});
  ASSERT_TRUE(copy.has_value());
  float x = 1.0f, y = 2.0f;
  copy->run(&x, &y);
  EXPECT_EQ(y, 2.0f);
}

TEST(PermuteCopy, RefusesLayoutsThatAreNotDense) {
  EXPECT_FALSE(PermuteCopy::between({4, 4}, {8, 1}, {4, 1}).has_value()); // padded rows
  EXPECT_FALSE(PermuteCopy::between({4, 4}, {1, 1}, {4, 1}).has_value()); // overlapping
  EXPECT_FALSE(PermuteCopy::between({4, 4}, {4, 1}, {4}).has_value());    // rank mismatch
}

} // namespace
} // namespace weft::library
