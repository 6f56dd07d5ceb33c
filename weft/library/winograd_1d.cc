// 1-D convolutions of stride 1 (any dilation) as Weft's own Winograd kernel (dnnl_epilogue.h:
// winograd_conv1d_call), F(4, 3) over the taps in chunks of 3 (winograd_parts.h: the phases).
//
// y[t] = sum over chunks j of sum over k < 3 of w[3j + k] x[t + 3j + k]: each chunk is a 3-tap
// filter over the input shifted by 3j, and F(4, 3) computes 4 outputs of it from the 6 inputs
// under them with 6 products instead of 12. The chunks' products of a point sum in the same
// matrix product: a tile's row of V holds every chunk's transformed patch, K = chunks x C
// channels, against U's [chunks x C, M] (taps past the last padded with zeros). 15 taps: 5
// chunks, 30 products a tile of 4 outputs against the direct convolution's 60 (2x fewer);
// 3 taps 2x, 5 taps 1.67x, 7 taps 1.56x. Each chunk is the 2-D kernel's F(4, 3) along one side
// (points 0, 1, -1, 2, -2 and infinity); against float64 its largest error is 1e-6 to 5e-6 of
// the largest output, oneDNN's direct kernel's 2e-7 to 1.2e-6 (tests/python/test_winograd_1d.py).
// With dilation d, every x[t + i] above is x[t + i d].
// Activations lie channels-last ([N, L, C]): a point's channels contiguous.
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <immintrin.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/library/winograd_parts.h"

