#include "weft/graph/control_flow.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "weft/graph/data_dependent.h"
#include "weft/graph/evaluate.h"
#include "weft/graph/node_builder.h"
#include "weft/graph/passes/specialize_shapes.h"

namespace weft {

namespace {

constexpr int64_t kMaxLoopIterations = 1024;

// The body's nodes, copied into "graph" before "loop" with "map" binding the body's inputs;
// returns the values of the body's outputs.
std::vector<Value*> inline_body(Graph& graph, const Node& loop, const Graph& body,
                                std::unordered_map<const Value*, Value*>& map, int64_t iteration) {
  std::string prefix = fmt::format("{}/{}/", loop.name, iteration);
  auto value = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    // A constant of the body (its outputs are mapped as their nodes are copied).
    Value* c = graph.add_constant(graph.unique_name(prefix + v->name), *v->constant);
    map[v] = c;
    return c;
  };
  for (const auto& n : body.nodes()) {
    Node copy = *n;
    copy.name = graph.unique_node_name(prefix + n->name);
    for (Value*& in : copy.inputs)
      in = value(in);
    for (Value*& out : copy.outputs) {
      if (!out) continue;
      Value* fresh = graph.add_value(graph.unique_name(prefix + out->name), out->type);
      map[out] = fresh;
      out = fresh;
    }
    graph.insert_node_before(&loop, std::move(copy));
  }
  std::vector<Value*> outs;
  for (const Value* v : body.outputs)
    outs.push_back(value(v));
  return outs;
}

// "out" replaced by "parts" stacked along a new axis "axis", computed before "user".
Status stack_into(Graph& graph, const Node& user, const std::vector<Value*>& parts, int64_t axis,
                  Value* out) {
  if (!out) return Status();
  NodeBuilder b(graph, user);
  graph.replace_all_uses(out, b.stack(parts, axis));
  return b.status();
}

} // namespace

Result<std::vector<Value*>> chosen_branch(const Node& node) {
  const Tensor& cond = *node.inputs[0]->constant;
  if (cond.num_elements() != 1)
    return Status::error(
        fmt::format("the condition has {} elements, not one", cond.num_elements()));
  size_t n = node.outputs.size();
  size_t first = cond.get_int64(0) != 0 ? 1 : 1 + n;
  return std::vector<Value*>(node.inputs.begin() + static_cast<std::ptrdiff_t>(first),
                             node.inputs.begin() + static_cast<std::ptrdiff_t>(first + n));
}

void mark_taken(const std::vector<Value*>& outputs) {
  std::vector<Node*> work;
  for (Value* v : outputs) {
    if (v && v->producer) work.push_back(v->producer);
  }
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (!n->conditional) continue;
    n->conditional = false;
    size_t inputs = n->op_type == Op::kIf ? 1 : n->inputs.size();
    for (size_t i = 0; i < inputs; ++i) {
      if (Value* in = n->inputs[i]; in && in->producer) work.push_back(in->producer);
    }
  }
}

namespace {

constexpr int64_t kMaxHostIterations = int64_t{1} << 20;

bool is_control_flow(const Node& n) {
  return n.op_type == Op::kIf || n.op_type == Op::kLoop || n.op_type == Op::kScan;
}

// A carried value that the body only appends to: the next is Concat(this one, pieces...)
// along axis 0, this one read by nothing else and the next by nothing but the next iteration.
// torchvision's pasting loops grow their results so; a copy of the whole per iteration would
// be quadratic (2 GB a run for Mask R-CNN's 100 masks of 320 x 320), appending is not.
struct Appended {
  const Node* concat = nullptr; // null: not appended to
  DType dtype = DType::kF32;
  std::vector<int64_t> dims;
  std::vector<std::byte> bytes;

