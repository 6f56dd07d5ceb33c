#include "weft/graph/passes/channels_last.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/channels_last_ops.h"
#include "weft/support/log.h"

namespace weft {

namespace {

using namespace channels_last_ops; // NOLINT(google-build-using-namespace)
class ChannelsLast {
public:
  ChannelsLast(Graph& graph, const std::function<bool(const Node&)>& int8_call,
               const std::function<bool(const Node&)>& stays_plain)
      : graph_(graph), int8_call_(int8_call), stays_plain_(stays_plain) {}

  bool run() {
    bool changed = false;
    std::vector<Node*> convs;
    for (const auto& n : graph_.nodes()) {
      if (!convertible(*n)) continue;
      convs.push_back(n.get());
      one_d_ = one_d_ || region_rank(n->inputs[0]) == 3;
    }
    for (Node* conv : convs)
      convert(*conv);
    changed = !convs.empty();
    // Each step cancels or sinks a Transpose; should some pair of rewrites undo each other,
    // the bound ends them (the graph is valid after every step).
    size_t steps = 0, bound = 64 * graph_.nodes().size();
    while (changed && steps++ < bound && step()) {
    }
    if (steps > bound) log_info("channels_last: stopped after {} rewrites", bound);
    if (changed) hoist_over_concats();
    return changed;
  }

private:
  // A 2-D or 3-D convolution oneDNN runs for the CPU: f32 throughout, rank 4 or 5; or a
  // QLinearConv that it runs in int8. In 1-D, an f32 one of one group over constant weights,
  // which runs as matrix products over im2col tiles (library/dnnl_epilogue.h).
  bool convertible(const Node& n) const {
    if (n.conditional || n.inputs.empty() || n.outputs.empty() || !region_rank(n.inputs[0]) ||
        region_rank(n.outputs[0]) != region_rank(n.inputs[0]))
      return false;
    bool one_d = region_rank(n.inputs[0]) == 3;
    if (n.op_type == Op::kQLinearConv) return !one_d && int8_call_ && int8_call_(n);
    if (n.op_type != Op::kConv ||
        (one_d && (n.attrs_as<ConvAttrs>().group != 1 || !n.inputs[1]->is_constant())) ||
        (stays_plain_ && stays_plain_(n)))
      return false;
    for (const auto* list : {&n.inputs, &n.outputs}) {
      for (const Value* v : *list) {
        if (v && v->type.dtype != DType::kF32) return false;
      }
    }
    return true;
  }

  // A depthwise convolution's constant weights [M, 1, k...] laid out [k..., 1, M] as well:
  // generated code reads them so (kernel::lower_conv_channels_last), oneDNN as given.
  Value* weights_last(const Node& conv) {
    const Value* w = conv.inputs[1];
    int64_t group = conv.attrs_as<ConvAttrs>().group;
    if (!w->is_constant() || group < 2 || w->constant->dtype() != DType::kF32) return nullptr;
    const std::vector<int64_t>& d = w->constant->dims();
    const Dim& channels = (*conv.inputs[0]->type.shape)[1];
    if (d.size() < 3 || d[1] != 1 || !channels.is_static() || channels.value() != group)
      return nullptr;
    int64_t m = d[0], taps = w->constant->num_elements() / m;
    std::vector<int64_t> dims(d.begin() + 2, d.end());
    dims.push_back(1);
    dims.push_back(m);
    Tensor t(DType::kF32, dims);
    const auto* from = reinterpret_cast<const float*>(w->constant->data());
    auto* to = reinterpret_cast<float*>(t.data());
    for (int64_t o = 0; o < m; ++o) {
      for (int64_t k = 0; k < taps; ++k)
        to[k * m + o] = from[o * taps + k];
    }
    return graph_.add_constant(graph_.unique_name(w->name + "_last"), std::move(t));
  }

