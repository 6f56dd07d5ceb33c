// 3x3 convolutions as Weft's own Winograd kernels, F(4x4, 3x3) and F(2x2, 3x3)
// (dnnl_epilogue.h: winograd_conv_call), for CPUs where oneDNN has none (its f32 Winograd
// kernels need AVX-512), and with AVX-512 for planes of many tiles, where oneDNN's are slower
// (conv_choice.cc).
//
// Lavin and Gray's minimal filtering: an m x m block of outputs ("tile") of one output
// channel is A^T [sum over input channels of (G g G^T) . (B^T d B)] A, for the
// (m + 2) x (m + 2) input patch "d" under the tile and the 3x3 weights "g"; the element-wise
// products become, for each of the (m + 2)^2 points of the transforms, one matrix product
// [tiles, C] x [C, M]. With m = 4: 36 products of 2 * tiles * C * M FLOPs against the direct
// convolution's 9 * 16 per tile (4x fewer); with m = 2, 16 against 9 * 4 (2.25x fewer).
// A convolution of stride 2 splits into four of stride 1 over the even and odd rows and
// columns of its input (polyphase): along a side, y[t] = (g0 x[2t] + g2 x[2t + 2]) + g1 x[2t + 1],
// a 2-tap filter over the even points, F(4, 2) with 5 points, and a 1-tap one over the odd,
// 4 points with no transform. A tile of 4x4 outputs then reads a 9x9 patch and has 9 x 9 = 81
// points, 81 products against the direct convolution's 9 * 16 (1.8x fewer); the odd points'
// weights are g1 alike, so U holds 6 x 6 distinct points, as many as for stride 1.
// Three phases:
// 1. the input transform, per tile and group of 8 channels (one AVX register per point; 16
//    an AVX-512 register where it has that and the source lies channels-last), into
//    V [points][C / 8][tiles][8] ([C / 16][tiles][16] with AVX-512: a product's block then
//    reads its rows' channels at fixed offsets from one pointer);
// 2. the products, per point and strip of 16 output channels, against the weights'
//    transform U [points][strips][C][16] (made once per constant), into P [points][tiles][M']
//    (with AVX-512: a strip a register);
// 3. the output transform per tile and group of 8 output channels (16 with AVX-512 where
//    the output lies channels-last), with the bias and the epilogue (ReLU, a residual),
//    written where the valid points of the tile lie.
// With few tiles each phase runs over all of them, split across the threads; with many, each
// thread takes chunks of tiles through all three phases, their V and P in its L2.
// Activations lie channels-last or in oneDNN's blocked nChw8c: either way each point's 8
// channels of a group are contiguous, which is all the transforms need.
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <immintrin.h>
#include <omp.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/winograd_parts.h"

