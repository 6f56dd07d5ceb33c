#include "weft/graph/passes/channels_last.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"

namespace weft {

namespace {

const Ints kToLast = {0, 2, 3, 1};  // [N, C, H, W] -> [N, H, W, C]
const Ints kToFirst = {0, 3, 1, 2}; // and back

// Ops that compute each element from the elements at the same position (numpy broadcasting
// aside), so that they commute with a Transpose of all their operands.
bool is_pointwise(const Node& n) {
  static const std::set<Op> kOps = {
      Op::kRelu,      Op::kClip, Op::kSigmoid, Op::kTanh, Op::kHardSigmoid, Op::kHardSwish,
      Op::kLeakyRelu, Op::kElu,  Op::kSelu,    Op::kGelu, Op::kErf,         Op::kExp,
      Op::kAbs,       Op::kNeg,  Op::kSqrt,    Op::kMish, Op::kSoftplus,    Op::kAdd,
      Op::kSub,       Op::kMul,  Op::kDiv,     Op::kMax,  Op::kMin,         Op::kPRelu,
      Op::kPow,       Op::kSum,  Op::kMean,    Op::kWhere};
  return kOps.contains(n.op_type) && n.outputs.size() == 1 && n.outputs[0];
}

bool has_rank(const Value* v, size_t rank) {
  return v && v->type.shape && v->type.shape->size() == rank;
}

// A Slice of [N, C, H, W] whose parameters canonicalize made attributes (axes normalized).
bool is_slice(const Node& n) {
  return n.op_type == Op::kSlice && n.inputs.size() == 1 && has_rank(n.inputs[0], 4) &&
         n.attrs_as<SliceAttrs>().starts && n.attrs_as<SliceAttrs>().axes;
}

// A reduction over some of [N, C, H, W]'s axes, keeping them: over channels-last's axes
// (kToFirst maps them) it gives the same elements, laid out channels-last.
// Without keepdims, one whose kept axes stay in order channels-last (N and C, say, after a
// spatial mean): its result is the same either way.
bool is_reduction(const Node& n) {
  static const std::set<Op> kOps = {Op::kReduceMean, Op::kReduceSum,       Op::kReduceMax,
                                    Op::kReduceMin,  Op::kReduceProd,      Op::kReduceL1,
                                    Op::kReduceL2,   Op::kReduceSumSquare, Op::kReduceLogSumExp};
  if (!kOps.contains(n.op_type) || n.inputs.size() != 1) return false;
  const auto& at = n.attrs_as<ReduceAttrs>();
  if (!at.axes || at.axes->empty()) return false;
  if (at.keepdims) return true;
  int64_t last = -1; // the kept axes' positions channels-last, in their order
  for (int64_t a = 0; a < 4; ++a) {
    bool reduced = std::find(at.axes->begin(), at.axes->end(), a) != at.axes->end() ||
                   std::find(at.axes->begin(), at.axes->end(), a - 4) != at.axes->end();
    if (reduced) continue;
    if (kToFirst[static_cast<size_t>(a)] < last) return false;
    last = kToFirst[static_cast<size_t>(a)];
  }
  return true;
}

bool is_transpose(const Node* n, const Ints& perm) {
  return n && n->op_type == Op::kTranspose && n->attrs_as<TransposeAttrs>().perm == perm;
}

// Does every dim of "v" have extent 1 (so that a Transpose does not move its elements)?
bool all_ones(const Value* v) {
  if (!v->type.shape) return false;
  for (const Dim& d : *v->type.shape) {
    if (!(d == Dim(1))) return false;
  }
  return true;
}

// Constant "c" (rank at most 4, broadcast against [N, C, H, W]) laid out for [N, H, W, C].
Tensor to_channels_last(const Tensor& c) {
  std::vector<int64_t> dims = c.dims();
  dims.insert(dims.begin(), 4 - dims.size(), 1);
  Tensor out(c.dtype(), {dims[0], dims[2], dims[3], dims[1]});
  for (int64_t n = 0; n < dims[0]; ++n)
    for (int64_t ch = 0; ch < dims[1]; ++ch)
      for (int64_t h = 0; h < dims[2]; ++h)
        for (int64_t w = 0; w < dims[3]; ++w)
          out.set_double(((n * dims[2] + h) * dims[3] + w) * dims[1] + ch,
                         c.get_double(((n * dims[1] + ch) * dims[2] + h) * dims[3] + w));
  return out;
}

// The static dims of "v", if it has them.
std::optional<Ints> static_dims(const Value* v) {
  if (!v || !v->type.shape || !shape_is_static(*v->type.shape)) return std::nullopt;
  return shape_static_dims(*v->type.shape);
}

// A channel shuffle of [N, C, H, W] (ShuffleNet's): a Reshape splitting the channels into
// factors [N, f1, ..., fk, H, W], a Transpose of the factors alone and a Reshape merging them
// back, each the one reader of the one before.
struct ChannelShuffle {
  Node *split, *permute, *merge;
  Ints factors, perm; // perm: of the factors, 0-based
};

std::optional<ChannelShuffle>
channel_shuffle(Node& split, const std::unordered_map<const Value*, std::vector<Node*>>& readers,
                const Graph& graph) {
  auto only_reader = [&](const Node* n, Op op) -> Node* {
    const Value* out = n->outputs[0];
    auto it = readers.find(out);
    if (graph.is_graph_output(out) || it == readers.end() || it->second.size() != 1 ||
        it->second[0]->op_type != op)
      return nullptr;
    return it->second[0];
  };
  if (split.op_type != Op::kReshape) return std::nullopt;
  std::optional<Ints> x = static_dims(split.inputs[0]);
  std::optional<Ints> parts = static_dims(split.outputs[0]);
  if (!x || x->size() != 4 || !parts || parts->size() < 5) return std::nullopt;
  size_t k = parts->size() - 3;
  Ints factors(parts->begin() + 1, parts->end() - 2);
  int64_t channels = 1;
  for (int64_t f : factors)
    channels *= f;
  if ((*parts)[0] != (*x)[0] || parts->end()[-2] != (*x)[2] || parts->end()[-1] != (*x)[3] ||
      channels != (*x)[1])
    return std::nullopt;
  Node* permute = only_reader(&split, Op::kTranspose);
  if (!permute) return std::nullopt;
  const std::optional<Ints>& p = permute->attrs_as<TransposeAttrs>().perm;
  if (!p || p->size() != k + 3 || (*p)[0] != 0 || (*p)[k + 1] != int64_t(k) + 1 ||
      (*p)[k + 2] != int64_t(k) + 2)
    return std::nullopt;
  Ints perm;
  for (size_t i = 1; i <= k; ++i) {
    if ((*p)[i] < 1 || (*p)[i] > int64_t(k)) return std::nullopt;
    perm.push_back((*p)[i] - 1);
  }
  Node* merge = only_reader(permute, Op::kReshape);
  if (!merge || static_dims(merge->outputs[0]) != x) return std::nullopt;
  return ChannelShuffle{&split, permute, merge, factors, perm};
}

// The node after "n" (one that has readers) in the graph's order.
const Node* node_after(const Graph& graph, const Node& n) {
  const auto& nodes = graph.nodes();
  for (size_t k = 0; k + 1 < nodes.size(); ++k) {
    if (nodes[k].get() == &n) return nodes[k + 1].get();
  }
  return nullptr;
}

bool is_pool(const Node* n) {
  return n && (n->op_type == Op::kMaxPool || n->op_type == Op::kAveragePool) &&
         n->outputs.size() == 1 && has_rank(n->outputs[0], 4);
}

class ChannelsLast {
public:
  explicit ChannelsLast(Graph& graph) : graph_(graph) {}

