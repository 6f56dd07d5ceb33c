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
#include "weft/support/machine.h"

namespace weft::library {

namespace {

// F(m x m, 3x3): a tile is m x m outputs (m = 4, or 2 on small planes), its patch
// (m + 2) x (m + 2) inputs, and the transforms have as many points; at stride 2 (m = 4), a
// patch of 2m + 1 a side, as many points, of which 6 a side distinct in U.
constexpr int64_t patch(int64_t m, int64_t stride) { return stride == 2 ? 2 * m + 1 : m + 2; }
constexpr int64_t u_side(int64_t m, int64_t stride) { return stride == 2 ? 6 : m + 2; }
constexpr int64_t kGroup = 8;   // channels of an AVX register
constexpr int64_t kStrip = 16;  // output channels of a product's strip
constexpr int kRows = 6;        // tiles of the product's register block (12 accumulators)
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Fewer tiles of 4x4 than this run as tiles of 2x2 (winograd_conv_call).
constexpr int64_t kFewTiles = 8;
// At stride 2 fewer tiles than this stay oneDNN's direct call: its U (4x the weights) then
// streams from memory for too few products.
constexpr int64_t kFewStridedTiles = 32;
// The most memory a convolution's transformed weights may take (4x or 16/9x its weights'):
// larger ones stay oneDNN's direct call. VGG's and ResNet's largest take 38 MB.
constexpr int64_t kMaxTransformedBytes = int64_t{256} << 20;
// A thread's V and P for a chunk of tiles: 192 KB of the core's 512 KB L2. Against all
// tiles' V and P at once, the U-Net's 32 -> 32 channels at 256x256 took 5.6 against 8.5 ms
// and its 96 -> 32 9.9-13 against 22; 96 KB to 768 KB varied within the machine's noise
// (one profiled run each, AMD EPYC, AVX2, 2 threads, 2026-11-30).
// On a core of another L2 size, as large a share of it: the 2 MB of an Intel Xeon's
// (AVX-512) took 768 KB, the U-Net's 64 -> 64 channels at 128x128 5.3-5.4 ms against
// 6.2-8.2 with 192 KB (one profiled run each, 2 threads, 2026-12-01).
constexpr int64_t kChunkBytes = 192 << 10, kChunkL2 = 512 << 10;

int64_t chunk_bytes() {
  static const int64_t bytes = [] {
    int64_t l2 = l2_cache_bytes();
    return l2 > 0 ? std::clamp<int64_t>(kChunkBytes * l2 / kChunkL2, kChunkBytes, 4 * kChunkBytes)
                  : kChunkBytes;
  }();
  return bytes;
}

// Where an activation's points lie, in floats: 8 channels of a group contiguous at
// n * batch + g * group + h * row + w * point.
struct Strides {
  int64_t batch = 0, group = 0, row = 0, point = 0;
  bool operator==(const Strides&) const = default;
};

// One step of the epilogue, after the bias: max(v, alpha * v), or v + a full-size operand.
struct Step {
  bool relu = false;
  float alpha = 0;
  int buffer = -1;
  Strides strides;
};

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

// B^T d over a side's points "s" floats apart (a column or a row of the patch), in place,
// on registers "Vec" of 8 or 16 floats (GCC's vector operators; compiled for the ISA of the
// function it is inlined into). At stride 2: F(4, 2)'s B^T over the 5 even inputs
// (interpolation points 0, 1, -1, 2 and infinity), then the 4 odd ones as they are.
template <int M, int S, class Vec> [[gnu::always_inline]] inline void input_1d(Vec* d, int64_t s) {
  const float two = 2, four = 4, five = 5;
  if constexpr (S == 2) {
    Vec e0 = d[0], e1 = d[2 * s], e2 = d[4 * s], e3 = d[6 * s], e4 = d[8 * s];
    Vec o0 = d[s], o1 = d[3 * s], o2 = d[5 * s], o3 = d[7 * s];
    d[0] = two * (e0 - e2) - e1 + e3;
    d[s] = e3 - e2 - two * e1;
    d[2 * s] = two * e1 - 3.0f * e2 + e3;
    d[3 * s] = e3 - e1;
    d[4 * s] = two * (e1 - e3) - e2 + e4;
    d[5 * s] = o0;
    d[6 * s] = o1;
    d[7 * s] = o2;
    d[8 * s] = o3;
  } else if constexpr (M == 2) {
    Vec d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s];
    d[0] = d0 - d2;
    d[s] = d1 + d2;
    d[2 * s] = d2 - d1;
    d[3 * s] = d1 - d3;
  } else {
    Vec d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
    d[0] = four * d0 - five * d2 + d4;
    d[s] = d3 + d4 - four * (d1 + d2);
    d[2 * s] = four * (d1 - d2) - d3 + d4;
    d[3 * s] = two * (d3 - d1) - d2 + d4;
    d[4 * s] = two * (d1 - d3) - d2 + d4;
    d[5 * s] = four * d1 - five * d3 + d5;
  }
}

// A^T m over a side's points "s" apart, into m points "so" apart, on registers "Vec" (as
// input_1d); at stride 2 F(4, 2)'s A^T over the even points plus the odd ones.
template <int M, int S, class Vec>
[[gnu::always_inline]] inline void output_1d(const Vec* m, int64_t s, Vec* o, int64_t so) {
  const float two = 2, four = 4, eight = 8;
  if constexpr (S == 2) {
    Vec a = m[s] + m[2 * s], b = m[s] - m[2 * s], c = m[3 * s];
    o[0] = m[0] + a + c + m[5 * s];
    o[so] = b + two * c + m[6 * s];
    o[2 * so] = a + four * c + m[7 * s];
    o[3 * so] = b + eight * c + m[4 * s] + m[8 * s];
  } else if constexpr (M == 2) {
    o[0] = m[0] + m[s] + m[2 * s];
    o[so] = m[s] - m[2 * s] - m[3 * s];
  } else {
    Vec a = m[s] + m[2 * s], b = m[s] - m[2 * s], c = m[3 * s] + m[4 * s], d = m[3 * s] - m[4 * s];
    o[0] = m[0] + a + c;
    o[so] = b + two * d;
    o[2 * so] = a + four * c;
    o[3 * so] = b + eight * d + m[5 * s];
  }
}

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

// P[rows of tiles, 16 channels] = V[rows, C] x U[C, 16], for R rows of V laid [C / 8][.][8]
// (groups "ldg" apart) and of P "ldp" apart.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void
product_block(const float* v, int64_t ldg, const float* u, int64_t channels, float* p,
              int64_t ldp) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t c = 0; c < channels; c += kGroup, v += ldg, u += kGroup * kStrip) {
#pragma GCC unroll 8
    for (int k = 0; k < kGroup; ++k) {
      __m256 u0 = _mm256_loadu_ps(u + k * kStrip), u1 = _mm256_loadu_ps(u + k * kStrip + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        __m256 s = _mm256_broadcast_ss(v + r * kGroup + k);
        acc[r][0] = _mm256_fmadd_ps(s, u0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(s, u1, acc[r][1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(p + r * ldp, acc[r][0]);
    _mm256_storeu_ps(p + r * ldp + 8, acc[r][1]);
  }
}

// "rows" (<= R) rows of a strip as one block of that many.
template <int R>
[[gnu::target("avx2,fma")]] void product_rows(int rows, const float* v, int64_t ldg, const float* u,
                                              int64_t channels, float* p, int64_t ldp) {
  if constexpr (R > 0) {
    if (rows == R) return product_block<R>(v, ldg, u, channels, p, ldp);
    product_rows<R - 1>(rows, v, ldg, u, channels, p, ldp);
  }
}

// The sizes of the blocks of a strip of "tiles" rows, at most "most" a block and as even as
// they come: 49 rows in blocks of 12 would leave one of 1 (a single chain of FMAs, each
// waiting on the last), and run as 10, 10, 10, 10 and 9.
template <class Block> void even_blocks(int64_t tiles, int most, const Block& block) {
  const int64_t blocks = ceil_div(tiles, most);
  for (int64_t b = 0, t = 0; b < blocks; ++b) {
    int rows = static_cast<int>(tiles / blocks + (b < tiles % blocks ? 1 : 0));
    block(t, rows);
    t += rows;
  }
}

// One position's product for one strip over all "tiles" rows of V, its groups "ldg" apart.
void product_strip(const float* v, int64_t ldg, const float* u, float* p, int64_t tiles,
                   int64_t channels, int64_t ldp) {
  even_blocks(tiles, kRows, [&](int64_t t, int rows) {
    product_rows<kRows>(rows, v + t * kGroup, ldg, u, channels, p + t * ldp, ldp);
  });
}

// With AVX-512: a strip's 16 channels are one register, so a block of kWideRows rows keeps
// as many accumulators, each broadcast of V feeding one FMA of twice the width. V's groups
// are of 16 channels there (the last one half used where C is an odd multiple of 8), so
// that the two groups of 8 that a tile's input transforms write in turn share cache lines.
constexpr int kWideRows = 12;
constexpr int64_t kWideGroup = 16;

bool wide_products() {
  static const bool wide = __builtin_cpu_supports("avx512f");
  return wide;
}

// The channels of a group of V: kWideGroup for the AVX-512 products, else kGroup.
int64_t v_group() { return wide_products() ? kWideGroup : kGroup; }

// acc[r] += V[r, k] U[k, .] over K channels of a group of V (R rows kWideGroup apart).
template <int R, int K>
[[gnu::target("avx512f"), gnu::always_inline]] inline void
accumulate_wide(__m512* acc, const float* v, const float* u) {
#pragma GCC unroll 16
  for (int k = 0; k < K; ++k) {
    __m512 u0 = _mm512_loadu_ps(u + k * kStrip);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(v[r * kWideGroup + k]), u0, acc[r]);
  }
}

template <int R>
[[gnu::target("avx512f"), gnu::always_inline]] inline void
product_block_wide(const float* v, int64_t ldg, const float* u, int64_t channels, float* p,
                   int64_t ldp) {
  __m512 acc[R];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
    acc[r] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + kWideGroup <= channels; c += kWideGroup, v += ldg, u += kWideGroup * kStrip)
    accumulate_wide<R, kWideGroup>(acc, v, u);
  if (c < channels) // the last 8 channels, half a group
    accumulate_wide<R, kGroup>(acc, v, u);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
    _mm512_storeu_ps(p + r * ldp, acc[r]);
}

// "rows" (<= R) rows of a strip as one block of that many.
template <int R>
[[gnu::target("avx512f")]] void product_rows_wide(int rows, const float* v, int64_t ldg,
                                                  const float* u, int64_t channels, float* p,
                                                  int64_t ldp) {
  if constexpr (R > 0) {
    if (rows == R) return product_block_wide<R>(v, ldg, u, channels, p, ldp);
    product_rows_wide<R - 1>(rows, v, ldg, u, channels, p, ldp);
  }
}

void product_strip_wide(const float* v, int64_t ldg, const float* u, float* p, int64_t tiles,
                        int64_t channels, int64_t ldp) {
  even_blocks(tiles, kWideRows, [&](int64_t t, int rows) {
    product_rows_wide<kWideRows>(rows, v + t * kWideGroup, ldg, u, channels, p + t * ldp, ldp);
  });
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
      Vec v = o[i * M + j] + b;
      for (const Step& s : steps) {
        if (s.relu) {
          Vec scaled = s.alpha * v;
          v = v > scaled ? v : scaled; // max(v, alpha v)
        } else {
          const Strides& rs = s.strides;
          const auto* res = static_cast<const float*>(buffers[s.buffer]);
          Vec add;
          std::memcpy(&add, res + n * rs.batch + group * rs.group + h * rs.row + w * rs.point,
                      sizeof(Vec));
          v += add;
        }
      }
      std::memcpy(y + n * ys.batch + group * ys.group + h * ys.row + w * ys.point, &v, sizeof(Vec));
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
std::vector<float> transform_weights(const float* w, int64_t out_ch, int64_t in_ch, int64_t tile,
                                     int64_t stride) {
  const int64_t strips = (out_ch + kStrip - 1) / kStrip, side = u_side(tile, stride);
  std::vector<float> u(static_cast<size_t>(side * side * strips * in_ch * kStrip), 0.0f);
  auto g_1d = [tile, stride](const double* in, int64_t s, double* out, int64_t so) {
    double g0 = in[0], g1 = in[s], g2 = in[2 * s];
    if (stride == 2) {
      out[0] = g0 / 2;
      out[so] = -(g0 + g2) / 2;
      out[2 * so] = (g2 - g0) / 6;
      out[3 * so] = g0 / 6 + g2 / 3;
      out[4 * so] = g2;
      out[5 * so] = g1;
      return;
    }
    if (tile == 2) {
      out[0] = g0;
      out[so] = (g0 + g1 + g2) / 2;
      out[2 * so] = (g0 - g1 + g2) / 2;
      out[3 * so] = g2;
      return;
    }
    out[0] = g0 / 4;
    out[so] = -(g0 + g1 + g2) / 6;
    out[2 * so] = -(g0 - g1 + g2) / 6;
    out[3 * so] = g0 / 24 + g1 / 12 + g2 / 6;
    out[4 * so] = g0 / 24 - g1 / 12 + g2 / 6;
    out[5 * so] = g2;
  };
  for (int64_t m = 0; m < out_ch; ++m) {
    for (int64_t c = 0; c < in_ch; ++c) {
      double g[9], t[6 * 3], r[6 * 6];
      for (int k = 0; k < 9; ++k)
        g[k] = w[(m * in_ch + c) * 9 + k];
      for (int j = 0; j < 3; ++j) // columns: t [side][3]
        g_1d(g + j, 3, t + j, 3);
      for (int64_t i = 0; i < side; ++i) // rows: r [side][side]
        g_1d(t + i * 3, 1, r + i * side, 1);
      for (int64_t q = 0; q < side * side; ++q)
        u[static_cast<size_t>(((q * strips + m / kStrip) * in_ch + c) * kStrip + m % kStrip)] =
            static_cast<float>(r[q]);
    }
  }
  return u;
}

class WinogradKernel final : public runtime::LibraryKernel {
public:
  WinogradKernel(Geometry g, int x, Strides xs, int y, Strides ys, int bias,
                 std::vector<Step> steps, std::shared_ptr<const std::vector<float>> u,
                 std::string layouts)
      : g_(g), x_(x), y_(y), bias_(bias), xs_(xs), ys_(ys), steps_(std::move(steps)),
        u_(std::move(u)), layouts_(std::move(layouts)) {}

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    Args a{static_cast<const float*>(buffers[x_]), static_cast<float*>(buffers[y_]),
           bias_ >= 0 ? static_cast<const float*>(buffers[bias_]) : nullptr, buffers};
    const int64_t tiles = g_.tiles(), ldp = g_.padded_out();
    const int64_t threads = std::max(1, omp_get_max_threads());
    if (int64_t chunk = chunk_tiles(); tiles >= 2 * threads * chunk) {
      // Many tiles: each thread takes chunks of them through all three phases, its V and P
      // in its own cache. The chunks, no larger, in a multiple of the threads where that
      // takes no more register blocks (196 tiles on 2 threads: 6 chunks of 36 instead of 4
      // of 42 and one of 28, 108 and 88 tiles a thread instead of 126 and 70).
      const int64_t rows = wide_products() ? kWideRows : kRows;
      int64_t chunks = ceil_div(ceil_div(tiles, chunk), threads) * threads;
      chunk = ceil_div(ceil_div(tiles, chunks), rows) * rows;
      chunks = ceil_div(tiles, chunk);
#pragma omp parallel
      {
        thread_local std::vector<float> scratch;
        size_t need = static_cast<size_t>(g_.points() * chunk * (v_channels() + ldp));
        if (scratch.size() < need) scratch.resize(need);
        float* v = scratch.data();
        float* p = v + g_.points() * chunk * v_channels();
#pragma omp for schedule(static)
        for (int64_t c = 0; c < chunks; ++c) {
          int64_t first = c * chunk, count = std::min(chunk, tiles - first);
          for (int64_t t = 0; t < count; ++t)
            for (int64_t unit = 0; unit < input_units(); ++unit)
              input(a, first, chunk, t, unit, v);
          for (int64_t q = 0; q < g_.points(); ++q)
            for (int64_t s = 0; s < ldp / kStrip; ++s)
              product(q, s, chunk, count, v, p);
          for (int64_t t = 0; t < count; ++t)
            for (int64_t unit = 0; unit < output_units(); ++unit)
              output(a, first, chunk, t, unit, p);
        }
      }
      return {};
    }
    // Few tiles: each phase over all of them, split across the threads. Scratch of the
    // calling thread, kept between runs (no page faults each run).
    thread_local std::vector<float> scratch;
    size_t need = static_cast<size_t>(g_.points() * tiles * (v_channels() + ldp));
    if (scratch.size() < need) scratch.resize(need);
    float* v = scratch.data();
    float* p = v + g_.points() * tiles * v_channels();
#pragma omp parallel
    {
#pragma omp for schedule(static) collapse(2)
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t unit = 0; unit < input_units(); ++unit)
          input(a, 0, tiles, t, unit, v);
#pragma omp for schedule(static) collapse(2)
      for (int64_t q = 0; q < g_.points(); ++q)
        for (int64_t s = 0; s < ldp / kStrip; ++s)
          product(q, s, tiles, tiles, v, p);
#pragma omp for schedule(static) collapse(2)
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t unit = 0; unit < output_units(); ++unit)
          output(a, 0, tiles, t, unit, p);
    }
    return {};
  }

  std::string describe() const override {
    return fmt::format("Weft Winograd F({}x{}, 3x3){} ({} tiles, {})", g_.m, g_.m,
                       g_.stride == 2 ? ", stride 2 in 4 phases" : "", g_.tiles(), layouts_);
  }

  // The full-size operand the epilogue adds, as a position in the call's values; -1 if none.
  int residual() const {
    for (const Step& s : steps_)
      if (!s.relu) return s.buffer;
    return -1;
  }

private:
  struct Args {
    const float* x;
    float* y;
    const float* bias;
    void* const* buffers;
  };

  // The channels of a tile's row of V: C in whole groups.
  int64_t v_channels() const { return ceil_div(g_.in_ch, v_group()) * v_group(); }

  // Tiles of a chunk: its V and P (points x (C + M') floats a tile) in about chunk_bytes(),
  // whole register blocks of the products.
  int64_t chunk_tiles() const {
    const int64_t rows = wide_products() ? kWideRows : kRows;
    int64_t per_tile = g_.points() * (v_channels() + g_.padded_out()) * 4;
    return std::max<int64_t>(chunk_bytes() / per_tile / rows, 1) * rows;
  }

  // The channels of a unit of the input transform: a group of V's 16 where the products
  // are AVX-512's and the source lies channels-last (16 channels contiguous), else 8.
  int64_t input_width() const {
    return wide_products() && xs_.group == kGroup ? kWideGroup : kGroup;
  }
  int64_t input_units() const { return ceil_div(g_.in_ch, input_width()); }
  // And of the output transform: 16 where the products are AVX-512's and the output and the
  // residual lie channels-last.
  int64_t output_width() const {
    bool contiguous = ys_.group == kGroup;
    for (const Step& s : steps_)
      contiguous = contiguous && (s.relu || s.strides.group == kGroup);
    return wide_products() && contiguous ? kWideGroup : kGroup;
  }
  int64_t output_units() const { return ceil_div(g_.out_ch, output_width()); }

  // Tile "first + t" of a scratch of "capacity" tiles: its input transform for channels
  // [unit * input_width(), ...) (the last unit of 16 may hold 8).
  void input(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
             float* v) const {
    int64_t tile = first + t, th = g_.tiles_h(), tw = g_.tiles_w();
    int64_t n = tile / (th * tw), i = tile / tw % th, j = tile % tw;
    int64_t top = i * g_.m * g_.stride - g_.pad_top, left = j * g_.m * g_.stride - g_.pad_left;
    const int64_t c = unit * input_width(), vg = v_group(), gi = c / kGroup;
    float* to = v + (c / vg * capacity + t) * vg + c % vg;
    const int64_t ps = capacity * v_channels();
    bool wide = c + kWideGroup <= g_.in_ch && input_width() == kWideGroup;
    if (g_.stride == 2)
      (wide ? transform_input_wide<4, 2> : transform_input<4, 2>)(a.x, xs_, g_, n, top, left, gi,
                                                                  to, ps);
    else if (g_.m == 2)
      (wide ? transform_input_wide<2, 1> : transform_input<2, 1>)(a.x, xs_, g_, n, top, left, gi,
                                                                  to, ps);
    else
      (wide ? transform_input_wide<4, 1> : transform_input<4, 1>)(a.x, xs_, g_, n, top, left, gi,
                                                                  to, ps);
  }
  // Point "q"'s product for strip "s" over "count" tiles.
  void product(int64_t q, int64_t s, int64_t capacity, int64_t count, const float* v,
               float* p) const {
    const int64_t ldp = g_.padded_out(), strips = ldp / kStrip;
    (wide_products() ? product_strip_wide
                     : product_strip)(v + q * capacity * v_channels(), capacity * v_group(),
                                      u_->data() + (g_.u_point(q) * strips + s) * g_.in_ch * kStrip,
                                      p + q * capacity * ldp + s * kStrip, count, g_.in_ch, ldp);
  }
  // Tile "first + t"'s output transform for output group "go", with the epilogue.
  void output(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
              const float* p) const {
    int64_t tile = first + t, th = g_.tiles_h(), tw = g_.tiles_w(), ldp = g_.padded_out();
    int64_t n = tile / (th * tw), i = tile / tw % th, j = tile % tw;
    const int64_t c = unit * output_width(), go = c / kGroup;
    const float* from = p + t * ldp + c;
    bool wide = c + kWideGroup <= g_.out_ch && output_width() == kWideGroup;
    if (g_.stride == 2)
      (wide ? transform_output_wide<4, 2> : transform_output<4, 2>)(from, capacity * ldp, a.bias,
                                                                    steps_, a.buffers, a.y, ys_, g_,
                                                                    n, i * 4, j * 4, go);
    else if (g_.m == 2)
      (wide ? transform_output_wide<2, 1> : transform_output<2, 1>)(from, capacity * ldp, a.bias,
                                                                    steps_, a.buffers, a.y, ys_, g_,
                                                                    n, i * 2, j * 2, go);
    else
      (wide ? transform_output_wide<4, 1> : transform_output<4, 1>)(from, capacity * ldp, a.bias,
                                                                    steps_, a.buffers, a.y, ys_, g_,
                                                                    n, i * 4, j * 4, go);
  }

  Geometry g_;
  int x_, y_, bias_;
  Strides xs_, ys_;
  std::vector<Step> steps_;
  std::shared_ptr<const std::vector<float>> u_;
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
  Strides xs, ys;
  if (!lies(x, &xs) || !lies(y, &ys)) return std::nullopt;
  // Values in the order of oneDNN's call for the node (source, weights, residual, bias,
  // output): a call over symbolic dims is built per shape, and may take either kernel.
  int xb = position(call.values, x);
  position(call.values, w); // bound though transformed, for the profile
  std::vector<Step> steps;
  std::string residual_where;
  for (const PostOp& p : absorbed.epilogue) {
    Step s;
    if (!p.binary && p.algorithm == dnnl::algorithm::eltwise_relu) {
      s.relu = true;
      s.alpha = p.alpha;
    } else if (p.binary && p.algorithm == dnnl::algorithm::binary_add && p.src1_dims.size() == 4 &&
               (nhwc ? channels_first(p.src1_dims) : p.src1_dims) == dy &&
               lies(p.src1, &s.strides)) {
      s.buffer = position(call.values, p.src1);
      residual_where =
          in_blocked.contains(p.src1) ? ", residual nChw8c" : ", residual channels-last";
    } else {
      return std::nullopt;
    }
    steps.push_back(s);
  }
  int bb = b ? position(call.values, b) : -1;
  auto u = w->constant->derived_as<std::vector<float>>(
      fmt::format("Winograd F({}x{}, 3x3) stride {} transform", g.m, g.m, g.stride), [&] {
        return std::make_shared<std::vector<float>>(transform_weights(
            reinterpret_cast<const float*>(w->constant->data()), g.out_ch, g.in_ch, g.m, g.stride));
      });
  int yb = position(call.values, y);
  // The output may take the residual's memory where both lie alike and the residual is not
  // the source: each point of it is read only to write the same point of the output, by the
  // same thread, just before (as oneDNN's sum post-op does).
  for (const Step& s : steps) {
    if (!s.relu && s.strides == ys && call.values[static_cast<size_t>(s.buffer)] != x)
      call.output_in_place_of = {s.buffer, yb};
  }
  auto where = [&](const Value* v) { return in_blocked.contains(v) ? "nChw8c" : "channels-last"; };
  std::string layouts = fmt::format("{} in, {} out{}", where(x), where(y), residual_where);
  call.kernel = std::make_shared<WinogradKernel>(g, xb, xs, yb, ys, bb, std::move(steps),
                                                 std::move(u), std::move(layouts));
  return call;
}

const Value* winograd_residual(const LibraryCall& call, bool* is_winograd) {
  auto kernel = std::dynamic_pointer_cast<const WinogradKernel>(call.kernel);
  *is_winograd = kernel != nullptr;
  int r = kernel ? kernel->residual() : -1;
  return r >= 0 ? call.values[static_cast<size_t>(r)] : nullptr;
}

} // namespace weft::library
