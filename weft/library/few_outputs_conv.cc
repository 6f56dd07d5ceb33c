// 2-D convolutions of few output channels on channels-last activations, as Weft's own kernel
// (dnnl_epilogue.h: few_outputs_conv_call).
//
// oneDNN's direct kernels put output channels along the vector: with 3 of them (an
// image-to-image model's last convolution, 64 -> 3 channels, 7x7) a 16-float register holds 3
// useful lanes, and its call reached 80 GFLOP/s where the machine's peak is 400 (AMD EPYC,
// AVX-512, 2 threads). Channels-last, an output pixel's window along one row of taps is one
// contiguous run of taps x C inputs (no dilation along the row), and its weights, laid out
// [M][kh][kw][C], another: each output is a sum of dot products of such runs, one per row of
// taps. This kernel runs them along the vector, for a block of pixels of a row and up to 4
// output channels at a time, each channel's run of weights loaded once for all of the block's
// pixels, and sums the lanes once per output.
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"

namespace weft::library {

namespace {

// Output channels a block holds (the products of a step share each run of weights).
constexpr int kChannels = 4;

struct Geometry {
  int64_t batch = 0, in_h = 0, in_w = 0, in_ch = 0, out_h = 0, out_w = 0, out_ch = 0;
  int64_t kh = 0, kw = 0, stride_h = 1, stride_w = 1, dilation_h = 1, pad_top = 0, pad_left = 0;
  int64_t run() const { return kw * in_ch; } // floats of a row of taps
};

// The pointers of one output row's work: its valid rows of taps (first "rows" of them, the
// input's "row_step" floats apart, their weights "w_row_step" apart).
struct Row {
  const float* x = nullptr; // the first valid row of taps, at input column 0
  const float* w = nullptr; // its weights, at tap 0 of output channel 0
  int64_t rows = 0, row_step = 0, w_row_step = 0;
};

// out[p][c] = the sums over the rows of taps of runs "len" floats long: pixel p's input from
// x + p * pixel_step, channel c's weights from w + c * channel_step; on registers V of 8 or 16
// floats (GCC's vector operators, fused multiply-adds under -ffp-contract=fast: CMakeLists).
template <class V, int P, int C>
[[gnu::always_inline]] inline void block(const Row& r, const float* x, int64_t pixel_step,
                                         const float* w, int64_t channel_step, int64_t len,
                                         float* out) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  V acc[P][C] = {};
  float tail[P][C] = {};
  for (int64_t row = 0; row < r.rows; ++row) {
    const float* xr = x + row * r.row_step;
    const float* wr = w + row * r.w_row_step;
    int64_t i = 0;
    for (; i + kLanes <= len; i += kLanes) {
      V xv[P], wv[C];
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p)
        std::memcpy(&xv[p], xr + p * pixel_step + i, sizeof(V));
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c)
        std::memcpy(&wv[c], wr + c * channel_step + i, sizeof(V));
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c)
          acc[p][c] += xv[p] * wv[c];
      }
    }
    for (; i < len; ++i) {
      for (int p = 0; p < P; ++p) {
        for (int c = 0; c < C; ++c)
          tail[p][c] += xr[p * pixel_step + i] * wr[c * channel_step + i];
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int c = 0; c < C; ++c) {
      float s = tail[p][c];
      for (int64_t l = 0; l < kLanes; ++l)
        s += acc[p][c][l];
      out[p * C + c] = s;
    }
  }
}

// Pixels a block holds, with C output channels on "registers": its P x C accumulators and the
// C runs of weights of a step (the pixels' inputs are the multiply-adds' memory operands), at
// most 16. AVX-512's 32 registers: 9 pixels of 3 channels (7x7 taps, 64 -> 3 channels, 256x256:
// 5.6 ms with 4, 4.4 with 8, 4.2 with 9; AMD EPYC, 2 threads).
constexpr int block_pixels(int registers, int c) { return std::min(16, registers / c - 1); }