  bool run() {
    bool changed = false;
    std::vector<Node*> convs;
    for (const auto& n : graph_.nodes()) {
      if (convertible(*n)) convs.push_back(n.get());
    }
    for (Node* conv : convs)
      convert(*conv);
    changed = !convs.empty();
    while (changed && step()) {
    }
    return changed;
  }

private:
  // A 2-D convolution oneDNN runs for the CPU: f32 throughout, rank 4.
  static bool convertible(const Node& n) {
    if (n.op_type != Op::kConv || n.conditional || !has_rank(n.inputs[0], 4) ||
        !has_rank(n.outputs[0], 4))
      return false;
    for (const auto* list : {&n.inputs, &n.outputs}) {
      for (const Value* v : *list) {
        if (v && v->type.dtype != DType::kF32) return false;
      }
    }
    return true;
  }

  // x -> Transpose(to last) -> ConvChannelsLast -> Transpose(to first) -> y.
  // One Transpose per input value: convolutions reading the same one share it.
  void convert(Node& conv) {
    NodeBuilder b(graph_, conv);
    std::vector<Value*> inputs = conv.inputs;
    Value*& to_last = to_last_[inputs[0]];
    if (!to_last) to_last = b.op(Op::kTranspose, {inputs[0]}, TransposeAttrs{kToLast});
    inputs[0] = to_last;
    Value* y = b.op(Op::kConvChannelsLast, inputs, conv.attrs);
    Value* out = conv.outputs[0];
    out->producer = nullptr;
    conv.outputs[0] = nullptr;
    b.op(Op::kTranspose, {y}, TransposeAttrs{kToFirst}, out);
    std::string name = conv.name;
    remove(&conv);
    graph_.rename_node(y->producer, name); // profiles name the model's node
  }

