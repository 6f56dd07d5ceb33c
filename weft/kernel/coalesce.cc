#include "weft/kernel/coalesce.h"

#include <algorithm>

#include <fmt/format.h>

namespace weft::kernel {

namespace {

struct Group {
  bool reduced;
  FoldedAxis axis;
};

// Alternating groups of the non-unit axes.
std::vector<Group> fold(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<Group> groups;
  for (size_t i = 0; i < shape.size(); ++i) {
    const Dim& d = shape[i];
    if (d.is_static() && d.value() == 1) continue;
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i));
    if (groups.empty() || groups.back().reduced != reduced) {
      groups.push_back({reduced, {{}, 1}});
    }
    FoldedAxis& f = groups.back().axis;
    f.axes.push_back(static_cast<int>(i));
    f.extent = dim_mul(f.extent, d);
  }
  return groups;
}

FoldedAxis merge(const FoldedAxis& a, const FoldedAxis& b) {
  FoldedAxis out = a;
  out.axes.insert(out.axes.end(), b.axes.begin(), b.axes.end());
  std::sort(out.axes.begin(), out.axes.end());
  out.extent = dim_mul(a.extent, b.extent);
  return out;
}

} // namespace

Result<std::vector<CanonicalReduction>> coalesce_reduction(const Shape& shape,
                                                           const std::vector<int64_t>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(shape.size()) ||
        (i > 0 && axes[i] <= axes[i - 1])) {
      return Status::error("reduction axes must be sorted, unique and within the rank");
    }
  }
  std::vector<Group> groups = fold(shape, axes);
  std::vector<CanonicalReduction> steps;
  // Reduce the innermost reduced group until none is left; merging kept neighbours each time.
  while (true) {
    auto last_reduced =
        std::find_if(groups.rbegin(), groups.rend(), [](const Group& g) { return g.reduced; });
    if (last_reduced == groups.rend()) break;
    size_t r = static_cast<size_t>(groups.rend() - last_reduced) - 1;
    bool has_inner = r + 1 < groups.size();
    bool has_outer = r > 0;
    CanonicalReduction step;
    if (!has_outer && !has_inner) {
      step.form = ReductionForm::kAll;
      step.axes = {groups[r].axis};
    } else if (!has_inner) {
      // [..., K, R]: everything outside folds into K once R is the innermost group.
      FoldedAxis k = groups[0].axis;
      for (size_t i = 1; i < r; ++i)
        k = merge(k, groups[i].axis);
      step.form = ReductionForm::kRow;
      step.axes = {k, groups[r].axis};
    } else if (!has_outer || (r == 1 && !groups[0].reduced)) {
      step.form = has_outer ? ReductionForm::kMiddle : ReductionForm::kColumn;
      step.axes = has_outer
                      ? std::vector<FoldedAxis>{groups[0].axis, groups[r].axis, groups[r + 1].axis}
                      : std::vector<FoldedAxis>{groups[r].axis, groups[r + 1].axis};
    } else {
      // Outer groups hold another reduced group: treat them as one kept axis for this step.
      FoldedAxis k1 = groups[0].axis;
      for (size_t i = 1; i < r; ++i)
        k1 = merge(k1, groups[i].axis);
      step.form = ReductionForm::kMiddle;
      step.axes = {k1, groups[r].axis, groups[r + 1].axis};
    }
    steps.push_back(step);
    // Drop the reduced group; its kept neighbours become adjacent and fold together.
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(r));
    if (r > 0 && r < groups.size() && !groups[r - 1].reduced && !groups[r].reduced) {
      groups[r - 1].axis = merge(groups[r - 1].axis, groups[r].axis);
      groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(r));
    }
  }
  return steps;
}

std::string_view form_name(ReductionForm form) {
  switch (form) {
    case ReductionForm::kAll: return "ALL";
    case ReductionForm::kRow: return "ROW";
    case ReductionForm::kColumn: return "COLUMN";
    case ReductionForm::kMiddle: return "MIDDLE";
  }
  return "?";
}

std::string print_canonical(const CanonicalReduction& r) {
  static const char* kRoles[4][3] = {
      {"R", "", ""}, {"K", "R", ""}, {"R", "K", ""}, {"K1", "R", "K2"}};
  std::vector<std::string> parts;
  for (size_t i = 0; i < r.axes.size(); ++i) {
    parts.push_back(fmt::format("{}={} ({})", kRoles[static_cast<int>(r.form)][i],
                                r.axes[i].extent.to_string(), fmt::join(r.axes[i].axes, ",")));
  }
  return fmt::format("{}[{}]", form_name(r.form), fmt::join(parts, ", "));
}

} // namespace weft::kernel
