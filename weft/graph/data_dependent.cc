#include "weft/graph/data_dependent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/control_flow.h"
#include "weft/graph/evaluate.h"
#include "weft/graph/op_table.h"
#include "weft/graph/shape_function_helpers.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

using Outputs = Result<std::vector<Tensor>>;

const Tensor& arg(const Node& node, size_t i) { return *node.inputs[i]->constant; }

Tensor vector_of(DType dtype, const std::vector<int64_t>& v) {
  Tensor t(dtype, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.set_int64(static_cast<int64_t>(i), v[i]);
  return t;
}

// The flat indices of the non-zero elements of "x": a typed scan for the common types (a
// detector's scores above a threshold of 0 are millions of elements), get_double otherwise.
std::vector<int64_t> non_zero_indices(const Tensor& x) {
  std::vector<int64_t> hits;
  int64_t n = x.num_elements();
  auto scan = [&]<typename T>(const T* p) {
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] != T(0)) hits.push_back(i);
    }
  };
  const std::byte* data = x.data();
  switch (x.dtype()) {
    case DType::kF32: scan(reinterpret_cast<const float*>(data)); break;
    case DType::kF64: scan(reinterpret_cast<const double*>(data)); break;
    case DType::kI32: scan(reinterpret_cast<const int32_t*>(data)); break;
    case DType::kI64: scan(reinterpret_cast<const int64_t*>(data)); break;
    case DType::kBool:
    case DType::kU8:
    case DType::kI8: scan(reinterpret_cast<const uint8_t*>(data)); break;
    default:
      for (int64_t i = 0; i < n; ++i) {
        if (x.get_double(i) != 0) hits.push_back(i);
      }
  }
  return hits;
}

// Row-major coordinates of every non-zero element: [rank, count] (a scalar counts as rank 1).
Outputs eval_non_zero(const Node& node) {
  const Tensor& x = arg(node, 0);
  std::vector<int64_t> dims = x.rank() == 0 ? std::vector<int64_t>{1} : x.dims();
  std::vector<int64_t> hits = non_zero_indices(x);
  int64_t rank = static_cast<int64_t>(dims.size()), count = static_cast<int64_t>(hits.size());
  Tensor out = Tensor::uninitialized(DType::kI64, {rank, count});
  auto* coords = reinterpret_cast<int64_t*>(out.data());
  for (int64_t h = 0; h < count; ++h) {
    int64_t rest = hits[static_cast<size_t>(h)];
    for (int64_t d = rank; d-- > 0;) {
      coords[d * count + h] = rest % dims[static_cast<size_t>(d)];
      rest /= dims[static_cast<size_t>(d)];
    }
  }
  std::vector<Tensor> result;
  result.push_back(std::move(out));
  return result;
}

// The input as [outer, axis, inner]; a slice is one index along the axis (the whole input
// flattened, one element per slice, without an axis).
struct Slices {
  int64_t axis = -1; // normalized; -1 without an axis
  int64_t outer = 1, count = 1, inner = 1;
  int64_t elements_per_slice() const { return outer * inner; }
};

Result<Slices> slices_of(const Tensor& x, std::optional<int64_t> axis) {
  Slices s;
  if (!axis) {
    s.count = x.num_elements();
    return s;
  }
  WEFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(*axis, x.rank()));
  s.axis = a;
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t e = x.dims()[static_cast<size_t>(d)];
    (d < a ? s.outer : d == a ? s.count : s.inner) *= e;
  }
  return s;
}