  // One rewrite, if any applies: a cancellation, else a sink. Returns whether one did.
  bool step() {
    std::unordered_map<const Value*, std::vector<Node*>> readers;
    for (const auto& n : graph_.nodes()) {
      for (const Value* v : n->inputs)
        readers[v].push_back(n.get());
    }
    for (const auto& owned : graph_.nodes()) {
      Node* t = owned.get();
      if (!is_transpose(t, kToFirst) && !is_transpose(t, kToLast)) continue;
      const Ints& undo = is_transpose(t, kToFirst) ? kToLast : kToFirst;
      Value* v = t->outputs[0];
      const std::vector<Node*>& rs = readers[v];
      for (Node* r : rs) {
        if (is_transpose(r, undo) && !graph_.is_graph_output(r->outputs[0]) &&
            !after_pools_.contains(t)) {
          graph_.replace_all_uses(r->outputs[0], t->inputs[0]);
          remove(r);
          return true;
        }
      }
      // Into its reader; with several, when each could take it (SiLU's Sigmoid and Mul both
      // read x): the Transpose then stays only if one of them cannot.
      bool all_sinkable = std::all_of(rs.begin(), rs.end(), [&](Node* r) {
        return is_pointwise(*r) || is_reduction(*r) || is_slice(*r) || r->op_type == Op::kConcat ||
               is_channel_split(*r) || channel_shuffle(*r, readers, graph_) || is_batch_norm(*r);
      });
      if (!is_transpose(t, kToFirst) || rs.empty() || graph_.is_graph_output(v)) continue;
      if (rs.size() == 1 && is_pool(rs[0]) && rs[0]->inputs[0] == v &&
          !graph_.is_graph_output(rs[0]->outputs[0])) {
        const std::vector<Node*>& after = readers[rs[0]->outputs[0]];
        if (!after.empty() && (after.size() != 1 || !is_transpose(after[0], kToLast)))
          return sink_pool(*rs[0]);
      }
      if (!all_sinkable) continue;
      if (is_batch_norm(*rs[0])) return expand_batch_norm(*rs[0]);
      if (is_channel_split(*rs[0])) return sink_split(*rs[0]);
      if (auto shuffle = channel_shuffle(*rs[0], readers, graph_)) return sink_shuffle(*shuffle);
      if (sink(*rs[0], readers)) return true;
    }
    return false;
  }