namespace weft::library {

namespace {

using namespace winograd;

constexpr int64_t kTile = 4, kPoints = 6, kChunkTaps = 3;

// With dilation d, a tile's 4 outputs lie d apart (the outputs of a row in d interleaved
// phases, each tiled alone), and so do the points of its patches.
struct Geometry1d {
  int64_t batch = 0, in_ch = 0, out_ch = 0, in_len = 0, out_len = 0, pad_left = 0, taps = 0;
  int64_t dilation = 1;
  int64_t chunks() const { return ceil_div(taps, kChunkTaps); }
  // Tiles of a phase, and of a row (of one batch entry).
  int64_t phase_tiles() const { return ceil_div(ceil_div(out_len, dilation), kTile); }
  int64_t row_tiles() const { return dilation * phase_tiles(); }
  int64_t tiles() const { return batch * row_tiles(); }
  // Tile "tile"'s batch entry and first output.
  std::pair<int64_t, int64_t> tile_start(int64_t tile) const {
    int64_t in_row = tile % row_tiles(), phase = in_row / phase_tiles();
    return {tile / row_tiles(), phase + in_row % phase_tiles() * kTile * dilation};
  }
};

// V[., tile, K]: the transforms of the patches under a tile ("left" its first input point,
// the points "g.dilation" apart, outside the input zeros), chunk by chunk, for the 8 or 16
// channels (Vec) from group "group" of 8 on; chunk j's lie "chunk_stride" floats after j - 1's.
template <class Vec>
[[gnu::always_inline]] inline void
transform_input_in(const float* x, const Strides& s, const Geometry1d& g, int64_t n, int64_t left,
                   int64_t group, float* v, int64_t point_stride, int64_t chunk_stride) {
  const float* base = x + s.at(n, group, 0, 0);
  for (int64_t j = 0; j < g.chunks(); ++j, v += chunk_stride) {
    Vec d[kPoints];
#pragma GCC unroll 6
    for (int64_t q = 0; q < kPoints; ++q) {
      int64_t at = left + (j * kChunkTaps + q) * g.dilation;
      d[q] = Vec{};
      if (at >= 0 && at < g.in_len) std::memcpy(&d[q], base + at * s.point, sizeof(Vec));
    }
    input_1d<kTile, 1>(d, 1);
#pragma GCC unroll 6
    for (int64_t p = 0; p < kPoints; ++p)
      std::memcpy(v + p * point_stride, &d[p], sizeof(Vec));
  }
}

[[gnu::target("avx2,fma")]] void transform_input(const float* x, const Strides& s,
                                                 const Geometry1d& g, int64_t n, int64_t left,
                                                 int64_t group, float* v, int64_t point_stride,
                                                 int64_t chunk_stride) {
  transform_input_in<__m256>(x, s, g, n, left, group, v, point_stride, chunk_stride);
}
[[gnu::target("avx512f")]] void transform_input_wide(const float* x, const Strides& s,
                                                     const Geometry1d& g, int64_t n, int64_t left,
                                                     int64_t group, float* v, int64_t point_stride,
                                                     int64_t chunk_stride) {
  transform_input_in<__m512>(x, s, g, n, left, group, v, point_stride, chunk_stride);
}

// The output transform of P[., tile, channels] with the bias and the epilogue, written at the
// tile's valid points ("first" its first output point, the others "g.dilation" apart), for the 8 or
// 16 channels (Vec) from output group "group" of 8 on.
template <class Vec>
[[gnu::always_inline]] inline void
transform_output_in(const float* p, int64_t point_stride, const float* bias,
                    const std::vector<Step>& steps, void* const* buffers, float* y,
                    const Strides& ys, const Geometry1d& g, int64_t n, int64_t first,
                    int64_t group) {
  Vec m[kPoints], o[kTile];
#pragma GCC unroll 6
  for (int64_t q = 0; q < kPoints; ++q)
    std::memcpy(&m[q], p + q * point_stride, sizeof(Vec));
  output_1d<kTile, 1>(m, 1, o, 1);
  Vec b{};
  if (bias) std::memcpy(&b, bias + group * kGroup, sizeof(Vec));
  for (int64_t i = 0, at = first; i < kTile && at < g.out_len; ++i, at += g.dilation) {
    epilogue(o[i], b, steps, buffers, n, group, 0, at);
    std::memcpy(y + ys.at(n, group, 0, at), &o[i], sizeof(Vec));
  }
}

[[gnu::target("avx2,fma")]] void transform_output(const float* p, int64_t point_stride,
                                                  const float* bias, const std::vector<Step>& steps,
                                                  void* const* buffers, float* y, const Strides& ys,
                                                  const Geometry1d& g, int64_t n, int64_t first,
                                                  int64_t group) {
  transform_output_in<__m256>(p, point_stride, bias, steps, buffers, y, ys, g, n, first, group);
}
[[gnu::target("avx512f")]] void transform_output_wide(const float* p, int64_t point_stride,
                                                      const float* bias,
                                                      const std::vector<Step>& steps,
                                                      void* const* buffers, float* y,
                                                      const Strides& ys, const Geometry1d& g,
                                                      int64_t n, int64_t first, int64_t group) {
  transform_output_in<__m512>(p, point_stride, bias, steps, buffers, y, ys, g, n, first, group);
}

// U = G g per chunk of 3 taps, for every input and output channel, in fp64 and rounded once,
// laid out [points][strips][chunks x C][16] (output channels past M zero).
Transformed transform_weights(const float* w, const Geometry1d& g) {
  const int64_t strips = ceil_div(g.out_ch, kStrip), k = g.chunks() * g.in_ch;
  Transformed u(static_cast<size_t>(kPoints * strips * k * kStrip), 0.0f);
  for (int64_t m = 0; m < g.out_ch; ++m) {
    for (int64_t c = 0; c < g.in_ch; ++c) {
      const float* taps = w + (m * g.in_ch + c) * g.taps;
      for (int64_t j = 0; j < g.chunks(); ++j) {
        double chunk[kChunkTaps] = {}, r[kPoints];
        for (int64_t t = 0; t < kChunkTaps && j * kChunkTaps + t < g.taps; ++t)
          chunk[t] = taps[j * kChunkTaps + t];
        weights_1d(chunk, 1, r, 1, kTile, 1);
        for (int64_t q = 0; q < kPoints; ++q)
          u[static_cast<size_t>(((q * strips + m / kStrip) * k + j * g.in_ch + c) * kStrip +
                                m % kStrip)] = static_cast<float>(r[q]);
      }
    }
  }
  return u;
}

class Winograd1dKernel final : public PhasedKernel {
public:
  Winograd1dKernel(Geometry1d g, int x, Strides xs, int y, Strides ys, int bias,
                   std::vector<Step> steps, std::shared_ptr<const Transformed> u)
      : PhasedKernel(x, y, bias, std::move(steps), std::move(u)), g_(g), xs_(xs), ys_(ys) {}