  // x -> Transpose(to last) -> ConvChannelsLast -> Transpose(to first) -> y.
  // One Transpose per input value: convolutions reading the same one share it.
  void convert(Node& conv) {
    NodeBuilder b(graph_, conv);
    size_t rank = region_rank(conv.inputs[0]);
    std::vector<Value*> inputs = conv.inputs;
    Value*& last = to_last_[inputs[0]];
    if (!last) {
      last = b.op(Op::kTranspose, {inputs[0]}, TransposeAttrs{to_last(rank)});
      made_to_last_.insert(last->producer);
    }
    inputs[0] = last;
    Op op = conv.op_type == Op::kQLinearConv ? Op::kQLinearConvChannelsLast : Op::kConvChannelsLast;
    if (op == Op::kConvChannelsLast) {
      if (Value* w = weights_last(conv)) {
        inputs.resize(3, nullptr);
        inputs.push_back(w);
      }
    }
    Value* y = b.op(op, inputs, conv.attrs);
    Value* out = conv.outputs[0];
    out->producer = nullptr;
    conv.outputs[0] = nullptr;
    b.op(Op::kTranspose, {y}, TransposeAttrs{to_first(rank)}, out);
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
      size_t rank = to_first_rank(t, one_d_);
      if (!rank && !to_last_rank(t, one_d_)) continue;
      const Ints undo = rank ? to_last(rank) : to_first(to_last_rank(t, one_d_));
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
      auto sinkable = [&](Node* r) {
        return is_pointwise(*r) || is_reduction(*r) || is_slice(*r) || is_spatial_pad(*r) ||
               r->op_type == Op::kConcat || is_channel_split(*r) ||
               channel_shuffle(*r, readers, graph_) || is_batch_norm(*r) ||
               resize_takes(*r, readers);
      };
      bool all_sinkable = std::all_of(rs.begin(), rs.end(), sinkable);
      // (In 1-D, the pass's own Transposes to channels-last read as to channels-first too;
      // sunk, they would come back as the other operand's.)
      if (!rank || rs.empty() || graph_.is_graph_output(v) || made_to_last_.contains(t)) continue;
      if (rank == 4 && rs.size() == 1 && is_pool(rs[0]) && rs[0]->inputs[0] == v &&
          !graph_.is_graph_output(rs[0]->outputs[0])) {
        const std::vector<Node*>& after = readers[rs[0]->outputs[0]];
        if (!after.empty() && (after.size() != 1 || !is_transpose(after[0], kToLast)))
          return sink_pool(*rs[0]);
      }
      // A ConvTranspose likewise, where every reader of its output takes a Transpose on (the
      // instance normalization after a GAN's upsampling, which canonicalize expanded): its call
      // then writes channels-last in place, and the region goes on through its readers.
      if (rank == 4 && rs.size() == 1 && rs[0]->op_type == Op::kConvTranspose &&
          rs[0]->inputs[0] == v && has_rank(rs[0]->outputs[0], 4) &&
          rs[0]->outputs[0]->type.dtype == DType::kF32 &&
          !graph_.is_graph_output(rs[0]->outputs[0])) {
        const std::vector<Node*>& after = readers[rs[0]->outputs[0]];
        if (!after.empty() && std::all_of(after.begin(), after.end(), sinkable))
          return sink_pool(*rs[0]);
      }
      for (Node* r : rs) {
        if (sink_group_norm(*t, *r, rank, readers)) return true;
      }
      if (!all_sinkable) continue;
      if (is_batch_norm(*rs[0])) return expand_batch_norm(*rs[0]);
      if (is_channel_split(*rs[0])) return sink_split(*rs[0], rank);
      if (auto shuffle = channel_shuffle(*rs[0], readers, graph_)) return sink_shuffle(*shuffle);
      if (sink(*rs[0], rank, readers)) return true;
    }
    return false;
  }

  // Whether a Transpose sinks through Resize "r": one that enlarges would move the Transpose
  // onto more data, so only where its readers take it on (YOLO's nearest upsampling, into a
  // Concat before a convolution), not before a graph output (a segmenter's last upsampling).
  bool resize_takes(const Node& r,
                    const std::unordered_map<const Value*, std::vector<Node*>>& readers) const {
    if (!is_resize(r) || (stays_plain_ && stays_plain_(r))) return false;
    const Value *x = r.inputs[0], *y = r.outputs[0];
    std::optional<int64_t> in = shape_num_elements(*x->type.shape),
                           out = y->type.shape ? shape_num_elements(*y->type.shape) : std::nullopt;
    if (in && out && *out <= *in) return true;
    auto it = readers.find(y);
    if (graph_.is_graph_output(y) || it == readers.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(), [&](const Node* n) {
      return to_last_rank(n, one_d_) || is_pointwise(*n) || n->op_type == Op::kConcat;
    });
  }