  // e(..., Transpose(to first)(a), ...) -> Transpose(to first)(e(..., a, ...)), the other
  // operands taken channels-last; the Transpose's output has "e" as its one reader. False
  // when an operand cannot be taken so.
  bool sink(Node& e, const std::unordered_map<const Value*, std::vector<Node*>>& readers) {
    // A Concat of channels (axis 1) concatenates channels-last along axis 3.
    OpAttrs attrs = e.attrs;
    bool concat = e.op_type == Op::kConcat && has_rank(e.outputs[0], 4) &&
                  (e.attrs_as<AxisAttrs>().axis == 1 || e.attrs_as<AxisAttrs>().axis == -3);
    if (concat) attrs = AxisAttrs{3};
    bool reduction = is_reduction(e);
    if (reduction) { // its axes, over [N, H, W, C]
      ReduceAttrs at = e.attrs_as<ReduceAttrs>();
      for (int64_t& a : *at.axes)
        a = kToFirst[static_cast<size_t>(a < 0 ? a + 4 : a)];
      std::sort(at.axes->begin(), at.axes->end());
      attrs = at;
    }
    bool slice = is_slice(e);
    if (slice) { // its axes, over [N, H, W, C]
      SliceAttrs at = e.attrs_as<SliceAttrs>();
      for (int64_t& a : *at.axes)
        a = kToFirst[static_cast<size_t>(a)];
      attrs = at;
    }
    // (A reduction without keepdims leaves the same elements in the same order.)
    bool same_layout = reduction && !e.attrs_as<ReduceAttrs>().keepdims;
    if ((!is_pointwise(e) && !concat && !reduction && !slice) ||
        (!same_layout && !has_rank(e.outputs[0], 4)))
      return false;
    std::vector<Value*> inputs;
    std::vector<Tensor> transposed; // constants to make, by input position
    std::vector<int> constant_at;
    std::vector<int> reorder_at; // other 4-D operands: a Transpose of their own
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      Value* in = e.inputs[i];
      const Node* p = in ? in->producer : nullptr;
      if (!in || (!concat && all_ones(in))) {
        inputs.push_back(in);
      } else if (is_transpose(p, kToFirst) && readers.at(in).size() == 1 &&
                 !graph_.is_graph_output(in)) {
        inputs.push_back(p->inputs[0]);
      } else if (!concat && in->is_constant() && in->type.dtype == DType::kF32 && in->type.shape &&
                 in->type.shape->size() <= 4) {
        constant_at.push_back(static_cast<int>(i));
        transposed.push_back(to_channels_last(*in->constant));
        inputs.push_back(nullptr);
      } else if (has_rank(in, 4)) { // (a per-channel scale [N, C, 1, 1]: cheap)
        reorder_at.push_back(static_cast<int>(i));
        inputs.push_back(in);
      } else {
        return false;
      }
    }
    NodeBuilder b(graph_, e);
    for (size_t k = 0; k < constant_at.size(); ++k)
      inputs[static_cast<size_t>(constant_at[k])] =
          b.constant("channels_last", std::move(transposed[k]));
    for (int i : reorder_at) {
      Value*& in = inputs[static_cast<size_t>(i)];
      // One Transpose per value: the one a convolution reading it has, if any.
      auto it = readers.find(in);
      const Node* existing = nullptr;
      for (const Node* r : it == readers.end() ? std::vector<Node*>{} : it->second) {
        if (is_transpose(r, kToLast)) existing = r;
      }
      in = existing ? existing->outputs[0] : b.op(Op::kTranspose, {in}, TransposeAttrs{kToLast});
    }
    Value* out = e.outputs[0];
    out->producer = nullptr;
    e.outputs[0] = nullptr;
    Value* y = same_layout ? b.op(e.op_type, inputs, attrs, out) : b.op(e.op_type, inputs, attrs);
    if (!same_layout) b.op(Op::kTranspose, {y}, TransposeAttrs{kToFirst}, out);
    std::string name = e.name;
    remove(&e);
    graph_.rename_node(y->producer, name);
    return true;
  }