namespace weft::library {

namespace {

using namespace winograd;

// F(m x m, 3x3): a tile is m x m outputs (m = 4, or 2 on small planes), its patch
// (m + 2) x (m + 2) inputs, and the transforms have as many points; at stride 2 (m = 4), a
// patch of 2m + 1 a side, as many points, of which 6 a side distinct in U.
constexpr int64_t patch(int64_t m, int64_t stride) { return stride == 2 ? 2 * m + 1 : m + 2; }
constexpr int64_t u_side(int64_t m, int64_t stride) { return stride == 2 ? 6 : m + 2; }
// Fewer tiles of 4x4 than this run as tiles of 2x2 (winograd_conv_call).
constexpr int64_t kFewTiles = 8;
// At stride 2 fewer tiles than this stay oneDNN's direct call: its U (4x the weights) then
// streams from memory for too few products.
constexpr int64_t kFewStridedTiles = 32;

struct Geometry {
  int64_t batch = 0, in_ch = 0, out_ch = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t pad_top = 0, pad_left = 0;
  int64_t m = 4;      // outputs a side of a tile
  int64_t stride = 1; // 1, or 2 (with m = 4)
  int64_t side() const { return patch(m, stride); }
  int64_t points() const { return side() * side(); }
  int64_t u_points() const { return u_side(m, stride) * u_side(m, stride); }
  // The point of U that point "q" of a tile multiplies.
  int64_t u_point(int64_t q) const {
    if (stride == 1) return q;
    return std::min<int64_t>(q / side(), 5) * 6 + std::min<int64_t>(q % side(), 5);
  }
  int64_t tiles_h() const { return (out_h + m - 1) / m; }
  int64_t tiles_w() const { return (out_w + m - 1) / m; }
  int64_t tiles() const { return batch * tiles_h() * tiles_w(); }
  int64_t padded_out() const { return (out_ch + kStrip - 1) / kStrip * kStrip; }
};

// V[., tile, channels]: the transform of the patch under a tile ("top", "left" its first
// input point, outside the input zeros) for the 8 or 16 channels (Vec) from group "group" of
// 8 on, which lie contiguous.
template <int M, int S, class Vec>
[[gnu::always_inline]] inline void
transform_input_in(const float* x, const Strides& s, const Geometry& g, int64_t n, int64_t top,
                   int64_t left, int64_t group, float* v, int64_t point_stride) {
  constexpr int64_t kPatch = patch(M, S), kPoints = kPatch * kPatch;
  Vec d[kPoints];
  const float* base = x + n * s.batch + group * s.group;
#pragma GCC unroll 9
  for (int64_t i = 0; i < kPatch; ++i) {
    int64_t h = top + i;
#pragma GCC unroll 9
    for (int64_t j = 0; j < kPatch; ++j) {
      int64_t w = left + j;
      bool inside = h >= 0 && h < g.in_h && w >= 0 && w < g.in_w;
      d[i * kPatch + j] = Vec{};
      if (inside) std::memcpy(&d[i * kPatch + j], base + h * s.row + w * s.point, sizeof(Vec));
    }
  }
#pragma GCC unroll 9
  for (int64_t j = 0; j < kPatch; ++j)
    input_1d<M, S>(d + j, kPatch);
#pragma GCC unroll 9
  for (int64_t i = 0; i < kPatch; ++i)
    input_1d<M, S>(d + i * kPatch, 1);
#pragma GCC unroll 81
  for (int64_t p = 0; p < kPoints; ++p)
    std::memcpy(v + p * point_stride, &d[p], sizeof(Vec));
}

// 8 channels on AVX2, 16 on AVX-512.
template <int M, int S>
[[gnu::target("avx2,fma")]] void
transform_input(const float* x, const Strides& s, const Geometry& g, int64_t n, int64_t top,
                int64_t left, int64_t group, float* v, int64_t point_stride) {
  transform_input_in<M, S, __m256>(x, s, g, n, top, left, group, v, point_stride);
}
template <int M, int S>
[[gnu::target("avx512f")]] void
transform_input_wide(const float* x, const Strides& s, const Geometry& g, int64_t n, int64_t top,
                     int64_t left, int64_t group, float* v, int64_t point_stride) {
  transform_input_in<M, S, __m512>(x, s, g, n, top, left, group, v, point_stride);
}

// The output transform of P[., tile, channels] plus bias and epilogue, written at the tile's
// valid points ("top", "left" its first output point), for the 8 or 16 channels (Vec) from
// group "group" of 8 on, which lie contiguous in the output and the residual.
template <int M, int S, class Vec>
[[gnu::always_inline]] inline void
transform_output_in(const float* p, int64_t point_stride, const float* bias,
                    const std::vector<Step>& steps, void* const* buffers, float* y,
                    const Strides& ys, const Geometry& g, int64_t n, int64_t top, int64_t left,
                    int64_t group) {
  constexpr int64_t kPatch = patch(M, S), kPoints = kPatch * kPatch;
  Vec m[kPoints], r[M * kPatch], o[M * M];
#pragma GCC unroll 81
  for (int64_t q = 0; q < kPoints; ++q)
    std::memcpy(&m[q], p + q * point_stride, sizeof(Vec));
#pragma GCC unroll 9
  for (int64_t j = 0; j < kPatch; ++j)
    output_1d<M, S>(m + j, kPatch, r + j, kPatch);
#pragma GCC unroll 4
  for (int64_t i = 0; i < M; ++i)
    output_1d<M, S>(r + i * kPatch, 1, o + i * M, 1);
  Vec b{};
  if (bias) std::memcpy(&b, bias + group * kGroup, sizeof(Vec));
  for (int64_t i = 0; i < M && top + i < g.out_h; ++i) {
    for (int64_t j = 0; j < M && left + j < g.out_w; ++j) {
      int64_t h = top + i, w = left + j;
      Vec v = o[i * M + j];
      epilogue(v, b, steps, buffers, n, group, h, w);
      std::memcpy(y + ys.at(n, group, h, w), &v, sizeof(Vec));
    }
  }
}

// 8 channels on AVX2, 16 on AVX-512.
template <int M, int S>
[[gnu::target("avx2,fma")]] void
transform_output(const float* p, int64_t point_stride, const float* bias,
                 const std::vector<Step>& steps, void* const* buffers, float* y, const Strides& ys,
                 const Geometry& g, int64_t n, int64_t top, int64_t left, int64_t group) {
  transform_output_in<M, S, __m256>(p, point_stride, bias, steps, buffers, y, ys, g, n, top, left,
                                    group);
}
template <int M, int S>
[[gnu::target("avx512f")]] void
transform_output_wide(const float* p, int64_t point_stride, const float* bias,
                      const std::vector<Step>& steps, void* const* buffers, float* y,
                      const Strides& ys, const Geometry& g, int64_t n, int64_t top, int64_t left,
                      int64_t group) {
  transform_output_in<M, S, __m512>(p, point_stride, bias, steps, buffers, y, ys, g, n, top, left,
                                    group);
}

// U = G g G^T for every input and output channel, in fp64 and rounded once, laid out
// [points][strips][C][16] (output channels past M zero), for tiles of "tile" a side at
// "stride" (at 2: F(4, 2)'s G over g0 and g2, then g1 for the odd points).
Transformed transform_weights(const float* w, int64_t out_ch, int64_t in_ch, int64_t tile,
                              int64_t stride) {
  const int64_t strips = (out_ch + kStrip - 1) / kStrip, side = u_side(tile, stride);
  Transformed u(static_cast<size_t>(side * side * strips * in_ch * kStrip), 0.0f);
  for (int64_t m = 0; m < out_ch; ++m) {
    for (int64_t c = 0; c < in_ch; ++c) {
      double g[9], t[6 * 3], r[6 * 6];
      for (int k = 0; k < 9; ++k)
        g[k] = w[(m * in_ch + c) * 9 + k];
      for (int j = 0; j < 3; ++j) // columns: t [side][3]
        weights_1d(g + j, 3, t + j, 3, tile, stride);
      for (int64_t i = 0; i < side; ++i) // rows: r [side][side]
        weights_1d(t + i * 3, 1, r + i * side, 1, tile, stride);
      for (int64_t q = 0; q < side * side; ++q)
        u[static_cast<size_t>(((q * strips + m / kStrip) * in_ch + c) * kStrip + m % kStrip)] =
            static_cast<float>(r[q]);
    }
  }
  return u;
}

// Where input channels [first, next part's first) lie: the call's value "buffer" (a part of a
// Concat along channels, or the whole source).
struct Source {
  int buffer = 0;
  int64_t first = 0;
  Strides strides;
};

class WinogradKernel final : public PhasedKernel {
public:
  WinogradKernel(Geometry g, std::vector<Source> sources, int y, Strides ys, int bias,
                 std::vector<Step> steps, std::shared_ptr<const Transformed> u, std::string layouts)
      : PhasedKernel(sources[0].buffer, y, bias, std::move(steps), std::move(u)), g_(g),
        sources_(std::move(sources)), ys_(ys), layouts_(std::move(layouts)) {}

