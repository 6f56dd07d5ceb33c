#include <gtest/gtest.h>

#include "weft/driver/tune.h"

namespace weft {
namespace {

using codegen::CudaOptions;

CudaOptions with(int64_t CudaOptions::*knob, int64_t value) {
  CudaOptions o;
  o.*knob = value;
  return o;
}

// The CUDA grid varies one knob at a time from the defaults, and only those.
TEST(Tune, CudaCandidatesVaryOneKnobAtATime) {
  std::vector<CudaOptions> grid = candidate_cuda_options(CudaOptions());
  ASSERT_GT(grid.size(), 10u);
  EXPECT_EQ(grid[0], CudaOptions());
  for (size_t i = 0; i < grid.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      EXPECT_FALSE(grid[i] == grid[j]) << grid[i].to_string();
  }
  EXPECT_NE(std::find(grid.begin(), grid.end(), with(&CudaOptions::column_vector, 4)), grid.end());
  EXPECT_NE(std::find(grid.begin(), grid.end(), with(&CudaOptions::max_group, 256)), grid.end());
}

// Knobs that won alone by 3% or more are combined, each at its fastest value; one winner, or
// wins under 3%, give nothing to combine.
TEST(Tune, CombinesTheKnobsThatWonAlone) {
  std::vector<CudaOptions> tried = {
      CudaOptions(), with(&CudaOptions::max_group, 256), with(&CudaOptions::max_group, 512),
      with(&CudaOptions::held_elements, 8), with(&CudaOptions::unroll, 8)};
  std::optional<CudaOptions> mixed = combine_winners(tried, {1.0, 0.90, 0.85, 0.95, 0.99});
  ASSERT_TRUE(mixed.has_value());
  CudaOptions want;
  want.max_group = 512;
  want.held_elements = 8;
  EXPECT_EQ(*mixed, want);
  EXPECT_FALSE(combine_winners(tried, {1.0, 0.90, 0.85, 0.98, 0.99}).has_value()); // one knob
  EXPECT_FALSE(combine_winners(tried, {1.0, 0.90, 0.85, -1, 0.99}).has_value());   // dropped
  // A candidate that changed two knobs counts for neither.
  CudaOptions two = with(&CudaOptions::max_group, 256);
  two.unroll = 8;
  EXPECT_FALSE(combine_winners({CudaOptions(), two, with(&CudaOptions::vector, 1)}, {1, 0.5, 0.5})
                   .has_value());
  // The base's determinism carries over.
  tried[0].deterministic = true;
  mixed = combine_winners(tried, {1.0, 0.90, 0.85, 0.95, 0.99});
  ASSERT_TRUE(mixed.has_value());
  EXPECT_TRUE(mixed->deterministic);
}

} // namespace
} // namespace weft