// Unique slices, sorted (lexicographically, as numpy.unique) or in order of first occurrence;
// with the index of each one's first occurrence, each slice's unique index, and counts.
Outputs eval_unique(const Node& node) {
  const Tensor& x = arg(node, 0);
  const auto& a = node.attrs_as<UniqueAttrs>();
  WEFT_ASSIGN_OR_RETURN(Slices s, slices_of(x, a.axis));
  bool is_float = dtype_is_float(x.dtype());
  auto element = [&](int64_t slice, int64_t k) {
    return (k / s.inner) * s.count * s.inner + slice * s.inner + k % s.inner;
  };
  // -1, 0, 1 as slice "p" orders before, with, after slice "q".
  auto compare = [&](int64_t p, int64_t q) {
    for (int64_t k = 0; k < s.elements_per_slice(); ++k) {
      int64_t i = element(p, k), j = element(q, k);
      if (is_float) {
        double u = x.get_double(i), v = x.get_double(j);
        if (u != v) return u < v ? -1 : 1;
      } else {
        int64_t u = x.get_int64(i), v = x.get_int64(j);
        if (u != v) return u < v ? -1 : 1;
      }
    }
    return 0;
  };
  // Slices in sorted order (stable, so equal slices keep their order), then runs of equals.
  std::vector<int64_t> order(static_cast<size_t>(s.count));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return compare(p, q) < 0; });
  std::vector<int64_t> first, counts, inverse(static_cast<size_t>(s.count));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || compare(order[i - 1], order[i]) != 0) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  if (!a.sorted) {
    // Renumber the unique slices by first occurrence.
    std::vector<size_t> by_first(first.size());
    std::iota(by_first.begin(), by_first.end(), size_t{0});
    std::sort(by_first.begin(), by_first.end(),
              [&](size_t p, size_t q) { return first[p] < first[q]; });
    std::vector<int64_t> rank(first.size()), new_first, new_counts;
    for (size_t r = 0; r < by_first.size(); ++r) {
      rank[by_first[r]] = static_cast<int64_t>(r);
      new_first.push_back(first[by_first[r]]);
      new_counts.push_back(counts[by_first[r]]);
    }
    for (int64_t& u : inverse)
      u = rank[static_cast<size_t>(u)];
    first = std::move(new_first);
    counts = std::move(new_counts);
  }
  int64_t unique = static_cast<int64_t>(first.size());
  std::vector<int64_t> y_dims = {unique};
  if (a.axis) {
    y_dims = x.dims();
    y_dims[static_cast<size_t>(s.axis)] = unique;
  }
  Tensor y(x.dtype(), y_dims);
  size_t bytes = static_cast<size_t>(dtype_size(x.dtype()));
  for (int64_t u = 0; u < unique; ++u) {
    for (int64_t k = 0; k < s.elements_per_slice(); ++k) {
      int64_t to = (k / s.inner) * unique * s.inner + u * s.inner + k % s.inner;
      std::memcpy(y.data() + static_cast<size_t>(to) * bytes,
                  x.data() + static_cast<size_t>(element(first[static_cast<size_t>(u)], k)) * bytes,
                  bytes);
    }
  }
  std::vector<Tensor> out;
  out.push_back(std::move(y));
  out.push_back(vector_of(DType::kI64, first));
  out.push_back(vector_of(DType::kI64, inverse));
  out.push_back(vector_of(DType::kI64, counts));
  return out;
}