  std::string describe() const override {
    return fmt::format(
        "Weft Winograd F(4, 3) over {} taps in {} chunk{}{} ({} tiles, channels-last)", g_.taps,
        g_.chunks(), g_.chunks() == 1 ? "" : "s",
        g_.dilation > 1 ? fmt::format(", dilation {}", g_.dilation) : "", g_.tiles());
  }

private:
  int64_t tiles() const override { return g_.tiles(); }
  int64_t points() const override { return kPoints; }
  int64_t k_channels() const override { return g_.chunks() * g_.in_ch; }
  int64_t v_channels() const override { return k_channels(); } // C in whole groups of V
  int64_t out_channels() const override { return g_.out_ch; }
  // A unit of the input transform: a group of V's channels, through every chunk.
  int64_t input_units() const override { return g_.in_ch / v_group(); }
  // Of the output transform: 16 channels with AVX-512 (the last unit may hold 8), else 8.
  int64_t output_units() const override { return ceil_div(g_.out_ch, v_group()); }

  void input(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
             float* v) const override {
    auto [n, start] = g_.tile_start(first + t);
    int64_t left = start - g_.pad_left;
    const int64_t vg = v_group(), c = unit * vg;
    float* to = v + (c / vg * capacity + t) * vg;
    const int64_t ps = capacity * v_channels(), chunk_stride = g_.in_ch * capacity;
    (vg == kWideGroup ? transform_input_wide : transform_input)(a.x, xs_, g_, n, left, c / kGroup,
                                                                to, ps, chunk_stride);
  }

  void output(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
              const float* p) const override {
    auto [n, at] = g_.tile_start(first + t);
    const int64_t ldp = padded_out();
    const int64_t c = unit * v_group();
    bool wide = v_group() == kWideGroup && c + kWideGroup <= g_.out_ch;
    (wide ? transform_output_wide : transform_output)(p + t * ldp + c, capacity * ldp, a.bias,
                                                      steps(), a.buffers, a.y, ys_, g_, n, at,
                                                      c / kGroup);
  }

  Geometry1d g_;
  Strides xs_, ys_;
};

// A value [N, C, L] (channels-first dims) lying channels-last.
Strides strides_of(const Dims& d) { return {d[1] * d[2], kGroup, 0, d[1]}; }

} // namespace

std::optional<LibraryCall> winograd_conv1d_call(const Node& n, const Absorbed& absorbed) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2);
  const Value* y = final_output(n, absorbed.epilogue);
  if (!avx2 || n.op_type != Op::kConvChannelsLast || at.group != 1 || !w->is_constant() ||
      w->type.dtype != DType::kF32 || (b && dims_of(b).size() != 1) || dims_of(x).size() != 3)
    return std::nullopt;
  Dims dx = channels_first(dims_of(x)), dy = channels_first(dims_of(y)), dw = dims_of(w);
  Ints kernel = at.kernel_shape.empty() ? Ints{dw[2]} : at.kernel_shape;
  std::vector<Window> win = window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad,
                                        shape_from_dims(dx), shape_from_dims(dy));
  if (win[0].stride != 1 || win[0].kernel < 2) return std::nullopt;
  Geometry1d g{dx[0], dx[1], dy[1], dx[2], dy[2], win[0].pad_begin, win[0].kernel, win[0].dilation};
  const int64_t u_bytes = kPoints * g.chunks() * g.in_ch * ceil_div(g.out_ch, kStrip) * kStrip * 4;
  if (g.in_ch % v_group() != 0 || g.out_ch % kGroup != 0 || g.tiles() == 0 ||
      u_bytes > kMaxTransformedBytes)
    return std::nullopt;
  auto lies = [&](const Value* v, Strides* s) {
    *s = strides_of(channels_first(dims_of(v)));
    return true;
  };
  LibraryCall call;
  // Values in the order of oneDNN's call (source, weights, residual, bias, output).
  int xb = position(call.values, x);
  position(call.values, w); // bound though transformed, for the profile
  std::optional<std::vector<Step>> steps = epilogue_steps(absorbed, dy, true, lies, call);
  if (!steps) return std::nullopt;
  int bb = b ? position(call.values, b) : -1;
  auto u = w->constant->derived_as<Transformed>(
      fmt::format("Winograd F(4, 3) over {} taps, {} channels", g.taps, g.in_ch), [&] {
        return std::make_shared<Transformed>(
            transform_weights(reinterpret_cast<const float*>(w->constant->data()), g));
      });
  int yb = position(call.values, y);
  Strides xs = strides_of(dx), ys = strides_of(dy);
  output_in_place(call, *steps, ys, xb, yb);
  call.kernel =
      std::make_shared<Winograd1dKernel>(g, xb, xs, yb, ys, bb, std::move(*steps), std::move(u));
  return call;
}

} // namespace weft::library