  // A pooling of Transpose(to first)(a), whose output has readers other than one Transpose
  // to channels-last: that Transpose becomes its only reader, and the others read a
  // Transpose back, which sinks on. The pooling then lies between two Transposes, which its
  // library call absorbs (channels-last in place); the pair after it is never cancelled.
  bool sink_pool(Node& pool) {
    Value* y = pool.outputs[0];
    NodeBuilder b(graph_, *node_after(graph_, pool));
    Value* last = b.op(Op::kTranspose, {y}, TransposeAttrs{kToLast});
    Value* back = b.op(Op::kTranspose, {last}, TransposeAttrs{kToFirst});
    graph_.replace_all_uses(y, back);
    last->producer->inputs[0] = y;
    after_pools_.insert(last->producer);
    return true;
  }

  // BatchNormalization for inference over [N, C, H, W], its parameters constant.
  static bool is_batch_norm(const Node& n) {
    if (n.op_type != Op::kBatchNormalization || n.attrs_as<BatchNormAttrs>().training_mode ||
        n.inputs.size() != 5 || !has_rank(n.inputs[0], 4) ||
        std::any_of(n.outputs.begin() + 1, n.outputs.end(), [](const Value* v) { return v; }))
      return false;
    return std::all_of(n.inputs.begin() + 1, n.inputs.end(), [](const Value* v) {
      return v && v->is_constant() && v->type.dtype == DType::kF32 && has_rank(v, 1);
    });
  }

  // BatchNormalization as x * scale + shift, per channel ([1, C, 1, 1] constants), which
  // sink as any scale does.
  bool expand_batch_norm(Node& bn) {
    const Tensor &gamma = *bn.inputs[1]->constant, &beta = *bn.inputs[2]->constant,
                 &mean = *bn.inputs[3]->constant, &var = *bn.inputs[4]->constant;
    int64_t c = gamma.dims()[0];
    Tensor scale(DType::kF32, {1, c, 1, 1}), shift(DType::kF32, {1, c, 1, 1});
    double eps = bn.attrs_as<BatchNormAttrs>().epsilon;
    for (int64_t i = 0; i < c; ++i) {
      double s = gamma.get_double(i) / std::sqrt(var.get_double(i) + eps);
      scale.set_double(i, s);
      shift.set_double(i, beta.get_double(i) - mean.get_double(i) * s);
    }
    NodeBuilder b(graph_, bn);
    Value* scaled = b.op(Op::kMul, {bn.inputs[0], b.constant("scale", std::move(scale))});
    Value* out = bn.outputs[0];
    out->producer = nullptr;
    bn.outputs[0] = nullptr;
    b.op(Op::kAdd, {scaled, b.constant("shift", std::move(shift))}, NoAttrs{}, out);
    std::string name = bn.name;
    remove(&bn);
    graph_.rename_node(out->producer, name);
    return true;
  }

  // A Split of [N, C, H, W]'s channels.
  static bool is_channel_split(const Node& n) {
    if (n.op_type != Op::kSplit || !has_rank(n.inputs[0], 4) || n.inputs.size() > 2) return false;
    int64_t axis = n.attrs_as<SplitAttrs>().axis;
    return (axis == 1 || axis == -3) && (n.inputs.size() == 1 || n.inputs[1]->is_constant());
  }