  Status append(const Tensor& piece) {
    if (piece.dtype() != dtype || piece.rank() != static_cast<int64_t>(dims.size()) ||
        !std::equal(dims.begin() + 1, dims.end(), piece.dims().begin() + 1))
      return Status::error(fmt::format("Concat of {} to {}", piece.type().to_string(),
                                       TensorType{dtype, shape_from_dims(dims)}.to_string()));
    bytes.insert(bytes.end(), piece.data(), piece.data() + piece.num_bytes());
    dims[0] += piece.dims()[0];
    return Status();
  }
  Tensor tensor() const {
    Tensor t = Tensor::uninitialized(dtype, dims);
    std::memcpy(t.data(), bytes.data(), bytes.size());
    return t;
  }
};

std::vector<Appended> appended_values(const Node& loop) {
  const Graph& body = *loop.attrs_as<LoopAttrs>().body;
  auto n = static_cast<size_t>(loop.attrs_as<LoopAttrs>().carried);
  std::unordered_map<const Value*, int> uses = body.use_counts();
  std::vector<Appended> appended(n);
  for (size_t i = 0; i < n; ++i) {
    const Value *in = body.inputs[2 + i], *out = body.outputs[1 + i];
    const Value* initial = loop.input(2 + i);
    const Node* concat = out->producer;
    if (!initial || initial->constant->rank() == 0 || !concat || concat->op_type != Op::kConcat ||
        concat->attrs_as<AxisAttrs>().axis != 0 || concat->inputs[0] != in || uses[in] != 1 ||
        uses[out] != 1)
      continue;
    const Tensor& t = *initial->constant;
    appended[i] = {concat, t.dtype(), t.dims(),
                   std::vector<std::byte>(t.data(), t.data() + t.num_bytes())};
  }
  return appended;
}

} // namespace

bool loop_runs_on_host(const Node& loop) {
  const auto& a = loop.attrs_as<LoopAttrs>();
  if (!a.body || a.iteration != 0) return false;
  const Graph& body = *a.body;
  auto n = static_cast<size_t>(a.carried);
  if (body.inputs.size() < 2 + n || body.outputs.size() < 1 + n) return false;
  for (const auto& node : body.nodes()) {
    if (is_control_flow(*node) || (!can_evaluate(*node) && !is_data_dependent(*node))) return false;
  }
  // The body's values computed from data: from the carried and outer values that are not
  // constant, or carried values the body computes from data (until that settles).
  std::set<const Value*> data;
  for (size_t i = 2; i < body.inputs.size(); ++i) {
    const Value* outer = loop.input(i);
    if (outer && !outer->is_constant()) data.insert(body.inputs[i]);
  }
  for (size_t before = SIZE_MAX; before != data.size();) {
    before = data.size();
    bool from_data = false;
    for (const auto& node : body.nodes()) {
      bool reads = false;
      for (size_t k = 0; k < node->inputs.size(); ++k) {
        if (!data.contains(node->inputs[k])) continue;
        from_data |= is_shape_operand(*node, k);
        reads = true;
      }
      // Shape and Size read only the type: a shape that data decides shows where it is decided
      if (reads && node->op_type != Op::kShape && node->op_type != Op::kSize)
        data.insert(node->outputs.begin(), node->outputs.end());
    }
    if (from_data) return true;
    for (size_t i = 0; i < n; ++i) {
      if (data.contains(body.outputs[1 + i])) data.insert(body.inputs[2 + i]);
    }
  }
  return false;
}