// Box "i" of batch "b" as (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2.
struct Box {
  double y1, x1, y2, x2;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

Box box_at(const Tensor& boxes, int64_t index, bool center_point) {
  double c[4];
  for (int64_t k = 0; k < 4; ++k)
    c[k] = boxes.get_double(index * 4 + k);
  if (center_point) { // [x_center, y_center, width, height]
    return {c[1] - c[3] / 2, c[0] - c[2] / 2, c[1] + c[3] / 2, c[0] + c[2] / 2};
  }
  return {std::min(c[0], c[2]), std::min(c[1], c[3]), std::max(c[0], c[2]), std::max(c[1], c[3])};
}

// The boxes kept so far that can suppress others (those of positive area), by their left
// edge: a new box meets only those whose left edge lies within the widest kept box's width
// to its left, and left of its right edge. A batched NMS (torchvision's) offsets each class's
// boxes apart, and SSDLite's tests up to 27,000 candidates against the thousands kept before
// them: testing each against every kept box took ~40 ms of a 110 ms run.
class KeptBoxes {
public:
  size_t size() const { return count_; }
  void add(const Box& b) {
    ++count_;
    double area = b.area();
    if (!(area > 0)) return; // overlaps nothing (NaN coordinates included)
    by_left_.emplace(b.x1, std::make_pair(b, area));
    widest_ = std::max(widest_, b.x2 - b.x1);
  }
  // Does a kept box overlap "b" by more than "threshold" (intersection over union)?
  bool suppress(const Box& b, double threshold) const {
    double b_area = b.area();
    if (!(b_area > 0)) return false;
    // A box meets b only if its right edge is right of b's left edge; its left edge is then
    // within its width of that (with a margin for the rounding of the widths).
    double from = b.x1 - widest_ - (std::abs(b.x1) + widest_) * 1e-9;
    if (std::isnan(from)) from = -std::numeric_limits<double>::infinity(); // infinite edges
    for (auto it = by_left_.lower_bound(from); it != by_left_.end() && it->first < b.x2; ++it) {
      const auto& [k, k_area] = it->second;
      double h = std::min(k.y2, b.y2) - std::max(k.y1, b.y1);
      double w = std::min(k.x2, b.x2) - std::max(k.x1, b.x1);
      if (h <= 0 || w <= 0) continue;
      double overlap = h * w;
      if (overlap / (k_area + b_area - overlap) > threshold) return true;
    }
    return false;
  }

private:
  std::multimap<double, std::pair<Box, double>> by_left_; // left edge -> (box, area)
  double widest_ = 0;
  size_t count_ = 0;
};

// Per batch and class: boxes by descending score (lower index first on ties), each kept
// unless a kept box overlaps it too much, up to max_output_boxes_per_class. Rows of
// [batch, class, box] in that order.
Outputs eval_non_max_suppression(const Node& node) {
  const Tensor& boxes = arg(node, 0);
  const Tensor& scores = arg(node, 1);
  if (boxes.rank() != 3 || boxes.dims()[2] != 4 || scores.rank() != 3 ||
      scores.dims()[0] != boxes.dims()[0] || scores.dims()[2] != boxes.dims()[1]) {
    return Status::error(fmt::format("boxes {} and scores {} do not have the shapes "
                                     "[batch, boxes, 4] and [batch, classes, boxes]",
                                     boxes.type().to_string(), scores.type().to_string()));
  }
  // max_output_boxes_per_class, iou_threshold and score_threshold hold one value each; an
  // empty one is absent, as ONNX Runtime reads it.
  auto given = [&](int i) { return node.input(i) && arg(node, i).num_elements() > 0; };
  for (int i = 2; i <= 4; ++i) {
    if (given(i) && arg(node, i).num_elements() != 1) {
      static constexpr const char* kNames[] = {"max_output_boxes_per_class", "iou_threshold",
                                               "score_threshold"};
      return Status::error(fmt::format("{} must hold one value, got {}", kNames[i - 2],
                                       arg(node, i).type().to_string()));
    }
  }
  int64_t max_out = given(2) ? arg(node, 2).get_int64(0) : 0;
  double iou = given(3) ? arg(node, 3).get_double(0) : 0;
  std::optional<double> min_score;
  if (given(4)) min_score = arg(node, 4).get_double(0);
  bool center = node.attrs_as<NonMaxSuppressionAttrs>().center_point_box;
  int64_t batches = boxes.dims()[0], n = boxes.dims()[1], classes = scores.dims()[1];
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      std::vector<double> score(static_cast<size_t>(n));
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < n; ++i) {
        score[static_cast<size_t>(i)] = scores.get_double((b * classes + c) * n + i);
        if (!min_score || score[static_cast<size_t>(i)] > *min_score) candidates.push_back(i);
      }
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t p, int64_t q) {
        return score[static_cast<size_t>(p)] > score[static_cast<size_t>(q)];
      });
      KeptBoxes kept;
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        Box box = box_at(boxes, b * n + i, center);
        if (kept.suppress(box, iou)) continue;
        kept.add(box);
        rows.insert(rows.end(), {b, c, i});
      }
    }
  }
  Tensor out(DType::kI64, {static_cast<int64_t>(rows.size() / 3), 3});
  for (size_t i = 0; i < rows.size(); ++i)
    out.set_int64(static_cast<int64_t>(i), rows[i]);
  std::vector<Tensor> result;
  result.push_back(std::move(out));
  return result;
}

// The slices of the input (flattened without an axis) whose condition is true; the
// condition may be shorter than the axis.
Outputs eval_compress(const Node& node) {
  const Tensor& x = arg(node, 0);
  const Tensor& cond = arg(node, 1);
  std::optional<int64_t> axis = node.attrs_as<CompressAttrs>().axis;
  WEFT_ASSIGN_OR_RETURN(Slices s, slices_of(x, axis));
  if (cond.num_elements() > s.count) {
    return Status::error(fmt::format("the condition has {} elements, more than the {} along "
                                     "the axis",
                                     cond.num_elements(), s.count));
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < cond.num_elements(); ++i) {
    if (cond.get_int64(i) != 0) kept.push_back(i);
  }
  int64_t n = static_cast<int64_t>(kept.size());
  std::vector<int64_t> dims = {n};
  if (axis) {
    dims = x.dims();
    dims[static_cast<size_t>(s.axis)] = n;
  }
  Tensor y(x.dtype(), dims);
  size_t slice_bytes = static_cast<size_t>(dtype_size(x.dtype()) * s.inner);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t k = 0; k < n; ++k) {
      size_t to = static_cast<size_t>(o * n + k),
             from = static_cast<size_t>(o * s.count + kept[static_cast<size_t>(k)]);
      std::memcpy(y.data() + to * slice_bytes, x.data() + from * slice_bytes, slice_bytes);
    }
  }
  std::vector<Tensor> out;
  out.push_back(std::move(y));
  return out;
}

} // namespace

