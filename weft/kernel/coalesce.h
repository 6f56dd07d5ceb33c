// Loop coalescing (Panamera): every reduction becomes a sequence of canonical forms.
//
// Adjacent axes that play the same role (reduced or kept) are folded into one, after
// static extent-1 axes are dropped (they can play either role). What remains is an
// alternating pattern of kept (K) and reduced (R) groups; the four canonical forms are
//   ALL [R]        ROW [K, R]        COLUMN [R, K]        MIDDLE [K1, R, K2].
// A longer pattern (e.g. [R, K, R]) becomes several steps, innermost reduced group first,
// each step one of the forms; this is exact for associative combines (sum, product, max,
// min) up to floating-point reassociation.
#pragma once

#include <string>
#include <vector>

#include "weft/graph/shape.h"
#include "weft/support/status.h"

namespace weft::kernel {

enum class ReductionForm { kAll, kRow, kColumn, kMiddle };

// One folded axis: the original axes it covers, and its extent as their product.
struct FoldedAxis {
  std::vector<int> axes; // original axis numbers, ascending
  Dim extent = 1;        // symbolic when a factor is
};

struct CanonicalReduction {
  ReductionForm form = ReductionForm::kAll;
  // Folded axes in order: [R], [K, R], [R, K] or [K1, R, K2].
  std::vector<FoldedAxis> axes;
};

// The canonical steps of reducing "shape" over "axes" (non-negative, sorted, unique).
// The steps apply in order, each to the result of the one before (whose shape drops the
// step's reduced axes). Reducing nothing yields no steps.
Result<std::vector<CanonicalReduction>> coalesce_reduction(const Shape& shape,
                                                           const std::vector<int64_t>& axes);

std::string_view form_name(ReductionForm form);
// "ROW[K=8 (0,1), R=64 (2)]".
std::string print_canonical(const CanonicalReduction& r);

} // namespace weft::kernel