Result<std::vector<Tensor>> run_loop_on_host(const Node& loop) {
  const auto& a = loop.attrs_as<LoopAttrs>();
  const Graph& body = *a.body;
  auto n = static_cast<size_t>(a.carried);
  size_t scans = body.outputs.size() - 1 - n;
  for (const Value* v : {loop.input(0), loop.input(1)}) {
    if (v && v->constant->num_elements() != 1)
      return Status::error(
          fmt::format("'{}' has {} elements, not one", v->name, v->constant->num_elements()));
  }
  if (!loop.input(0) && !loop.input(1))
    return Status::error("a Loop without a trip count or a condition");
  int64_t trips =
      loop.input(0) ? loop.input(0)->constant->get_int64(0) : std::numeric_limits<int64_t>::max();
  TensorRef cond = loop.input(1) ? loop.input(1)->constant : nullptr;
  if (!cond) {
    Tensor t(DType::kBool, {});
    t.set_int64(0, 1);
    cond = std::make_shared<const Tensor>(std::move(t));
  }
  std::unordered_map<const Value*, TensorRef> values; // of the body's inputs and nodes
  for (size_t i = 2; i < body.inputs.size(); ++i) {
    if (const Value* outer = loop.input(i)) values[body.inputs[i]] = outer->constant;
  }
  auto value = [&](const Value* v) -> Result<TensorRef> {
    if (v->is_constant()) return v->constant;
    auto it = values.find(v);
    if (it == values.end()) return Status::error(fmt::format("'{}' has no value", v->name));
    return it->second;
  };
  std::vector<Appended> appended = appended_values(loop);
  std::vector<std::vector<TensorRef>> scanned(scans);
  int64_t iteration = 0;
  for (; iteration < trips && cond->get_int64(0) != 0; ++iteration) {
    if (iteration == kMaxHostIterations)
      return Status::error(
          fmt::format("the loop runs more than {} iterations", kMaxHostIterations));
    values[body.inputs[0]] = std::make_shared<const Tensor>(Tensor::scalar_i64(iteration));
    values[body.inputs[1]] = cond;
    for (const auto& node : body.nodes()) {
      auto error = [&](const Status& s) {
        return Status::error(fmt::format("iteration {}: {} '{}' of the body: {}", iteration,
                                         node->op_type, node->name, s.message()));
      };
      auto grown = std::find_if(appended.begin(), appended.end(),
                                [&](const Appended& x) { return x.concat == node.get(); });
      if (grown != appended.end()) {
        for (size_t k = 1; k < node->inputs.size(); ++k) {
          WEFT_ASSIGN_OR_RETURN(TensorRef piece, value(node->inputs[k]));
          if (Status s = grown->append(*piece); !s.ok()) return error(s);
        }
        continue;
      }
      std::vector<TensorRef> inputs(node->inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (node->inputs[i]) {
          WEFT_ASSIGN_OR_RETURN(inputs[i], value(node->inputs[i]));
        }
      }
      Result<std::vector<Tensor>> outs = evaluate_with_values(*node, inputs);
      if (!outs.ok()) return error(outs.status());
      for (size_t o = 0; o < node->outputs.size(); ++o) {
        if (node->outputs[o])
          values[node->outputs[o]] = std::make_shared<const Tensor>(std::move((*outs)[o]));
      }
    }
    WEFT_ASSIGN_OR_RETURN(cond, value(body.outputs[0]));
    std::vector<TensorRef> carried(n);
    for (size_t i = 0; i < n; ++i) {
      if (!appended[i].concat) {
        WEFT_ASSIGN_OR_RETURN(carried[i], value(body.outputs[1 + i]));
      }
    }
    for (size_t i = 0; i < n; ++i) { // the next iteration reads them
      if (!appended[i].concat) values[body.inputs[2 + i]] = std::move(carried[i]);
    }
    for (size_t k = 0; k < scans; ++k) {
      WEFT_ASSIGN_OR_RETURN(TensorRef t, value(body.outputs[1 + n + k]));
      scanned[k].push_back(std::move(t));
    }
    if (cond->num_elements() != 1)
      return Status::error(
          fmt::format("the body's condition has {} elements, not one", cond->num_elements()));
  }
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < n; ++i) {
    if (appended[i].concat) {
      outputs.push_back(appended[i].tensor());
      continue;
    }
    auto it = values.find(body.inputs[2 + i]);
    if (it == values.end() || !it->second)
      return Status::error(fmt::format("carried value {} has no value", i));
    outputs.push_back(*it->second);
  }
  for (size_t k = 0; k < scans; ++k) { // stacked along a new first axis
    if (scanned[k].empty())
      return Status::error("a Loop with scan outputs that runs no iteration (their shape is "
                           "unknown) is not supported");
    const Tensor& first = *scanned[k][0];
    std::vector<int64_t> dims = first.dims();
    dims.insert(dims.begin(), static_cast<int64_t>(scanned[k].size()));
    Tensor stacked = Tensor::uninitialized(first.dtype(), dims);
    std::byte* to = stacked.data();
    for (const TensorRef& t : scanned[k]) {
      if (t->dims() != first.dims() || t->dtype() != first.dtype())
        return Status::error(fmt::format("scan output {} is {} in one iteration and {} in another",
                                         k, first.type().to_string(), t->type().to_string()));
      std::memcpy(to, t->data(), t->num_bytes());
      to += t->num_bytes();
    }
    outputs.push_back(std::move(stacked));
  }
  return outputs;
}