  // e(..., Transpose(to first)(a), ...) -> Transpose(to first)(e(..., a, ...)), the other
  // operands taken channels-last; the Transpose's output has "e" as its one reader. False
  // when an operand cannot be taken so.
  bool sink(Node& e, size_t rank,
            const std::unordered_map<const Value*, std::vector<Node*>>& readers) {
    const Ints first = to_first(rank), last = to_last(rank);
    const int64_t dims = static_cast<int64_t>(rank);
    // A Concat of channels (axis 1) concatenates channels-last along the last axis.
    OpAttrs attrs = e.attrs;
    bool concat = e.op_type == Op::kConcat && has_rank(e.outputs[0], rank) &&
                  (e.attrs_as<AxisAttrs>().axis == 1 || e.attrs_as<AxisAttrs>().axis == 1 - dims);
    if (concat) attrs = AxisAttrs{dims - 1};
    Op op = e.op_type;
    bool reduction = is_reduction(e) && has_rank(e.inputs[0], rank);
    if (reduction && is_global_pool(e)) { // channels-last's spatial axes
      Ints spatial;
      for (int64_t a = 1; a + 1 < dims; ++a)
        spatial.push_back(a);
      op = e.op_type == Op::kGlobalAveragePool ? Op::kReduceMean : Op::kReduceMax;
      attrs = ReduceAttrs{spatial, true, false};
    } else if (reduction) { // its axes, over [N, spatial..., C]
      ReduceAttrs at = e.attrs_as<ReduceAttrs>();
      for (int64_t& a : *at.axes)
        a = first[static_cast<size_t>(a < 0 ? a + dims : a)];
      std::sort(at.axes->begin(), at.axes->end());
      attrs = at;
    }
    bool slice = is_slice(e) && has_rank(e.inputs[0], rank);
    if (slice) { // its axes, over [N, spatial..., C]
      SliceAttrs at = e.attrs_as<SliceAttrs>();
      for (int64_t& a : *at.axes)
        a = first[static_cast<size_t>(a)];
      attrs = at;
    }
    bool pad = is_spatial_pad(e) && has_rank(e.inputs[0], rank);
    if (pad) { // its widths, over [N, spatial..., C]
      PadAttrs at = e.attrs_as<PadAttrs>();
      const Ints& widths = *e.attrs_as<PadAttrs>().pads;
      for (size_t a = 0; a < rank; ++a) {
        (*at.pads)[static_cast<size_t>(first[a])] = widths[a];
        (*at.pads)[rank + static_cast<size_t>(first[a])] = widths[rank + a];
      }
      attrs = at;
    }
    bool resize = is_resize(e) && has_rank(e.inputs[0], rank);
    // (A reduction without keepdims leaves the same elements in the same order.)
    bool same_layout = reduction && !std::get<ReduceAttrs>(attrs).keepdims;
    if ((!is_pointwise(e) && !concat && !reduction && !slice && !pad && !resize) ||
        (!same_layout && !has_rank(e.outputs[0], rank)))
      return false;
    std::vector<Value*> inputs;
    std::vector<Tensor> transposed; // constants to make, by input position
    std::vector<int> constant_at;
    std::vector<int> reorder_at; // other 4-D operands: a Transpose of their own
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      Value* in = e.inputs[i];
      const Node* p = in ? in->producer : nullptr;
      if (resize && i > 0 && in && in->constant->num_elements() > 0) { // roi, scales, sizes
        constant_at.push_back(static_cast<int>(i));
        transposed.push_back(resize_parameter(*in->constant, last));
        inputs.push_back(nullptr);
      } else if (in && !(resize && i > 0) && is_transpose(p, first) && readers.at(in).size() == 1 &&
                 !graph_.is_graph_output(in)) {
        // (Before the all-ones case: a Transpose of [1, 1, 1, 1] sinks too, or it would stay
        // before "e" and sink again at every step: ConvNeXt-V2's GRN, its channels' mean.)
        inputs.push_back(p->inputs[0]);
      } else if (!in || (resize && i > 0) || (!concat && all_ones(in))) {
        inputs.push_back(in);
      } else if (!concat && in->is_constant() && in->type.dtype == DType::kF32 && in->type.shape &&
                 in->type.shape->size() <= rank) {
        constant_at.push_back(static_cast<int>(i));
        transposed.push_back(to_channels_last(*in->constant, rank));
        inputs.push_back(nullptr);
      } else if (has_rank(in, rank)) { // (a per-channel scale [N, C, 1, 1]: cheap)
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
        if (is_transpose(r, last)) existing = r;
      }
      if (!existing) {
        in = b.op(Op::kTranspose, {in}, TransposeAttrs{last});
        made_to_last_.insert(in->producer);
      } else {
        in = existing->outputs[0];
      }
    }
    Value* out = e.outputs[0];
    out->producer = nullptr;
    e.outputs[0] = nullptr;
    Value* y = same_layout ? b.op(op, inputs, attrs, out) : b.op(op, inputs, attrs);
    if (!same_layout) b.op(Op::kTranspose, {y}, TransposeAttrs{first}, out);
    std::string name = e.name;
    remove(&e);
    graph_.rename_node(y->producer, name);
    return true;
  }

