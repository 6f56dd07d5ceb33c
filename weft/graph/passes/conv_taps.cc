// Conv taps that read padding: graph/passes/conv_taps.h.
#include "weft/graph/passes/conv_taps.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "weft/graph/node_builder.h"
#include "weft/graph/op_table.h"
#include "weft/graph/shape_functions.h"

namespace weft {

namespace {

// Weights "w" [M, C, k...] keeping "taps[i]" taps from "first[i]" on in each window dim i.
Tensor slice_taps(const Tensor& w, const Ints& first, const Ints& taps) {
  const std::vector<int64_t>& wd = w.dims();
  std::vector<int64_t> dims = wd;
  std::copy(taps.begin(), taps.end(), dims.begin() + 2);
  Tensor sliced(w.dtype(), dims);
  const int64_t size = dtype_size(w.dtype());
  const auto* from = reinterpret_cast<const std::byte*>(w.data());
  auto* to = reinterpret_cast<std::byte*>(sliced.data());
  for (int64_t e = 0; e < sliced.num_elements(); ++e) {
    int64_t rest = e, source = 0, stride = 1; // e's index in the new dims, then in the old
    for (size_t j = dims.size(); j-- > 0;) {
      int64_t index = rest % dims[j] + (j >= 2 ? first[j - 2] : 0);
      rest /= dims[j];
      source += index * stride;
      stride *= wd[j];
    }
    std::memcpy(to + e * size, from + source * size, static_cast<size_t>(size));
  }
  return sliced;
}

// Along one window dim of a Conv: the output positions [begin, end) whose taps reading
// inside the input are the same, [lo, hi] (none where lo > hi).
struct TapRun {
  int64_t begin, end, lo, hi;
};

std::vector<TapRun> tap_runs(const Window& d) {
  std::vector<TapRun> runs;
  for (int64_t o = 0; o < d.out; ++o) {
    int64_t at = o * d.stride - d.pad_begin; // where tap 0 reads
    int64_t lo = at >= 0 ? 0 : (-at + d.dilation - 1) / d.dilation;
    int64_t hi = at > d.in - 1 ? -1 : std::min(d.kernel - 1, (d.in - 1 - at) / d.dilation);
    if (!runs.empty() && runs.back().lo == lo && runs.back().hi == hi)
      runs.back().end = o + 1;
    else
      runs.push_back({o, o + 1, lo, hi});
  }
  return runs;
}

// The Conv's window dims, where its input, output and weights have static shapes and the
// weights are constant (of whole bytes an element); none elsewhere.
std::optional<std::vector<Window>> static_windows(const Node& node) {
  const Value *x = node.inputs[0], *w = node.inputs[1], *y = node.outputs[0];
  if (!w->is_constant() || !x->type.has_static_shape() || !y->type.has_static_shape() ||
      dtype_packed_bits(w->constant->dtype()) < 8)
    return std::nullopt;
  const auto& a = node.attrs_as<ConvAttrs>();
  const std::vector<int64_t>& wd = w->constant->dims();
  if (wd.size() < 3 || x->type.shape->size() != wd.size()) return std::nullopt;
  Ints kernel = a.kernel_shape.empty() ? Ints(wd.begin() + 2, wd.end()) : a.kernel_shape;
  std::vector<Window> win = window_dims(kernel, a.strides, a.dilations, a.pads, a.auto_pad,
                                        *x->type.shape, *y->type.shape);
  if (win.size() != wd.size() - 2) return std::nullopt;
  for (size_t i = 0; i < win.size(); ++i) {
    if (win[i].out <= 0 || win[i].kernel != wd[2 + i]) return std::nullopt;
  }
  return win;
}

// split_padded_conv's thresholds.
constexpr double kMostlyPadding = 0.5;
constexpr int64_t kMaxPieces = 16;
// Smaller convolutions stay whole: a piece costs a library call and a slice.
constexpr double kSplitMinFlops = 5e7;

} // namespace

void absorb_pad(Node& conv) {
  Value* x = conv.inputs[0];
  const Node* pad = x->producer;
  auto& a = conv.attrs_as<ConvAttrs>();
  if (!pad || pad->op_type != Op::kPad || pad->inputs.size() != 1 ||
      a.auto_pad != AutoPad::kNotSet || !x->type.shape)
    return;
  const auto& p = pad->attrs_as<PadAttrs>();
  const size_t rank = x->type.shape->size(), spatial = rank - 2;
  if (p.mode != PadMode::kConstant || p.value != 0.0f || !p.pads || p.pads->size() != 2 * rank ||
      rank < 3 || (!a.pads.empty() && a.pads.size() != 2 * spatial))
    return;
  const Ints& grow = *p.pads;
  if (grow[0] != 0 || grow[1] != 0 || grow[rank] != 0 || grow[rank + 1] != 0 ||
      std::any_of(grow.begin(), grow.end(), [](int64_t v) { return v < 0; }))
    return;
  Ints pads = a.pads.empty() ? Ints(2 * spatial, 0) : a.pads;
  for (size_t i = 0; i < spatial; ++i) {
    pads[i] += grow[2 + i];
    pads[spatial + i] += grow[rank + 2 + i];
  }
  a.pads = pads;
  conv.inputs[0] = pad->inputs[0];
}

void drop_padding_taps(Graph& graph, Node& node) {
  std::optional<std::vector<Window>> win = static_windows(node);
  if (!win) return;
  auto& a = node.attrs_as<ConvAttrs>();
  const size_t rank = win->size();
  Ints first(rank), taps(rank), pads(2 * rank), dilations(rank);
  bool dropped = false;
  for (size_t i = 0; i < rank; ++i) {
    const Window& d = (*win)[i];
    int64_t lo = d.kernel, hi = -1;
    for (const TapRun& r : tap_runs(d)) {
      lo = std::min(lo, r.lo);
      hi = std::max(hi, r.hi);
    }
    if (lo > hi) return; // every tap reads padding: left as it is
    int64_t begin = d.pad_begin - lo * d.dilation;
    int64_t end = (d.out - 1) * d.stride + (hi - lo) * d.dilation + 1 - d.in - begin;
    if (begin < 0 || end < 0) lo = 0, hi = d.kernel - 1, begin = d.pad_begin, end = d.pad_end;
    dropped |= hi - lo + 1 < d.kernel;
    first[i] = lo;
    taps[i] = hi - lo + 1;
    pads[i] = begin;
    pads[rank + i] = end;
    dilations[i] = taps[i] == 1 ? 1 : d.dilation;
  }
  if (!dropped) return;
  Value* w = node.inputs[1];
  node.inputs[1] = graph.add_constant(graph.unique_name(w->name + "_taps"),
                                      slice_taps(*w->constant, first, taps));
  a.kernel_shape = taps;
  a.pads = pads;
  a.dilations = dilations;
  a.auto_pad = AutoPad::kNotSet;
}

void split_padded_conv(Graph& graph, Node& node) {
  std::optional<std::vector<Window>> win = static_windows(node);
  if (!win) return;
  const auto& a = node.attrs_as<ConvAttrs>();
  const size_t rank = win->size();
  const Value* y = node.outputs[0];
  const Tensor& w = *node.inputs[1]->constant;
  std::vector<std::vector<TapRun>> runs;
  double inside = 1, all = 1;
  int64_t pieces = 1;
  for (const Window& d : *win) {
    runs.push_back(tap_runs(d));
    int64_t reads = 0;
    for (const TapRun& r : runs.back()) {
      if (r.lo > r.hi) return;
      reads += (r.end - r.begin) * (r.hi - r.lo + 1);
    }
    inside *= static_cast<double>(reads);
    all *= static_cast<double>(d.out * d.kernel);
    pieces *= static_cast<int64_t>(runs.back().size());
  }
  // Each output element multiplies and adds one slice of the weights: their elements / M.
  double flops = 2.0 * static_cast<double>(w.num_elements() / w.dims()[0]) *
                 static_cast<double>(shape_num_elements(*y->type.shape).value_or(0));
  if (inside >= kMostlyPadding * all || pieces < 2 || pieces > kMaxPieces || flops < kSplitMinFlops)
    return;
  Ints strides(rank);
  for (size_t i = 0; i < rank; ++i)
    strides[i] = (*win)[i].stride;
  NodeBuilder b(graph, node);
  std::vector<const TapRun*> chosen;
  // The pieces over dims [i, rank) under the runs "chosen" in dims before i.
  std::function<Value*(size_t)> build = [&](size_t i) -> Value* {
    if (i < rank) {
      std::vector<Value*> parts;
      for (const TapRun& r : runs[i]) {
        chosen.push_back(&r);
        parts.push_back(build(i + 1));
        chosen.pop_back();
      }
      if (parts.size() == 1) return parts[0];
      return b.op(Op::kConcat, parts, AxisAttrs{static_cast<int64_t>(2 + i)});
    }
    Ints first(rank), taps(rank), starts(rank), ends(rank), axes(rank), dilations(rank);
    bool whole = true;
    for (size_t j = 0; j < rank; ++j) {
      const Window& d = (*win)[j];
      const TapRun& r = *chosen[j];
      first[j] = r.lo;
      taps[j] = r.hi - r.lo + 1;
      starts[j] = r.begin * d.stride - d.pad_begin + r.lo * d.dilation;
      ends[j] = (r.end - 1) * d.stride - d.pad_begin + r.hi * d.dilation + 1;
      axes[j] = static_cast<int64_t>(2 + j);
      dilations[j] = taps[j] == 1 ? 1 : d.dilation;
      whole &= starts[j] == 0 && ends[j] == d.in;
    }
    Value* source = node.inputs[0];
    if (!whole) source = b.op(Op::kSlice, {source}, SliceAttrs{starts, ends, axes, Ints(rank, 1)});
    Value* weights = graph.add_constant(graph.unique_name(node.inputs[1]->name + "_piece"),
                                        slice_taps(w, first, taps));
    std::vector<Value*> inputs = {source, weights};
    if (node.input(2)) inputs.push_back(node.inputs[2]);
    ConvAttrs piece;
    piece.dilations = dilations;
    piece.group = a.group;
    piece.kernel_shape = taps;
    piece.pads = Ints(2 * rank, 0);
    piece.strides = strides;
    return b.op(Op::kConv, inputs, piece);
  };
  Value* joined = build(0);
  if (!b.status().ok()) return; // (not reached: the pieces' shapes hold by construction)
  node.op_type = Op::kIdentity; // y = the pieces joined
  node.def = find_op(Op::kIdentity, node.opset);
  node.attrs = NoAttrs{};
  node.inputs = {joined};
}

} // namespace weft
