#include "weft/graph/passes/channels_last_ops.h"

#include <algorithm>
#include <set>

#include "weft/graph/op_table.h"

namespace weft::channels_last_ops {

Ints to_last(size_t rank) {
  Ints p = {0};
  for (size_t d = 2; d < rank; ++d)
    p.push_back(static_cast<int64_t>(d));
  p.push_back(1);
  return p;
}

Ints to_first(size_t rank) {
  Ints p = {0, static_cast<int64_t>(rank) - 1};
  for (size_t d = 1; d + 1 < rank; ++d)
    p.push_back(static_cast<int64_t>(d));
  return p;
}

size_t region_rank(const Value* v) {
  size_t rank = v && v->type.shape ? v->type.shape->size() : 0;
  return rank >= 3 && rank <= 5 ? rank : 0;
}

bool is_pointwise(const Node& n) {
  static const std::set<Op> kOps = {Op::kRelu,        Op::kClip,        Op::kSigmoid,
                                    Op::kTanh,        Op::kHardSigmoid, Op::kHardSwish,
                                    Op::kLeakyRelu,   Op::kElu,         Op::kSelu,
                                    Op::kGelu,        Op::kErf,         Op::kExp,
                                    Op::kAbs,         Op::kNeg,         Op::kSqrt,
                                    Op::kMish,        Op::kSoftplus,    Op::kAdd,
                                    Op::kSub,         Op::kMul,         Op::kDiv,
                                    Op::kMax,         Op::kMin,         Op::kPRelu,
                                    Op::kPow,         Op::kSum,         Op::kMean,
                                    Op::kWhere,       Op::kSwish,       Op::kRound,
                                    Op::kCast,        Op::kLog,         Op::kReciprocal,
                                    Op::kFloor,       Op::kCeil,        Op::kSign,
                                    Op::kSoftsign,    Op::kCelu,        Op::kThresholdedRelu,
                                    Op::kGreater,     Op::kLess,        Op::kGreaterOrEqual,
                                    Op::kLessOrEqual, Op::kEqual,       Op::kNot,
                                    Op::kAnd,         Op::kOr,          Op::kXor,
                                    Op::kIsNaN,       Op::kIsInf};
  if (n.outputs.size() != 1 || !n.outputs[0]) return false;
  if (n.op_type == Op::kQuantizeLinear || n.op_type == Op::kDequantizeLinear) {
    // Per tensor (a QDQ model's activations): its scale and zero point are one element each.
    return n.inputs.size() >= 2 && std::all_of(n.inputs.begin() + 1, n.inputs.end(), [](auto* v) {
             return !v || (v->type.shape && shape_num_elements(*v->type.shape) == 1);
           });
  }
  return kOps.contains(n.op_type);
}

bool has_rank(const Value* v, size_t rank) {
  return v && v->type.shape && v->type.shape->size() == rank;
}

bool is_spatial_pad(const Node& n) {
  size_t rank = region_rank(n.inputs.empty() ? nullptr : n.inputs[0]);
  if (n.op_type != Op::kPad || n.inputs.size() != 1 || !rank) return false;
  const std::optional<Ints>& pads = n.attrs_as<PadAttrs>().pads;
  return pads && pads->size() == 2 * rank && (*pads)[0] == 0 && (*pads)[1] == 0 &&
         (*pads)[rank] == 0 && (*pads)[rank + 1] == 0;
}

bool is_slice(const Node& n) {
  return n.op_type == Op::kSlice && n.inputs.size() == 1 && region_rank(n.inputs[0]) &&
         n.attrs_as<SliceAttrs>().starts && n.attrs_as<SliceAttrs>().axes;
}

bool is_global_pool(const Node& n) {
  return (n.op_type == Op::kGlobalAveragePool || n.op_type == Op::kGlobalMaxPool) &&
         n.inputs.size() == 1 && region_rank(n.inputs[0]);
}

bool is_reduction(const Node& n) {
  static const std::set<Op> kOps = {Op::kReduceMean, Op::kReduceSum,       Op::kReduceMax,
                                    Op::kReduceMin,  Op::kReduceProd,      Op::kReduceL1,
                                    Op::kReduceL2,   Op::kReduceSumSquare, Op::kReduceLogSumExp};
  if (is_global_pool(n)) return true;
  size_t rank = region_rank(n.inputs.empty() ? nullptr : n.inputs[0]);
  if (!kOps.contains(n.op_type) || n.inputs.size() != 1 || !rank) return false;
  const auto& at = n.attrs_as<ReduceAttrs>();
  if (!at.axes || at.axes->empty()) return false;
  if (at.keepdims) return true;
  int64_t last = -1; // the kept axes' positions channels-last, in their order
  const Ints first = to_first(rank);
  for (int64_t a = 0; a < static_cast<int64_t>(rank); ++a) {
    bool reduced = std::find(at.axes->begin(), at.axes->end(), a) != at.axes->end() ||
                   std::find(at.axes->begin(), at.axes->end(), a - static_cast<int64_t>(rank)) !=
                       at.axes->end();
    if (reduced) continue;
    if (first[static_cast<size_t>(a)] < last) return false;
    last = first[static_cast<size_t>(a)];
  }
  return true;
}

bool is_resize(const Node& n) {
  size_t rank = region_rank(n.inputs.empty() ? nullptr : n.inputs[0]);
  if (n.op_type != Op::kResize || !rank || n.attrs_as<ResizeAttrs>().axes) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const Value* p = n.inputs[i];
    int64_t count = i == 1 ? 2 * static_cast<int64_t>(rank) : static_cast<int64_t>(rank);
    if (p && (!p->is_constant() ||
              (p->constant->num_elements() != count && p->constant->num_elements() != 0)))
      return false;
  }
  return true;
}