Status unroll_loop_step(Graph& graph, Node& loop, bool* finished) {
  auto& a = loop.attrs_as<LoopAttrs>();
  const Graph& body = *a.body;
  size_t n = static_cast<size_t>(a.carried);
  size_t captured = body.inputs.size() - 2 - n, scans = body.outputs.size() - 1 - n;
  const Value* trips = loop.input(0);
  const Value* cond = loop.input(1);
  for (const Value* v : {trips, cond}) {
    if (v && v->constant->num_elements() != 1)
      return Status::error(
          fmt::format("'{}' has {} elements, not one", v->name, v->constant->num_elements()));
  }
  bool more = (!trips || a.iteration < trips->constant->get_int64(0)) &&
              (!cond || cond->constant->get_int64(0) != 0);
  if (!trips && !cond) return Status::error("a Loop without a trip count or a condition");
  *finished = !more;
  if (more) {
    if (a.iteration >= kMaxLoopIterations)
      return Status::error(fmt::format(
          "the loop runs more than {} iterations, which Weft unrolls at most", kMaxLoopIterations));
    std::unordered_map<const Value*, Value*> map;
    map[body.inputs[0]] = graph.add_constant(graph.unique_name(loop.name + "/iteration"),
                                             Tensor::scalar_i64(a.iteration));
    Value* always = nullptr;
    if (!cond) {
      Tensor t(DType::kBool, {});
      t.set_int64(0, 1);
      always = graph.add_constant(graph.unique_name(loop.name + "/cond"), std::move(t));
    }
    map[body.inputs[1]] = cond ? loop.inputs[1] : always;
    for (size_t i = 0; i < n + captured; ++i)
      map[body.inputs[2 + i]] = loop.inputs[2 + i];
    std::vector<Value*> outs = inline_body(graph, loop, body, map, a.iteration);
    // The next step reads this iteration's condition and carried values; scan values pile up.
    loop.inputs[1] = outs[0];
    for (size_t i = 0; i < n; ++i)
      loop.inputs[2 + i] = outs[1 + i];
    for (size_t k = 0; k < scans; ++k)
      loop.inputs.push_back(outs[1 + n + k]);
    ++a.iteration;
    return Status();
  }
  for (size_t i = 0; i < n; ++i) {
    if (loop.outputs[i]) graph.replace_all_uses(loop.outputs[i], loop.inputs[2 + i]);
  }
  if (scans > 0 && a.iteration == 0) {
    return Status::error("a Loop with scan outputs that runs no iteration (their shape is "
                         "unknown) is not supported");
  }
  for (size_t k = 0; k < scans; ++k) {
    std::vector<Value*> parts;
    for (int64_t it = 0; it < a.iteration; ++it)
      parts.push_back(loop.inputs[2 + n + captured + static_cast<size_t>(it) * scans + k]);
    WEFT_RETURN_IF_ERROR(stack_into(graph, loop, parts, 0, loop.outputs[n + k]));
  }
  return Status();
}

Status unroll_scan(Graph& graph, Node& scan) {
  const auto& a = scan.attrs_as<ScanAttrs>();
  const Graph& body = *a.body;
  size_t m = static_cast<size_t>(a.scan_inputs);
  size_t n = static_cast<size_t>(a.states);
  size_t captured = body.inputs.size() - n - m, scans = body.outputs.size() - n;
  auto at = [](const Ints& v, size_t i) { return i < v.size() ? v[i] : 0; };
  int64_t steps = -1;
  for (size_t j = 0; j < m; ++j) {
    const TensorType& t = scan.inputs[n + j]->type;
    int64_t axis = at(a.input_axes, j);
    int64_t rank = t.shape ? static_cast<int64_t>(t.shape->size()) : 0;
    if (axis < 0) axis += rank;
    if (!t.shape || axis < 0 || axis >= rank || !(*t.shape)[static_cast<size_t>(axis)].is_static())
      return Status::error("Scan needs the extent of each scan axis");
    int64_t extent = (*t.shape)[static_cast<size_t>(axis)].value();
    if (steps >= 0 && extent != steps)
      return Status::error(fmt::format("scan inputs of {} and {} steps", steps, extent));
    steps = extent;
  }
  if (steps > kMaxLoopIterations)
    return Status::error(fmt::format("the scan runs {} iterations, more than the {} Weft unrolls",
                                     steps, kMaxLoopIterations));
  if (steps <= 0 && scans > 0)
    return Status::error("a Scan with no iteration and scan outputs is not supported");
  std::vector<Value*> state(scan.inputs.begin(), scan.inputs.begin() + static_cast<ptrdiff_t>(n));
  std::vector<std::vector<Value*>> slices(scans);
  NodeBuilder slicer(graph, scan);
  for (int64_t t = 0; t < steps; ++t) {
    std::unordered_map<const Value*, Value*> map;
    for (size_t i = 0; i < n; ++i)
      map[body.inputs[i]] = state[i];
    for (size_t j = 0; j < m; ++j) {
      Value* in = scan.inputs[n + j];
      int64_t axis = at(a.input_axes, j);
      if (axis < 0) axis += static_cast<int64_t>(in->type.shape->size());
      int64_t index = at(a.input_directions, j) ? steps - 1 - t : t;
      Value* slice = slicer.take(in, index, axis);
      map[body.inputs[n + j]] = slice;
    }
    for (size_t c = 0; c < captured; ++c)
      map[body.inputs[n + m + c]] = scan.inputs[n + m + c];
    std::vector<Value*> outs = inline_body(graph, scan, body, map, t);
    for (size_t i = 0; i < n; ++i)
      state[i] = outs[i];
    for (size_t k = 0; k < scans; ++k)
      slices[k].push_back(outs[n + k]);
  }
  WEFT_RETURN_IF_ERROR(slicer.status());
  for (size_t i = 0; i < n; ++i) {
    if (scan.outputs[i]) graph.replace_all_uses(scan.outputs[i], state[i]);
  }
  for (size_t k = 0; k < scans; ++k) {
    if (at(a.output_directions, k)) std::reverse(slices[k].begin(), slices[k].end());
    int64_t axis = at(a.output_axes, k);
    if (axis < 0 && slices[k][0]->type.shape)
      axis += static_cast<int64_t>(slices[k][0]->type.shape->size()) + 1;
    WEFT_RETURN_IF_ERROR(stack_into(graph, scan, slices[k], axis, scan.outputs[n + k]));
  }
  return Status();
}