// Output channels [first, first + C) of output row "oy" of batch entry "n", with the bias: the
// pixels whose window lies inside the input's row in blocks of P, the others (their window
// crossing the padding) one at a time with the taps inside.
template <class V, int C>
[[gnu::always_inline]] inline void channels(const Geometry& g, const Row& r, const float* bias,
                                            float* yr, int64_t first) {
  constexpr int P = block_pixels(sizeof(V) == 64 ? 32 : 16, C);
  const int64_t pixel_step = g.stride_w * g.in_ch, channel_step = g.kh * g.run();
  const float* w = r.w + first * channel_step;
  auto inside = [&](int64_t ox) {
    int64_t left = ox * g.stride_w - g.pad_left;
    return left >= 0 && left + g.kw <= g.in_w;
  };
  auto write = [&](const float* out, int64_t ox, int pixels) {
    for (int p = 0; p < pixels; ++p) {
      for (int c = 0; c < C; ++c)
        yr[(ox + p) * g.out_ch + first + c] = out[p * C + c] + (bias ? bias[first + c] : 0.0f);
    }
  };
  float out[P * C];
  for (int64_t ox = 0; ox < g.out_w;) {
    int64_t left = ox * g.stride_w - g.pad_left;
    if (ox + P <= g.out_w && inside(ox) && inside(ox + P - 1)) {
      block<V, P, C>(r, r.x + left * g.in_ch, pixel_step, w, channel_step, g.run(), out);
      write(out, ox, P);
      ox += P;
      continue;
    }
    int64_t kx0 = std::max<int64_t>(0, -left), kx1 = std::min(g.kw, g.in_w - left);
    int64_t len = std::max<int64_t>(0, kx1 - kx0) * g.in_ch;
    block<V, 1, C>(r, r.x + (left + kx0) * g.in_ch, pixel_step, w + kx0 * g.in_ch, channel_step,
                   len, out);
    write(out, ox, 1);
    ++ox;
  }
}

// Output row "oy" of batch entry "n", kChannels output channels at a time.
template <class V>
[[gnu::always_inline]] inline void output_row(const Geometry& g, const float* x, const float* w,
                                              const float* bias, float* y, int64_t n, int64_t oy) {
  Row r;
  int64_t top = oy * g.stride_h - g.pad_top, first = 0, last = g.kh; // rows of taps [first, last)
  while (first < g.kh && top + first * g.dilation_h < 0)
    ++first;
  while (last > first && top + (last - 1) * g.dilation_h >= g.in_h)
    --last;
  r.rows = last - first;
  r.row_step = g.dilation_h * g.in_w * g.in_ch;
  r.w_row_step = g.run();
  r.x = r.rows ? x + ((n * g.in_h + top + first * g.dilation_h) * g.in_w) * g.in_ch : x;
  r.w = w + first * g.run();
  float* yr = y + (n * g.out_h + oy) * g.out_w * g.out_ch;
  for (int64_t c = 0; c < g.out_ch; c += kChannels) {
    int64_t left = g.out_ch - c;
    if (left >= 4) channels<V, 4>(g, r, bias, yr, c);
    if (left == 3) channels<V, 3>(g, r, bias, yr, c);
    if (left == 2) channels<V, 2>(g, r, bias, yr, c);
    if (left == 1) channels<V, 1>(g, r, bias, yr, c);
  }
}

using Register8 = float __attribute__((vector_size(32)));
using Register16 = float __attribute__((vector_size(64)));

[[gnu::target("avx512f")]] void rows_wide(const Geometry& g, const float* x, const float* w,
                                          const float* bias, float* y) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      output_row<Register16>(g, x, w, bias, y, n, oy);
  }
}

[[gnu::target("avx2,fma")]] void rows(const Geometry& g, const float* x, const float* w,
                                      const float* bias, float* y) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      output_row<Register8>(g, x, w, bias, y, n, oy);
  }
}

// Weights [M][C][kh][kw] laid out [M][kh][kw][C].
std::vector<float> taps_last(const float* w, const Geometry& g) {
  std::vector<float> t(static_cast<size_t>(g.out_ch * g.kh * g.run()));
  for (int64_t m = 0; m < g.out_ch; ++m) {
    for (int64_t c = 0; c < g.in_ch; ++c) {
      for (int64_t i = 0; i < g.kh; ++i) {
        for (int64_t j = 0; j < g.kw; ++j)
          t[static_cast<size_t>(((m * g.kh + i) * g.kw + j) * g.in_ch + c)] =
              w[((m * g.in_ch + c) * g.kh + i) * g.kw + j];
      }
    }
  }
  return t;
}

class FewOutputsConvKernel final : public runtime::LibraryKernel {
public:
  FewOutputsConvKernel(Geometry g, std::shared_ptr<const std::vector<float>> w, int x, int bias,
                       int y, bool wide)
      : g_(g), w_(std::move(w)), x_(x), bias_(bias), y_(y), wide_(wide) {}

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    const float* x = static_cast<const float*>(buffers[x_]);
    const float* bias = bias_ >= 0 ? static_cast<const float*>(buffers[bias_]) : nullptr;
    float* y = static_cast<float*>(buffers[y_]);
    (wide_ ? rows_wide : rows)(g_, x, w_->data(), bias, y);
    return Status();
  }

  std::string describe() const override {
    return fmt::format("Weft convolution of few outputs ({} channels, {}x{} taps, channels-last)",
                       g_.out_ch, g_.kh, g_.kw);
  }