Tensor resize_parameter(const Tensor& t, const Ints& last) {
  Tensor out(t.dtype(), t.dims());
  int64_t rank = static_cast<int64_t>(last.size());
  for (int64_t i = 0; i < t.num_elements(); ++i)
    out.set_double(i, t.get_double(i / rank * rank + last[static_cast<size_t>(i % rank)]));
  return out;
}

bool is_transpose(const Node* n, const Ints& perm) {
  return n && n->op_type == Op::kTranspose && n->attrs_as<TransposeAttrs>().perm == perm;
}

size_t to_first_rank(const Node* n, bool one_d) {
  for (size_t rank : {3, 4, 5}) {
    if ((rank > 3 || one_d) && is_transpose(n, to_first(rank))) return rank;
  }
  return 0;
}

size_t to_last_rank(const Node* n, bool one_d) {
  for (size_t rank : {3, 4, 5}) {
    if ((rank > 3 || one_d) && is_transpose(n, to_last(rank))) return rank;
  }
  return 0;
}

bool all_ones(const Value* v) {
  if (!v->type.shape) return false;
  for (const Dim& d : *v->type.shape) {
    if (!(d == Dim(1))) return false;
  }
  return true;
}

Tensor to_channels_last(const Tensor& c, size_t rank) {
  std::vector<int64_t> dims = c.dims();
  dims.insert(dims.begin(), rank - dims.size(), 1);
  const Ints perm = to_last(rank);
  std::vector<int64_t> out_dims;
  for (int64_t p : perm)
    out_dims.push_back(dims[static_cast<size_t>(p)]);
  Tensor out(c.dtype(), out_dims);
  // Each output element, by its index over out_dims, from the input's row-major position.
  std::vector<int64_t> strides(rank, 1), index(rank, 0);
  for (size_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * dims[d];
  int64_t count = out.num_elements();
  for (int64_t i = 0; i < count; ++i) {
    int64_t from = 0;
    for (size_t d = 0; d < rank; ++d)
      from += index[d] * strides[static_cast<size_t>(perm[d])];
    out.set_double(i, c.get_double(from));
    for (size_t d = rank; d-- > 0;) { // the next index, row-major
      if (++index[d] < out_dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

std::optional<Ints> static_dims(const Value* v) {
  if (!v || !v->type.shape || !shape_is_static(*v->type.shape)) return std::nullopt;
  return shape_static_dims(*v->type.shape);
}

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

} // namespace weft::channels_last_ops