  std::string describe() const override {
    return fmt::format("Weft Winograd F({}x{}, 3x3){} ({} tiles, {})", g_.m, g_.m,
                       g_.stride == 2 ? ", stride 2 in 4 phases" : "", g_.tiles(), layouts_);
  }

private:
  int64_t tiles() const override { return g_.tiles(); }
  int64_t points() const override { return g_.points(); }
  int64_t u_point(int64_t q) const override { return g_.u_point(q); }
  int64_t k_channels() const override { return g_.in_ch; }
  // The channels of a tile's row of V: C in whole groups.
  int64_t v_channels() const override { return ceil_div(g_.in_ch, v_group()) * v_group(); }
  int64_t out_channels() const override { return g_.out_ch; }

  // The channels of a unit of the input transform: a group of V's 16 where the products
  // are AVX-512's and the source lies channels-last (16 channels contiguous), its parts each
  // from a multiple of 16 on, else 8.
  int64_t input_width() const {
    bool wide = wide_products();
    for (const Source& s : sources_)
      wide = wide && s.strides.group == kGroup && s.first % kWideGroup == 0;
    return wide ? kWideGroup : kGroup;
  }
  int64_t input_units() const override { return ceil_div(g_.in_ch, input_width()); }
  // And of the output transform: 16 where the products are AVX-512's and the output and the
  // residual lie channels-last.
  int64_t output_width() const {
    bool contiguous = ys_.group == kGroup;
    for (const Step& s : steps())
      contiguous = contiguous && (s.relu || s.strides.group == kGroup);
    return wide_products() && contiguous ? kWideGroup : kGroup;
  }
  int64_t output_units() const override { return ceil_div(g_.out_ch, output_width()); }