bool is_data_dependent(const Node& node) {
  Op op = node.op_type.id();
  if (op == Op::kCompress) return node.input(1) && !node.input(1)->is_constant();
  if (op == Op::kIf || op == Op::kLoop || op == Op::kScan) return true;
  return op == Op::kNonZero || op == Op::kUnique || op == Op::kNonMaxSuppression;
}

bool needs_value(const Node& node, size_t i) {
  if (node.op_type == Op::kIf) return i == 0;
  if (node.op_type == Op::kLoop) return i < 2 || loop_runs_on_host(node);
  return node.op_type != Op::kScan; // Scan needs static shapes only
}

Result<std::vector<Tensor>> evaluate_on_host(const Node& node) {
  Op op = node.op_type.id();
  if (op == Op::kNonZero) return eval_non_zero(node);
  if (op == Op::kUnique) return eval_unique(node);
  if (op == Op::kNonMaxSuppression) return eval_non_max_suppression(node);
  if (op == Op::kCompress) return eval_compress(node);
  if (op == Op::kLoop) return run_loop_on_host(node); // one that loop_runs_on_host chose
  return Status::error(fmt::format("{} does not run on the host", op));
}

Result<std::vector<Tensor>> evaluate_with_values(const Node& node,
                                                 const std::vector<TensorRef>& values) {
  Node copy = node;
  std::vector<Value> ins(node.inputs.size()), outs(node.outputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) continue;
    ins[i].constant = values[i];
    ins[i].type = values[i]->type();
    copy.inputs[i] = &ins[i];
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o]) copy.outputs[o] = &outs[o];
  }
  if (!node.def->infer) return Status::error("no shape function");
  WEFT_ASSIGN_OR_RETURN(std::vector<TensorType> types, node.def->infer(copy));
  for (size_t o = 0; o < outs.size() && o < types.size(); ++o) {
    outs[o].type = types[o];
    int64_t count = 0;
    if (types[o].has_static_shape() &&
        !dims_are_allocatable(types[o].dtype, shape_static_dims(*types[o].shape), &count))
      return Status::error(
          fmt::format("output {} would be {}: too large to hold", o, types[o].to_string()));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> results,
                        can_evaluate(copy) ? evaluate_node(copy) : evaluate_on_host(copy));
  if (std::any_of(node.outputs.begin() +
                      static_cast<std::ptrdiff_t>(std::min(results.size(), node.outputs.size())),
                  node.outputs.end(), [](const Value* v) { return v != nullptr; }))
    return Status::error("not evaluated on the host for these inputs");
  return results;
}

Result<std::vector<TensorType>> infer_non_zero(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  Dim rank =
      x.shape ? Dim(std::max<int64_t>(1, static_cast<int64_t>(x.shape->size()))) : Dim::unknown();
  return std::vector<TensorType>{{DType::kI64, Shape{rank, Dim::unknown()}}};
}

Result<std::vector<TensorType>> infer_unique(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  std::optional<int64_t> axis = node.attrs_as<UniqueAttrs>().axis;
  TensorType y{x.dtype, Shape{Dim::unknown()}};
  // (Symbolic where x's dims are: the later stage of a dynamic compile keeps it.)
  Dim slices = x.shape ? dims_product(*x.shape) : Dim::unknown();
  if (axis) {
    y.shape = std::nullopt;
    slices = Dim::unknown();
    if (x.shape) {
      WEFT_ASSIGN_OR_RETURN(int64_t a,
                            normalize_axis(*axis, static_cast<int64_t>(x.shape->size())));
      y.shape = x.shape;
      slices = (*y.shape)[static_cast<size_t>(a)];
      (*y.shape)[static_cast<size_t>(a)] = Dim::unknown();
    }
  }
  TensorType per_unique{DType::kI64, Shape{Dim::unknown()}};
  return std::vector<TensorType>{y, per_unique, {DType::kI64, Shape{slices}}, per_unique};
}

Result<std::vector<TensorType>> infer_non_max_suppression(const Node&) {
  return std::vector<TensorType>{{DType::kI64, Shape{Dim::unknown(), 3}}};
}

} // namespace weft
