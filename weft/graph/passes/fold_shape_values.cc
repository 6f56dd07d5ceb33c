#include "weft/graph/passes/fold_shape_values.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

// An integer tensor of rank 0 or 1 whose elements are known as dims.
struct ShapeValue {
  bool scalar = false;
  std::vector<Dim> dims;
};

using Known = std::unordered_map<const Value*, ShapeValue>;

const ShapeValue* known_of(const Known& known, const Value* v) {
  auto it = v ? known.find(v) : known.end();
  return it == known.end() ? nullptr : &it->second;
}

std::optional<ShapeValue> constant_value(const Value* v) {
  if (!v->is_constant() || (v->type.dtype != DType::kI64 && v->type.dtype != DType::kI32) ||
      !v->type.shape || v->type.shape->size() > 1)
    return std::nullopt;
  std::optional<Ints> ints = constant_ints(v);
  if (!ints) return std::nullopt;
  return ShapeValue{v->type.shape->empty(), {ints->begin(), ints->end()}};
}

// Python's slice of "n" elements: the indices taken, or nullopt for a step of 0.
std::optional<std::vector<int64_t>> slice_indices(int64_t n, int64_t start, int64_t end,
                                                  int64_t step) {
  if (step == 0) return std::nullopt;
  auto clamp = [&](int64_t i, int64_t lo, int64_t hi) {
    if (i < 0) i += n;
    return std::max(lo, std::min(i, hi));
  };
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = clamp(start, 0, n); i < clamp(end, 0, n); i += step)
      out.push_back(i);
  } else {
    for (int64_t i = clamp(start, -1, n - 1); i > clamp(end, -1, n - 1); i += step)
      out.push_back(i);
  }
  return out;
}

// The n elements of "a" and "b", a one-element side broadcast; nullopt when they do not match.
std::optional<size_t> broadcast_size(const ShapeValue& a, const ShapeValue& b) {
  size_t n = std::max(a.dims.size(), b.dims.size());
  if ((a.dims.size() != n && a.dims.size() != 1) || (b.dims.size() != n && b.dims.size() != 1))
    return std::nullopt;
  return n;
}
const Dim& element(const ShapeValue& v, size_t i) { return v.dims[v.dims.size() == 1 ? 0 : i]; }

// "a op b", element by element with a one-element side broadcast; nullopt where a result is
// not a product of symbols (a sum with a symbol, an inexact quotient).
std::optional<ShapeValue> arithmetic(Op op, const ShapeValue& a, const ShapeValue& b) {
  std::optional<size_t> n = broadcast_size(a, b);
  if (!n) return std::nullopt;
  ShapeValue out{a.scalar && b.scalar, {}};
  for (size_t i = 0; i < *n; ++i) {
    const Dim &x = element(a, i), &y = element(b, i);
    std::optional<Dim> r;
    if (op == Op::kMin) {
      r = dim_min(x, y);
    } else if (op == Op::kMax && x.is_static() && y.is_static()) {
      r = std::max(x.value(), y.value());
    } else if (op == Op::kMul) {
      r = dim_mul(x, y);
    } else if (op == Op::kDiv) {
      r = dim_div(x, y);
    } else if (x.is_static() && y.is_static()) {
      r = op == Op::kAdd ? x.value() + y.value() : x.value() - y.value();
    } else if (y.is_static() && op == Op::kSub) { // X - c, spelled (X-c)/1
      r = dim_floor_div(x, -y.value(), 1);
    } else if (op == Op::kAdd) { // X + c or P + T (dim_add)
      r = dim_add(x, y);
    }
    // (A product of symbols with a negative factor is no extent: a -1 times a dim, say.)
    if (!r || (!r->is_static() && r->symbol_name().starts_with("-"))) return std::nullopt;
    out.dims.push_back(*r);
  }
  return out;
}