  // Tile "first + t" of a scratch of "capacity" tiles: its input transform for channels
  // [unit * input_width(), ...) (the last unit of 16 may hold 8).
  void input(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
             float* v) const override {
    int64_t tile = first + t, th = g_.tiles_h(), tw = g_.tiles_w();
    int64_t n = tile / (th * tw), i = tile / tw % th, j = tile % tw;
    int64_t top = i * g_.m * g_.stride - g_.pad_top, left = j * g_.m * g_.stride - g_.pad_left;
    const int64_t c = unit * input_width(), vg = v_group();
    float* to = v + (c / vg * capacity + t) * vg + c % vg;
    const int64_t ps = capacity * v_channels();
    bool wide = c + kWideGroup <= g_.in_ch && input_width() == kWideGroup;
    const Source* s = &sources_[0]; // the part holding channel c
    for (const Source& part : sources_)
      s = c >= part.first ? &part : s;
    const auto* x = static_cast<const float*>(a.buffers[s->buffer]);
    const Strides& xs = s->strides;
    const int64_t gi = (c - s->first) / kGroup;
    if (g_.stride == 2)
      (wide ? transform_input_wide<4, 2> : transform_input<4, 2>)(x, xs, g_, n, top, left, gi, to,
                                                                  ps);
    else if (g_.m == 2)
      (wide ? transform_input_wide<2, 1> : transform_input<2, 1>)(x, xs, g_, n, top, left, gi, to,
                                                                  ps);
    else
      (wide ? transform_input_wide<4, 1> : transform_input<4, 1>)(x, xs, g_, n, top, left, gi, to,
                                                                  ps);
  }
  // Tile "first + t"'s output transform for output group "go", with the epilogue.
  void output(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
              const float* p) const override {
    int64_t tile = first + t, th = g_.tiles_h(), tw = g_.tiles_w(), ldp = padded_out();
    int64_t n = tile / (th * tw), i = tile / tw % th, j = tile % tw;
    const int64_t c = unit * output_width(), go = c / kGroup;
    const float* from = p + t * ldp + c;
    bool wide = c + kWideGroup <= g_.out_ch && output_width() == kWideGroup;
    if (g_.stride == 2)
      (wide ? transform_output_wide<4, 2> : transform_output<4, 2>)(from, capacity * ldp, a.bias,
                                                                    steps(), a.buffers, a.y, ys_,
                                                                    g_, n, i * 4, j * 4, go);
    else if (g_.m == 2)
      (wide ? transform_output_wide<2, 1> : transform_output<2, 1>)(from, capacity * ldp, a.bias,
                                                                    steps(), a.buffers, a.y, ys_,
                                                                    g_, n, i * 2, j * 2, go);
    else
      (wide ? transform_output_wide<4, 1> : transform_output<4, 1>)(from, capacity * ldp, a.bias,
                                                                    steps(), a.buffers, a.y, ys_,
                                                                    g_, n, i * 4, j * 4, go);
  }