  // Split(Transpose(to first)(a), channels) -> Transpose(to first) of each part of
  // Split(a, axis 3).
  bool sink_split(Node& split) {
    NodeBuilder b(graph_, split);
    SplitAttrs attrs = split.attrs_as<SplitAttrs>();
    attrs.axis = 3;
    std::vector<Value*> inputs = split.inputs;
    inputs[0] = inputs[0]->producer->inputs[0];
    std::vector<Value*> outs = split.outputs;
    for (Value* out : outs) {
      if (out) out->producer = nullptr;
    }
    split.outputs.assign(outs.size(), nullptr);
    std::vector<Value*> parts = b.node(Op::kSplit, inputs, attrs, outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i]) b.op(Op::kTranspose, {parts[i]}, TransposeAttrs{kToFirst}, outs[i]);
    }
    std::string name = split.name;
    remove(&split);
    graph_.rename_node(parts[0]->producer, name);
    return true;
  }

  // The channel shuffle of Transpose(to first)(a) -> Transpose(to first) of the same shuffle
  // of a's last axis: [N, H, W, f1, ..., fk], the factors permuted, merged back.
  bool sink_shuffle(const ChannelShuffle& s) {
    NodeBuilder b(graph_, *s.split);
    Value* a = s.split->inputs[0]->producer->inputs[0];
    Ints dims = *static_dims(a), parts = {dims[0], dims[1], dims[2]}, perm = {0, 1, 2};
    parts.insert(parts.end(), s.factors.begin(), s.factors.end());
    for (int64_t p : s.perm)
      perm.push_back(p + 3);
    Value* split = b.op(Op::kReshape, {a}, ReshapeAttrs{false, parts, {}});
    Value* permuted = b.op(Op::kTranspose, {split}, TransposeAttrs{perm});
    Value* merged = b.op(Op::kReshape, {permuted}, ReshapeAttrs{false, dims, {}});
    Value* out = s.merge->outputs[0];
    out->producer = nullptr;
    s.merge->outputs[0] = nullptr;
    b.op(Op::kTranspose, {merged}, TransposeAttrs{kToFirst}, out);
    std::string name = s.merge->name;
    graph_.remove_nodes_if(
        [&](const Node& m) { return &m == s.split || &m == s.permute || &m == s.merge; });
    graph_.rename_node(merged->producer, name);
    return true;
  }

  void remove(const Node* n) {
    graph_.remove_nodes_if([&](const Node& m) { return &m == n; });
  }

  Graph& graph_;
  std::unordered_map<const Value*, Value*> to_last_; // convert's Transposes, by their input
  std::set<const Node*> after_pools_;                // sink_pool's Transposes to channels-last
};

} // namespace

Result<bool> channels_last(Graph& graph) { return ChannelsLast(graph).run(); }

Result<bool> pools_between_regions(Graph& graph) {
  std::unordered_map<const Value*, std::vector<Node*>> readers;
  for (const auto& n : graph.nodes()) {
    for (const Value* v : n->inputs)
      readers[v].push_back(n.get());
  }
  auto only_reader = [&](const Value* v) -> Node* {
    auto it = readers.find(v);
    return it == readers.end() || it->second.size() != 1 || graph.is_graph_output(v)
               ? nullptr
               : it->second[0];
  };
  bool changed = false;
  std::vector<Node*> pools;
  for (const auto& n : graph.nodes()) {
    if (is_pool(n.get())) pools.push_back(n.get());
  }
  for (Node* p : pools) {
    Value* y = p->outputs[0];
    const Node* in = p->inputs[0]->producer;
    if (!is_transpose(in, kToFirst) || only_reader(p->inputs[0]) != p || graph.is_graph_output(y))
      continue;
    Node* to_last = nullptr;
    std::vector<Node*> branches; // the other poolings
    bool fits = true;
    for (Node* r : readers[y]) {
      if (is_transpose(r, kToLast) && !to_last) {
        to_last = r;
      } else if (is_pool(r) && r->inputs[0] == y &&
                 is_transpose(only_reader(r->outputs[0]), kToLast)) {
        branches.push_back(r);
      } else {
        fits = false;
      }
    }
    if (!fits || !to_last || branches.empty()) continue;
    // Right after the pooling: its Transpose to channels-last and the one back.
    NodeBuilder b(graph, *node_after(graph, *p));
    Value* last = b.op(Op::kTranspose, {y}, TransposeAttrs{kToLast});
    Value* back = b.op(Op::kTranspose, {last}, TransposeAttrs{kToFirst});
    graph.replace_all_uses(to_last->outputs[0], last);
    graph.remove_nodes_if([&](const Node& m) { return &m == to_last; });
    for (Node* r : branches)
      r->inputs[0] = back;
    readers[y] = {last->producer};
    readers[last] = {back->producer};
    readers[back] = branches;
    changed = true;
  }
  return changed;
}

} // namespace weft