// a == b element by element (1 or 0), where the dims tell: static ones, a dim and itself, and
// an extent (>= 0) against a negative constant.
std::optional<ShapeValue> compare_equal(const ShapeValue& a, const ShapeValue& b) {
  std::optional<size_t> n = broadcast_size(a, b);
  if (!n) return std::nullopt;
  ShapeValue out{a.scalar && b.scalar, {}};
  for (size_t i = 0; i < *n; ++i) {
    const Dim &x = element(a, i), &y = element(b, i);
    bool negative = (x.is_static() && x.value() < 0) || (y.is_static() && y.value() < 0);
    if (x == y) {
      out.dims.push_back(1);
    } else if ((x.is_static() && y.is_static()) || negative) {
      out.dims.push_back(0);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// Where(condition, a, b) element by element, for a known condition.
std::optional<ShapeValue> select(const ShapeValue& condition, const ShapeValue& a,
                                 const ShapeValue& b) {
  std::optional<size_t> ab = broadcast_size(a, b);
  if (!ab) return std::nullopt;
  ShapeValue both{a.scalar && b.scalar, std::vector<Dim>(*ab, 0)};
  std::optional<size_t> n = broadcast_size(condition, both);
  if (!n) return std::nullopt;
  ShapeValue out{both.scalar && condition.scalar, {}};
  for (size_t i = 0; i < *n; ++i) {
    const Dim& c = element(condition, i);
    if (!c.is_static()) return std::nullopt;
    out.dims.push_back(c.value() != 0 ? element(a, i) : element(b, i));
  }
  return out;
}

// The dims that stand for extents a run knows: static ones, and dims over the inputs'
// symbols ("symbols"); not the fresh symbols of a shape inference that could not
// tell, nor any dim of a value whose type is stale.
struct Facts {
  std::set<std::string> symbols;
  std::set<const Value*> stale; // downstream of a Reshape resolved in this sweep

  // Is "d" over the inputs' symbols only? (Not whether it evaluates with each symbol 1:
  // (X-2)/1 is negative there.)
  bool known(const Dim& d) const { return dim_over(d, symbols); }
  bool fresh(const Value* x) const {
    if (!x->type.shape || stale.contains(x)) return false;
    return std::all_of(x->type.shape->begin(), x->type.shape->end(),
                       [&](const Dim& d) { return known(d); });
  }
};

// The value of "n"'s output, if its inputs' values and the op determine it.
std::optional<ShapeValue> evaluate(const Node& n, const Known& known, const Facts& facts) {
  Op op = n.op_type.id();
  const Value* y = n.outputs[0];
  std::optional<size_t> out_rank;
  if (y && y->type.shape) out_rank = y->type.shape->size();
  if (op == Op::kShape) {
    const Value* x = n.inputs[0];
    if (!facts.fresh(x)) return std::nullopt;
    const auto& a = n.attrs_as<ShapeAttrs>();
    auto rank = static_cast<int64_t>(x->type.shape->size());
    std::vector<int64_t> taken = *slice_indices(rank, a.start, a.end.value_or(rank), 1);
    ShapeValue out;
    for (int64_t i : taken)
      out.dims.push_back((*x->type.shape)[static_cast<size_t>(i)]);
    return out;
  }
  const ShapeValue* in = known_of(known, n.input(0));
  if (!in || !out_rank || *out_rank > 1) return std::nullopt;
  if (op == Op::kIdentity || op == Op::kSqueeze || op == Op::kUnsqueeze || op == Op::kReshape ||
      (op == Op::kCast && (y->type.dtype == DType::kI64 || y->type.dtype == DType::kI32))) {
    if (*out_rank == 0 && in->dims.size() != 1) return std::nullopt;
    return ShapeValue{*out_rank == 0, in->dims};
  }
  if (op == Op::kGather) {
    std::optional<Ints> indices = constant_ints(n.input(1));
    if (in->scalar || n.attrs_as<AxisAttrs>().axis != 0 || !indices) return std::nullopt;
    ShapeValue out{*out_rank == 0, {}};
    auto size = static_cast<int64_t>(in->dims.size());
    for (int64_t i : *indices) {
      if (i < -size || i >= size) return std::nullopt;
      out.dims.push_back(in->dims[static_cast<size_t>(i < 0 ? i + size : i)]);
    }
    return out;
  }
  if (op == Op::kSlice) {
    const auto& a = n.attrs_as<SliceAttrs>();
    if (in->scalar || !a.starts || a.starts->size() != 1 || (a.axes && (*a.axes)[0] != 0))
      return std::nullopt;
    std::optional<std::vector<int64_t>> taken =
        slice_indices(static_cast<int64_t>(in->dims.size()), (*a.starts)[0], (*a.ends)[0],
                      a.steps ? (*a.steps)[0] : 1);
    if (!taken) return std::nullopt;
    ShapeValue out;
    for (int64_t i : *taken)
      out.dims.push_back(in->dims[static_cast<size_t>(i)]);
    return out;
  }
  if (op == Op::kConcat) {
    ShapeValue out;
    for (const Value* v : n.inputs) {
      const ShapeValue* part = known_of(known, v);
      if (!part || part->scalar) return std::nullopt;
      out.dims.insert(out.dims.end(), part->dims.begin(), part->dims.end());
    }
    return out;
  }
  if (op == Op::kMul || op == Op::kDiv || op == Op::kAdd || op == Op::kSub ||
      ((op == Op::kMin || op == Op::kMax) && n.inputs.size() == 2)) {
    const ShapeValue* other = known_of(known, n.input(1));
    if (!other) return std::nullopt;
    return arithmetic(op, *in, *other);
  }
  if (op == Op::kEqual) { // exporters replace a shape's -1s: Where(Equal(s, -1), 1, s)
    const ShapeValue* other = known_of(known, n.input(1));
    if (!other) return std::nullopt;
    return compare_equal(*in, *other);
  }
  if (op == Op::kWhere) {
    const ShapeValue* a = known_of(known, n.input(1));
    const ShapeValue* b = known_of(known, n.input(2));
    if (!a || !b) return std::nullopt;
    return select(*in, *a, *b);
  }
  if (op == Op::kReduceMin && !in->dims.empty()) { // of a 1-D value: torch.min(torch.cat(...))
    const auto& a = n.attrs_as<ReduceAttrs>();
    bool whole = (!a.axes || a.axes->empty() || *a.axes == Ints{0} || *a.axes == Ints{-1}) &&
                 n.inputs.size() == 1;
    if (in->scalar || !whole) return std::nullopt;
    Dim least = in->dims[0];
    for (const Dim& d : in->dims)
      least = dim_min(least, d);
    return ShapeValue{*out_rank == 0, {least}};
  }
  return std::nullopt;
}

// The Reshape target that "target" spells for input "x", with 0 and -1 resolved.
std::optional<Shape> reshape_target(const Shape& x, const ShapeValue& target, bool allowzero) {
  Shape out;
  std::optional<size_t> infer_at;
  for (size_t i = 0; i < target.dims.size(); ++i) {
    const Dim& d = target.dims[i];
    if (d == Dim(-1)) {
      if (infer_at) return std::nullopt;
      infer_at = i;
      out.push_back(1);
    } else if (d == Dim(0) && !allowzero) {
      if (i >= x.size()) return std::nullopt;
      out.push_back(x[i]);
    } else if (d.is_static() && d.value() < 0) {
      return std::nullopt;
    } else {
      out.push_back(d);
    }
  }
  if (infer_at) {
    Dim total = 1, known = 1;
    for (const Dim& d : x)
      total = dim_mul(total, d);
    for (const Dim& d : out)
      known = dim_mul(known, d);
    std::optional<Dim> rest = dim_div(total, known);
    if (!rest) return std::nullopt;
    out[*infer_at] = *rest;
  }
  return out;
}

// The extent of Range(start, limit, delta) with constant start and delta > 0 and a limit
// over symbols: ceil((limit - start) / delta).
std::optional<Dim> range_extent(const Node& n, const Known& known) {
  if (n.inputs.size() != 3) return std::nullopt;
  std::optional<ShapeValue> start = constant_value(n.inputs[0]);
  std::optional<ShapeValue> delta = constant_value(n.inputs[2]);
  const ShapeValue* limit = known_of(known, n.inputs[1]);
  if (!start || !delta || !limit || start->dims.size() != 1 || delta->dims.size() != 1 ||
      limit->dims.size() != 1 || limit->dims[0].is_static())
    return std::nullopt;
  int64_t s = start->dims[0].value(), d = delta->dims[0].value();
  if (d <= 0) return std::nullopt;
  return dim_floor_div(limit->dims[0], d - 1 - s, d);
}

// Gives Slice "n" its bounds as dims (SliceAttrs::symbolic_ends) when an end is a dim over
// symbols (`position_ids[:, :T]`) or an axis is symbolic (`x[:, 0:1]` over T), with starts
// >= 0 and steps of 1. A static end above 1 over a symbolic axis is clamped to it (dim_min).
// Each other end that is not its axis's extent is taken to be within it, a limit each run
// checks (Graph::dim_limits): past it ONNX would clamp the end, and the model would fail
// where the slice meets T-long values. A start may be a dim over symbols too
// (SliceAttrs::symbolic_starts; OPT's `positions[:, P:]`), taken to be within its end.
bool resolve_slice(Graph& graph, Node& n, const Known& known, const Facts& facts) {
  constexpr int64_t kToTheEnd = int64_t{1} << 31; // PyTorch's `x[1:]` ends at INT64_MAX
  auto& a = n.attrs_as<SliceAttrs>();
  if (a.symbolic_ends || !facts.fresh(n.inputs[0])) return false;
  std::optional<Ints> axes = a.axes, steps = a.steps;
  std::vector<Dim> starts, ends;
  if (a.starts) { // constant bounds (canonicalize)
    if (!a.ends || !axes || !steps) return false;
    starts.assign(a.starts->begin(), a.starts->end());
    ends.assign(a.ends->begin(), a.ends->end());
  } else {
    const ShapeValue* given = n.inputs.size() >= 3 ? known_of(known, n.inputs[2]) : nullptr;
    const ShapeValue* from = n.inputs.size() >= 2 ? known_of(known, n.inputs[1]) : nullptr;
    if (!given || given->scalar || !from || from->scalar) return false;
    ends = given->dims;
    starts = from->dims;
    axes = n.input(3) ? constant_ints(n.input(3)) : Ints(ends.size());
    if (!n.input(3) && axes) std::iota(axes->begin(), axes->end(), 0);
    steps = n.input(4) ? constant_ints(n.input(4)) : Ints(ends.size(), 1);
  }
  size_t count = ends.size();
  if (!axes || !steps || starts.size() != count || axes->size() != count || steps->size() != count)
    return false;
  const Shape& x = *n.inputs[0]->type.shape;
  auto rank = static_cast<int64_t>(x.size());
  bool symbolic = false, symbolic_start = false;
  std::vector<DimLimit> limits;
  for (size_t i = 0; i < count; ++i) {
    int64_t& axis = (*axes)[i];
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || (*steps)[i] != 1) return false;
    const Dim& extent = x[static_cast<size_t>(axis)];
    Dim& start = starts[i];
    Dim& end = ends[i];
    if (end.is_static() && end.value() >= kToTheEnd) end = extent;
    // Counted from the end of a symbolic axis (torch.roll's x[-2:] and x[:-2]): X - c, taken
    // to be within the axis (c <= X, a limit each run checks; ONNX would clamp).
    for (Dim* bound : {&start, &end}) {
      if (!bound->is_static() || bound->value() >= 0 || extent.is_static()) continue;
      std::optional<Dim> from_end = dim_sub(extent, -bound->value());
      if (!from_end || !facts.known(extent)) return false;
      limits.push_back({-bound->value(), extent, n.name});
      *bound = *from_end;
    }
    if (start.is_static() && start.value() < 0) return false;
    if (!start.is_static()) {
      if (!facts.known(start)) return false; // not a dim a run knows
      symbolic = symbolic_start = true;
    }
    if (end.is_static() && extent.is_static()) { // Python's clamping
      end = std::clamp(end.value() < 0 ? end.value() + extent.value() : end.value(), int64_t{0},
                       extent.value());
    } else {
      symbolic = true;
      if (end.is_static() && start.is_static() && end.value() < start.value())
        return false; // counts from the end
      if (end.is_static() && end.value() > 1 && !extent.is_static()) {
        // ONNX's clamping: torchvision's RPN takes the first 1000 of each level's anchors,
        // fewer when fewer are left (a data-dependent count). (An end of 1, the first
        // position of a sequence, stays static, within the axis by the limit below.)
        end = dim_min(end, extent);
      } else if (end != extent) {
        limits.push_back({end, extent, n.name});
      }
    }
    if (start.is_static()) {
      if (end.is_static() && end.value() < start.value()) end = start; // empty
    } else {
      if (!dim_sub(end, start)) return false;
      limits.push_back({start, end, n.name});
    }
  }
  if (!symbolic) return false;
  graph.dim_limits.insert(graph.dim_limits.end(), limits.begin(), limits.end());
  a.axes = std::move(axes);
  a.steps = std::move(steps);
  a.ends.reset();
  a.symbolic_ends = std::move(ends);
  if (symbolic_start) {
    a.starts.reset();
    a.symbolic_starts = std::move(starts);
  } else {
    a.starts = Ints();
    for (const Dim& d : starts)
      a.starts->push_back(d.value());
  }
  n.inputs.resize(1);
  return true;
}

} // namespace

Result<bool> fold_shape_values(Graph& graph) {
  Facts facts;
  for (const Value* in : graph.inputs) {
    for (const Dim& d : in->type.shape.value_or(Shape{})) {
      if (std::optional<std::string> symbol = bound_symbol(d))
        facts.symbols.insert(*symbol);
      else if (!d.is_static())
        facts.symbols.insert(d.symbol_name());
    }
  }
  Known known;
  bool resolved = false;
  for (const auto& node : graph.nodes()) {
    for (const Value* v : node->inputs) {
      if (v && !known.contains(v)) {
        if (std::optional<ShapeValue> c = constant_value(v)) known.emplace(v, std::move(*c));
      }
      if (v && facts.stale.contains(v)) {
        for (const Value* out : node->outputs)
          facts.stale.insert(out);
      }
    }
    if (node->outputs.size() == 1 && node->outputs[0]) {
      if (std::optional<ShapeValue> v = evaluate(*node, known, facts)) {
        // Static throughout (a channel count read from the shape of a value with a symbolic
        // batch): a constant, which folding takes further.
        Value* y = node->outputs[0];
        bool integers = y->type.dtype == DType::kI64 || y->type.dtype == DType::kI32;
        if (integers && std::all_of(v->dims.begin(), v->dims.end(),
                                    [](const Dim& d) { return d.is_static(); })) {
          Tensor t(y->type.dtype, v->scalar
                                      ? std::vector<int64_t>{}
                                      : std::vector<int64_t>{static_cast<int64_t>(v->dims.size())});
          for (size_t i = 0; i < v->dims.size(); ++i)
            t.set_int64(static_cast<int64_t>(i), v->dims[i].value());
          graph.replace_all_uses(
              y, graph.add_constant(graph.unique_name(y->name + "_value"), std::move(t)));
          resolved = true;
          continue;
        }
        known.emplace(y, std::move(*v));
      }
    }
    bool sized = false; // a Range or Slice whose output's size is now known over symbols
    if (auto* range = std::get_if<RangeAttrs>(&node->attrs); range && !range->symbolic_shape) {
      if (std::optional<Dim> extent = range_extent(*node, known)) {
        range->symbolic_shape = Shape{*extent};
        sized = true;
      }
    }
    if (node->op_type == Op::kSlice) sized = resolve_slice(graph, *node, known, facts);
    // TopK's K and ConstantOfShape's shape as dims (the input is then gone), where a symbol is
    // among them (all static, they fold).
    auto symbolic = [](const ShapeValue* v) {
      return v && !v->dims.empty() &&
             std::any_of(v->dims.begin(), v->dims.end(),
                         [](const Dim& d) { return !d.is_static(); }) &&
             std::none_of(v->dims.begin(), v->dims.end(),
                          [](const Dim& d) { return d.is_static() && d.value() < 0; });
    };
    if (auto* top = std::get_if<TopKAttrs>(&node->attrs); top && node->inputs.size() == 2) {
      const ShapeValue* k = known_of(known, node->inputs[1]);
      if (symbolic(k) && k->dims.size() == 1 && facts.fresh(node->inputs[0])) {
        top->symbolic_k = k->dims[0];
        node->inputs.resize(1);
        sized = true;
      }
    }
    if (auto* fill = std::get_if<ConstantOfShapeAttrs>(&node->attrs);
        fill && node->inputs.size() == 1) {
      const ShapeValue* shape = known_of(known, node->inputs[0]);
      if (symbolic(shape) && !shape->scalar) {
        fill->symbolic_shape = Shape(shape->dims.begin(), shape->dims.end());
        node->inputs.clear();
        sized = true;
      }
    }
    if (auto* tile = std::get_if<TileAttrs>(&node->attrs); tile && node->inputs.size() == 2) {
      const ShapeValue* repeats = known_of(known, node->inputs[1]);
      if (repeats && !repeats->scalar && !node->inputs[1]->is_constant() &&
          std::all_of(repeats->dims.begin(), repeats->dims.end(),
                      [](const Dim& d) { return !d.is_static() || d.value() >= 0; })) {
        tile->symbolic_repeats = repeats->dims;
        node->inputs.resize(1);
        sized = true;
      }
    }
    // Resize's sizes as dims, where they stretch each axis (`interpolate(x,
    // size=y.shape[-2:])`): its scales are then the output's extents over the input's.
    if (auto* resize = std::get_if<ResizeAttrs>(&node->attrs);
        resize && node->op_type == Op::kResize && node->inputs.size() == 4 &&
        resize->aspect_policy == 0) {
      const ShapeValue* sizes = known_of(known, node->inputs[3]);
      if (symbolic(sizes) && !sizes->scalar && !node->inputs[3]->is_constant()) {
        resize->symbolic_sizes = Shape(sizes->dims.begin(), sizes->dims.end());
        node->inputs.resize(3);
        sized = true;
      }
    }
    if (sized) {
      facts.stale.insert(node->outputs.begin(), node->outputs.end());
      resolved = true;
      continue;
    }
    bool reshape = node->op_type == Op::kReshape;
    if ((!reshape && node->op_type != Op::kExpand) || node->inputs.size() < 2) continue;
    const ShapeValue* target = known_of(known, node->inputs[1]);
    const Value* x = node->inputs[0];
    if (!target || target->scalar || !facts.fresh(x) || node->inputs[1]->is_constant()) continue;
    if (reshape) {
      auto& a = node->attrs_as<ReshapeAttrs>();
      std::optional<Shape> dims = reshape_target(*x->type.shape, *target, a.allowzero);
      if (!dims) continue;
      // A dim of the target that a run makes 0 would copy the input's dim there (ONNX's
      // Reshape without allowzero), unlike the symbol it is taken to be: each run checks
      // that it is not (a run that makes it 0 compiles for its own shapes).
      for (size_t i = 0; !a.allowzero && i < target->dims.size(); ++i) {
        const Dim& d = target->dims[i];
        if (!d.is_static() && (i >= x->type.shape->size() || d != (*x->type.shape)[i])) {
          graph.dim_limits.push_back({Dim(1), d, node->name, DimLimit::Kind::kNotEmpty,
                                      "a Reshape target dim that is not 0, which would copy "
                                      "the input's dim"});
        }
      }
      a.symbolic_shape = std::move(*dims);
    } else if (std::all_of(target->dims.begin(), target->dims.end(),
                           [](const Dim& d) { return !d.is_static() || d.value() >= 0; })) {
      node->attrs = ExpandAttrs{target->dims};
    } else {
      continue;
    }
    node->inputs.resize(1);
    // What reads it has its old type until shapes are inferred again: the next round.
    facts.stale.insert(node->outputs[0]);
    resolved = true;
  }
  return resolved;
}

} // namespace weft