private:
  Geometry g_;
  std::shared_ptr<const std::vector<float>> w_;
  int x_, bias_, y_;
  bool wide_;
};

// The geometry of "n", if the kernel runs it: a 2-D weft.ConvChannelsLast of one group with
// constant f32 weights, a 1-D bias or none, static shapes and no dilation along the row.
std::optional<Geometry> few_outputs_geometry(const Node& n) {
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2), *y = n.outputs[0];
  if (n.op_type != Op::kConvChannelsLast || at.group != 1 || !w->is_constant() ||
      w->type.dtype != DType::kF32 || x->type.dtype != DType::kF32 || !x->type.has_static_shape() ||
      !y->type.has_static_shape() ||
      (b && (!b->type.has_static_shape() || dims_of(b).size() != 1)) || dims_of(x).size() != 4)
    return std::nullopt;
  Dims dx = channels_first(dims_of(x)), dy = channels_first(dims_of(y)), dw = dims_of(w);
  Ints kernel = at.kernel_shape.empty() ? Ints{dw[2], dw[3]} : at.kernel_shape;
  std::vector<Window> win = window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad,
                                        shape_from_dims(dx), shape_from_dims(dy));
  if (win.size() != 2 || win[1].dilation != 1 || dw.size() != 4 || dw[1] != dx[1])
    return std::nullopt;
  Geometry g{dx[0],
             dx[2],
             dx[3],
             dx[1],
             dy[2],
             dy[3],
             dy[1],
             win[0].kernel,
             win[1].kernel,
             win[0].stride,
             win[1].stride,
             win[0].dilation,
             win[0].pad_begin,
             win[1].pad_begin};
  if (g.batch * g.out_h * g.out_w * g.out_ch == 0 || g.in_ch == 0) return std::nullopt;
  return g;
}

bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
}

bool has_avx512() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512;
}

} // namespace

bool few_outputs_shaped(const Node& n) {
  std::optional<Geometry> g = few_outputs_geometry(n);
  return g && has_avx2() && g->out_ch <= kFewOutputsMost;
}

// oneDNN's kernels fill M of a register's 16 (8) lanes; this kernel all of them, along runs of
// 64 floats or more (16 channels x 3 taps: no faster than oneDNN's). Against oneDNN's brgconv
// on a 256x256 plane (AMD EPYC, AVX-512, 2 threads, 2026-12-02; GFLOP/s): 64 -> 1 channels 3x3
// 150-160 against 28, 32 -> 1 5x5 213 against 29, 64 -> 3 3x3 222-226 against 81-83, 7x7 280-290
// against 90, 32 -> 3 9x9 283-288 against 87-88, 64 -> 4 3x3 193-205 against 107-112, 64 -> 6
// 219-227 against 170-172, 64 -> 8 215-220 against 225-229; [1, 128, 128, 128] -> 2 channels
// 180 against 46-52.
bool few_outputs_by_default(const Node& n) {
  std::optional<Geometry> g = few_outputs_geometry(n);
  return g && g->out_ch <= (has_avx512() ? 6 : 3) && g->run() >= 64;
}

std::string few_outputs_key(const Node& n) {
  std::optional<Geometry> g = few_outputs_geometry(n);
  if (!g) return "";
  return fmt::format("few outputs: x [{},{},{},{}] w [{},{},{},{}] strides [{},{}] dilation {} "
                     "pads [{},{}] out [{},{}]",
                     g->batch, g->in_ch, g->in_h, g->in_w, g->out_ch, g->in_ch, g->kh, g->kw,
                     g->stride_h, g->stride_w, g->dilation_h, g->pad_top, g->pad_left, g->out_h,
                     g->out_w);
}

std::optional<LibraryCall> few_outputs_conv_call(const Node& n, const Absorbed& absorbed) {
  std::optional<Geometry> g = few_outputs_geometry(n);
  if (!g || !has_avx2() || g->out_ch > kFewOutputsMost || !absorbed.epilogue.empty() ||
      absorbed.input_casts[0] || absorbed.result_cast || absorbed.input_concat)
    return std::nullopt;
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2), *y = n.outputs[0];
  LibraryCall call;
  int xb = position(call.values, x);
  position(call.values, w); // bound though laid out again, for the profile
  int bb = b ? position(call.values, b) : -1;
  int yb = position(call.values, y);
  auto packed = w->constant->derived_as<std::vector<float>>("taps last", [&] {
    return std::make_shared<std::vector<float>>(
        taps_last(reinterpret_cast<const float*>(w->constant->data()), *g));
  });
  call.kernel =
      std::make_shared<FewOutputsConvKernel>(*g, std::move(packed), xb, bb, yb, has_avx512());
  return call;
}

} // namespace weft::library
