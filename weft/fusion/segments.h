// The exact part of fusion planning: the best split of a run of kernels into contiguous
// groups, as a set-partitioning integer program solved by GLPK.
//
// Every allowed segment [a, b) is a 0/1 column with its cost; each item is covered by
// exactly one chosen segment. FusionStitching and Apollo pose their plans the same way
// (enumerated patterns, one ILP); here the patterns are the contiguous segments of a run,
// which stitching in launch order can build.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "weft/support/status.h"

namespace weft::fusion {

// The cost of segment [a, b), or none when it is not allowed. Single items must be allowed.
using SegmentCost = std::function<std::optional<double>(size_t a, size_t b)>;

// Splits items 0..n-1 into contiguous segments of at most "max_length" items, minimizing
// the summed cost; returns the first item of each segment, in order.
Result<std::vector<size_t>> best_segments(size_t n, size_t max_length, const SegmentCost& cost);

} // namespace weft::fusion