// Carried outputs: the operand's type, with the dims the body changes unknown; scan outputs:
// the body's, after a leading dim of unknown extent.
Result<std::vector<TensorType>> infer_loop(const Node& node) {
  const auto& a = node.attrs_as<LoopAttrs>();
  if (!a.body) return Status::error("Loop has no body");
  const Graph& body = *a.body;
  size_t n = static_cast<size_t>(a.carried);
  if (body.inputs.size() < 2 + n || body.outputs.size() < 1 + n || node.inputs.size() < 2 + n)
    return Status::error("the Loop's body does not match its carried values");
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i) {
    TensorType t = node.inputs[2 + i]->type;
    const TensorType& b = body.outputs[1 + i]->type;
    if (t.dtype != b.dtype) {
      return Status::error(fmt::format("carried value {} is {} and the body makes it {}", i,
                                       t.to_string(), b.to_string()));
    }
    if (t.shape && b.shape && t.shape->size() == b.shape->size()) {
      for (size_t d = 0; d < t.shape->size(); ++d) {
        if (!((*t.shape)[d] == (*b.shape)[d])) (*t.shape)[d] = Dim::unknown();
      }
    } else {
      t.shape = std::nullopt;
    }
    out.push_back(std::move(t));
  }
  for (size_t k = 1 + n; k < body.outputs.size(); ++k) {
    TensorType t = body.outputs[k]->type;
    if (t.shape) t.shape->insert(t.shape->begin(), Dim::unknown());
    out.push_back(std::move(t));
  }
  return out;
}

// Final states: the operands' types; scan outputs: the body's, with the scan extent (when
// known) inserted at the output axis.
Result<std::vector<TensorType>> infer_scan(const Node& node) {
  const auto& a = node.attrs_as<ScanAttrs>();
  if (!a.body) return Status::error("Scan has no body");
  size_t n = static_cast<size_t>(a.states), m = static_cast<size_t>(a.scan_inputs);
  if (node.inputs.size() < n + m || a.body->outputs.size() < n)
    return Status::error("the Scan's body does not match its inputs");
  Dim steps = Dim::unknown();
  const TensorType& first = node.inputs[n]->type;
  int64_t in_axis = a.input_axes.empty() ? 0 : a.input_axes[0];
  if (first.shape && !first.shape->empty()) {
    int64_t rank = static_cast<int64_t>(first.shape->size());
    if (in_axis < 0) in_axis += rank;
    if (in_axis >= 0 && in_axis < rank) steps = (*first.shape)[static_cast<size_t>(in_axis)];
  }
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(node.inputs[i]->type);
  for (size_t k = 0; k + n < a.body->outputs.size(); ++k) {
    TensorType t = a.body->outputs[n + k]->type;
    if (t.shape) {
      int64_t rank = static_cast<int64_t>(t.shape->size()) + 1;
      int64_t axis = k < a.output_axes.size() ? a.output_axes[k] : 0;
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return Status::error(fmt::format("scan output axis {}", axis));
      t.shape->insert(t.shape->begin() + axis, steps);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Each output: the branches' common type; dims where they differ are unknown.
Result<std::vector<TensorType>> infer_if(const Node& node) {
  size_t n = node.outputs.size();
  if (node.inputs.size() != 1 + 2 * n || !node.inputs[0])
    return Status::error("If takes a condition and two branches with one output per output");
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i) {
    const TensorType& a = node.inputs[1 + i]->type;
    const TensorType& b = node.inputs[1 + n + i]->type;
    if (a.dtype != b.dtype) {
      return Status::error(fmt::format("output {} is {} in one branch and {} in the other", i,
                                       a.to_string(), b.to_string()));
    }
    TensorType t{a.dtype, std::nullopt};
    if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
      t.shape = a.shape;
      for (size_t d = 0; d < a.shape->size(); ++d) {
        if (!((*a.shape)[d] == (*b.shape)[d])) (*t.shape)[d] = Dim::unknown();
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace weft