  Geometry g_;
  std::vector<Source> sources_;
  Strides ys_;
  std::string layouts_;
};

// A value of activation dims [N, C, H, W] as it lies: blocked (nChw8c) or channels-last.
Strides strides_of(const Dims& d, bool blocked) {
  int64_t c = d[1], h = d[2], w = d[3];
  if (blocked) return {c * h * w, h * w * kGroup, w * kGroup, kGroup};
  return {h * w * c, kGroup, w * c, c};
}

} // namespace

std::optional<LibraryCall> winograd_conv_call(const Node& n, const Absorbed& absorbed,
                                              const std::set<const Value*>& in_blocked) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2);
  const Value* y = final_output(n, absorbed.epilogue);
  bool nhwc = n.op_type == Op::kConvChannelsLast;
  if (!avx2 || (n.op_type != Op::kConv && !nhwc) || at.group != 1 || !w->is_constant() ||
      w->type.dtype != DType::kF32 || (b && dims_of(b).size() != 1) || dims_of(x).size() != 4)
    return std::nullopt;
  Dims dx = dims_of(x), dy = dims_of(y), dw = dims_of(w);
  if (nhwc) {
    dx = channels_first(dx);
    dy = channels_first(dy);
  }
  Ints kernel = at.kernel_shape.empty() ? Ints{dw[2], dw[3]} : at.kernel_shape;
  std::vector<Window> win = window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad,
                                        shape_from_dims(dx), shape_from_dims(dy));
  for (const Window& d : win) {
    if (d.kernel != 3 || (d.stride != 1 && d.stride != 2) || d.stride != win[0].stride ||
        d.dilation != 1)
      return std::nullopt;
  }
  Geometry g{dx[0], dx[1], dy[1], dx[2], dx[3], dy[2], dy[3], win[0].pad_begin, win[1].pad_begin};
  g.stride = win[0].stride;
  if (g.stride == 2 && g.tiles() < kFewStridedTiles) return std::nullopt;
  // Few tiles of 4x4 share each of U's 36 products: there tiles of 2x2 (16 products, U
  // 16/36 the size) run faster, as U streams from memory. ResNet's 512 channels at 7x7:
  // batch 1 (4 tiles) 1.10-1.27 against 1.46-1.68 ms; batch 2 (8 tiles) 2.1-3.7 against
  // 2.1-2.2, batch 4 5.8-6.5 against 2.8-3.3; at 14x14 (16 tiles, 256 channels) 0.83-0.95
  // against 0.64-0.73 (two profiled runs each, AMD EPYC, 2 threads, 2026-11-30/12-01).
  if (g.stride == 1 && g.tiles() < kFewTiles) g.m = 2;
  if (g.in_ch % kGroup != 0 || g.out_ch % kGroup != 0 || g.tiles() == 0 ||
      g.u_points() * g.in_ch * g.padded_out() * 4 > kMaxTransformedBytes)
    return std::nullopt;
  // Each value lies blocked or channels-last; plain (NCHW) ones do not fit.
  auto lies = [&](const Value* v, Strides* s) {
    bool blocked = in_blocked.contains(v);
    if (blocked ? channel_block() != kGroup : !nhwc) return false;
    *s = strides_of(nhwc ? channels_first(dims_of(v)) : dims_of(v), blocked);
    return true;
  };
  LibraryCall call;
  Strides ys;
  if (!lies(y, &ys)) return std::nullopt;
  // The source, or the parts of the Concat along channels that makes it, each lying
  // channels-last from a whole group of channels on. Values in the order of oneDNN's call for
  // the node (source, weights, residual, bias, output): a call over symbolic dims is built per
  // shape, and may take either kernel (with no Concat: dynamic_call.cc).
  std::vector<const Value*> parts = {x};
  if (absorbed.input_concat)
    parts.assign(absorbed.input_concat->inputs.begin(), absorbed.input_concat->inputs.end());
  std::vector<Source> sources;
  int64_t first = 0;
  for (const Value* part : parts) {
    Source s{position(call.values, part), first, {}};
    if (!lies(part, &s.strides) || first % kGroup != 0) return std::nullopt;
    first += nhwc ? dims_of(part).back() : dims_of(part)[1];
    sources.push_back(s);
  }
  if (first != g.in_ch) return std::nullopt;
  const int xb = sources[0].buffer;
  position(call.values, w); // bound though transformed, for the profile
  std::optional<std::vector<Step>> steps = epilogue_steps(absorbed, dy, nhwc, lies, call);
  if (!steps) return std::nullopt;
  std::string residual_where;
  for (const Step& s : *steps) {
    if (!s.relu) {
      residual_where = in_blocked.contains(call.values[static_cast<size_t>(s.buffer)])
                           ? ", residual nChw8c"
                           : ", residual channels-last";
    }
  }
  int bb = b ? position(call.values, b) : -1;
  auto u = w->constant->derived_as<Transformed>(
      fmt::format("Winograd F({}x{}, 3x3) stride {} transform", g.m, g.m, g.stride), [&] {
        return std::make_shared<Transformed>(transform_weights(
            reinterpret_cast<const float*>(w->constant->data()), g.out_ch, g.in_ch, g.m, g.stride));
      });
  int yb = position(call.values, y);
  // (Not over a part of the source, which other tiles read after.)
  if (!absorbed.input_concat) output_in_place(call, *steps, ys, xb, yb);
  auto where = [&](const Value* v) { return in_blocked.contains(v) ? "nChw8c" : "channels-last"; };
  std::string in = absorbed.input_concat ? fmt::format("a Concat of {} read in place", parts.size())
                                         : std::string(where(x));
  std::string layouts = fmt::format("{} in, {} out{}", in, where(y), residual_where);
  call.kernel = std::make_shared<WinogradKernel>(
      g, std::move(sources), yb, ys, bb, std::move(*steps), std::move(u), std::move(layouts));
  return call;
}

const Value* winograd_residual(const LibraryCall& call, bool* is_winograd) {
  auto kernel = std::dynamic_pointer_cast<const PhasedKernel>(call.kernel);
  *is_winograd = kernel != nullptr;
  int r = kernel ? kernel->residual() : -1;
  return r >= 0 ? call.values[static_cast<size_t>(r)] : nullptr;
}

} // namespace weft::library