  // GroupNorm as PyTorch exports it (canonicalize expands its InstanceNormalization):
  // Transpose(to first)(a) -> Reshape to [N, G, X] -> statistics over axis 2 (keepdims) and
  // pointwise ops, their other operands per group ([G, 1], [1, G, 1]) or scalars -> Reshapes
  // back to [N, C, spatial...]. Channels-last the same elements are [N, S, G, C/G] (S the
  // spatial points), the statistics over axes 1 and 3 ([N, 1, G, 1]: per-group operands
  // broadcast as before), and each Reshape back gives [N, spatial..., C], a Transpose to
  // channels-first after it that sinks on. The strided read of the Transpose goes (a DDPM
  // UNet's GroupNorm and SiLU of [1, 128, 64, 64]: 0.33 -> 0.23 ms). Where the Transpose has
  // other readers (PoolFormer's residual reads the GroupNorm's input too), it stays for them.
  bool sink_group_norm(Node& t, Node& grouping, size_t rank,
                       const std::unordered_map<const Value*, std::vector<Node*>>& readers) {
    const Value* x = t.outputs[0]; // [N, C, spatial...]
    const TensorType& grouped = grouping.outputs[0]->type;
    if (grouping.op_type != Op::kReshape || grouping.inputs.size() != 1 ||
        !x->type.has_static_shape() || !grouped.has_static_shape() || grouped.shape->size() != 3 ||
        x->type.dtype != DType::kF32)
      return false;
    const Ints dims = shape_static_dims(*x->type.shape), g = shape_static_dims(*grouped.shape);
    int64_t n = dims[0], c = dims[1], groups = g[1];
    int64_t points = g[2] * groups / std::max<int64_t>(c, 1);
    if (g[0] != n || groups < 1 || c % groups != 0 || points * c != g[1] * g[2]) return false;
    // The region: values [N, G, X] (full) and [N, G, 1] (statistics), and its nodes.
    std::set<Value*> full = {grouping.outputs[0]}, stats;
    std::vector<Node*> nodes, ends;
    std::vector<Value*> work = {grouping.outputs[0]};
    std::set<const Node*> seen;
    auto is_stat = [&](const Value* v) {
      return v->type.has_static_shape() && shape_static_dims(*v->type.shape) == Ints{n, groups, 1};
    };
    auto per_group = [&](const Value* v) { // broadcasts along G alone (or not at all)
      if (!v || !v->type.has_static_shape() || v->type.shape->size() > 3) return false;
      Ints d = shape_static_dims(*v->type.shape);
      while (d.size() < 3)
        d.insert(d.begin(), 1);
      return d[0] == 1 && (d[1] == 1 || d[1] == groups) && d[2] == 1;
    };
    while (!work.empty()) {
      Value* v = work.back();
      work.pop_back();
      auto it = readers.find(v);
      if (graph_.is_graph_output(v) || it == readers.end()) return false;
      for (Node* r : it->second) {
        if (!seen.insert(r).second) continue;
        Value* out = r->outputs.size() == 1 ? r->outputs[0] : nullptr;
        if (!out || !out->type.has_static_shape()) return false;
        if (r->op_type == Op::kReshape && r->inputs.size() == 1 && full.contains(v) &&
            shape_static_dims(*out->type.shape) == dims) {
          ends.push_back(r);
          continue;
        }
        bool reduction = std::holds_alternative<ReduceAttrs>(r->attrs) && is_reduction(*r) &&
                         full.contains(r->inputs[0]) && r->attrs_as<ReduceAttrs>().keepdims &&
                         r->attrs_as<ReduceAttrs>().axes == Ints{2} && is_stat(out);
        bool pointwise = is_pointwise(*r) && (out->type == grouped || is_stat(out)) &&
                         std::all_of(r->inputs.begin(), r->inputs.end(), [&](Value* in) {
                           return full.contains(in) || stats.contains(in) || per_group(in);
                         });
        if (!reduction && !pointwise) return false;
        nodes.push_back(r);
        (out->type == grouped ? full : stats).insert(out);
        work.push_back(out);
      }
    }
    if (ends.empty()) return false;
    // Channels-last: the grouping reads a, the region's values take their new shapes.
    const int64_t per = c / groups;
    grouping.inputs[0] = t.inputs[0];
    grouping.attrs_as<ReshapeAttrs>().shape = Ints{n, points, groups, per};
    for (Value* v : full)
      v->type.shape = shape_from_dims({n, points, groups, per});
    for (Value* v : stats)
      v->type.shape = shape_from_dims({n, 1, groups, 1});
    for (Node* r : nodes) {
      if (std::holds_alternative<ReduceAttrs>(r->attrs))
        r->attrs_as<ReduceAttrs>().axes = Ints{1, 3};
    }
    Ints last_dims = {n};
    for (size_t d = 2; d < rank; ++d)
      last_dims.push_back(dims[d]);
    last_dims.push_back(c);
    for (Node* e : ends) {
      NodeBuilder b(graph_, *e);
      Value* merged = b.op(Op::kReshape, {e->inputs[0]}, reshape_to(last_dims));
      Value* out = e->outputs[0];
      out->producer = nullptr;
      e->outputs[0] = nullptr;
      b.op(Op::kTranspose, {merged}, TransposeAttrs{to_first(rank)}, out);
      std::string name = e->name;
      remove(e);
      graph_.rename_node(merged->producer, name);
    }
    if (readers.at(x).size() == 1) remove(&t);
    return true;
  }

  // A pooling (or a ConvTranspose) of Transpose(to first)(a), whose output has readers other
  // than one Transpose to channels-last: that Transpose becomes its only reader, and the others
  // read a Transpose back, which sinks on. The call then lies between two Transposes, which it
  // absorbs (channels-last in place); the pair after it is never cancelled.
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

  // BatchNormalization for inference over [N, C, spatial...], its parameters constant.
  static bool is_batch_norm(const Node& n) {
    if (n.op_type != Op::kBatchNormalization || n.attrs_as<BatchNormAttrs>().training_mode ||
        n.inputs.size() != 5 || !region_rank(n.inputs[0]) ||
        std::any_of(n.outputs.begin() + 1, n.outputs.end(), [](const Value* v) { return v; }))
      return false;
    return std::all_of(n.inputs.begin() + 1, n.inputs.end(), [](const Value* v) {
      return v && v->is_constant() && v->type.dtype == DType::kF32 && has_rank(v, 1);
    });
  }

  // BatchNormalization as x * scale + shift, per channel ([1, C, 1, ...] constants), which
  // sink as any scale does.
  bool expand_batch_norm(Node& bn) {
    const Tensor &gamma = *bn.inputs[1]->constant, &beta = *bn.inputs[2]->constant,
                 &mean = *bn.inputs[3]->constant, &var = *bn.inputs[4]->constant;
    int64_t c = gamma.dims()[0];
    std::vector<int64_t> dims(region_rank(bn.inputs[0]), 1);
    dims[1] = c;
    Tensor scale(DType::kF32, dims), shift(DType::kF32, dims);
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

  // A Split of [N, C, spatial...]'s channels.
  static bool is_channel_split(const Node& n) {
    size_t rank = n.inputs.empty() ? 0 : region_rank(n.inputs[0]);
    if (n.op_type != Op::kSplit || !rank || n.inputs.size() > 2) return false;
    int64_t axis = n.attrs_as<SplitAttrs>().axis;
    return (axis == 1 || axis == 1 - static_cast<int64_t>(rank)) &&
           (n.inputs.size() == 1 || n.inputs[1]->is_constant());
  }

  // Split(Transpose(to first)(a), channels) -> Transpose(to first) of each part of
  // Split(a, its last axis).
  bool sink_split(Node& split, size_t rank) {
    NodeBuilder b(graph_, split);
    SplitAttrs attrs = split.attrs_as<SplitAttrs>();
    attrs.axis = static_cast<int64_t>(rank) - 1;
    std::vector<Value*> inputs = split.inputs;
    inputs[0] = inputs[0]->producer->inputs[0];
    std::vector<Value*> outs = split.outputs;
    for (Value* out : outs) {
      if (out) out->producer = nullptr;
    }
    split.outputs.assign(outs.size(), nullptr);
    std::vector<Value*> parts = b.node(Op::kSplit, inputs, attrs, outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i]) b.op(Op::kTranspose, {parts[i]}, TransposeAttrs{to_first(rank)}, outs[i]);
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
    Value* split = b.op(Op::kReshape, {a}, reshape_to(parts));
    Value* permuted = b.op(Op::kTranspose, {split}, TransposeAttrs{perm});
    Value* merged = b.op(Op::kReshape, {permuted}, reshape_to(dims));
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

  // Transpose(to first)(Concat(a, b, ...) along channels-last's last axis), the Concat's only
  // reader -> Concat(Transpose(to first)(a), ...) along the channels, once the steps are done
  // (they would sink those Transposes again): each Transpose then writes its slice of the
  // result (fused into the Concat's kernel, in tiles), where the Concat wrote its result for
  // one Transpose to read again (a YOLO head's [1, 80, 80, 64 + 80] before its Reshape). Only
  // where the Transpose's result goes to Reshapes, Flattens or the graph's outputs: a pooling
  // runs channels-last between it and one back (pools_between_regions: SqueezeNet's and
  // Inception's Concat then MaxPool), and oneDNN's calls absorb it (a Resize's).
  void hoist_over_concats() {
    std::unordered_map<const Value*, int> uses = graph_.use_counts();
    std::set<const Value*> kept; // values that a node other than a Reshape or Flatten reads
    std::vector<Node*> transposes;
    for (const auto& n : graph_.nodes()) {
      if (to_first_rank(n.get(), one_d_)) transposes.push_back(n.get());
      if (n->op_type != Op::kReshape && n->op_type != Op::kFlatten)
        kept.insert(n->inputs.begin(), n->inputs.end());
    }
    for (Node* t : transposes) {
      size_t rank = to_first_rank(t, one_d_);
      Value* v = t->inputs[0];
      Node* concat = v->producer;
      if (!concat || concat->op_type != Op::kConcat || uses[v] != 1 || graph_.is_graph_output(v) ||
          kept.contains(t->outputs[0]))
        continue;
      int64_t axis = concat->attrs_as<AxisAttrs>().axis;
      bool fits = axis == static_cast<int64_t>(rank) - 1 || axis == -1;
      for (const Value* in : concat->inputs)
        fits = fits && has_rank(in, rank);
      if (!fits) continue;
      NodeBuilder b(graph_, *t);
      std::vector<Value*> parts;
      for (Value* in : concat->inputs)
        parts.push_back(b.op(Op::kTranspose, {in}, TransposeAttrs{to_first(rank)}));
      Value* out = t->outputs[0];
      out->producer = nullptr;
      t->outputs[0] = nullptr;
      b.op(Op::kConcat, parts, AxisAttrs{1}, out);
      remove(t);
      remove(concat);
    }
  }

  void remove(const Node* n) {
    made_to_last_.erase(n);
    graph_.remove_nodes_if([&](const Node& m) { return &m == n; });
  }

  Graph& graph_;
  std::function<bool(const Node&)> int8_call_;
  std::function<bool(const Node&)> stays_plain_;
  std::unordered_map<const Value*, Value*> to_last_; // convert's Transposes, by their input
  std::set<const Node*> after_pools_;                // sink_pool's Transposes to channels-last
  bool one_d_ = false; // 1-D convolutions converted: rank-3 Transposes are the pass's too
  std::set<const Node*> made_to_last_; // the pass's Transposes to channels-last, never sunk
};

} // namespace

Result<bool> channels_last(Graph& graph, const std::function<bool(const Node&)>& int8_call,
                           const std::function<bool(const Node&)>& stays_plain) {
  return ChannelsLast(graph, int8_call, stays_plain).run();
}

} // namespace weft
