// What Weft's Winograd kernels share (winograd_parts.h): the products of the transformed
// points on AVX2 or AVX-512 registers, and the three phases over chunks of tiles.
#include "weft/library/winograd_parts.h"

#include <algorithm>

#include <immintrin.h>
#include <omp.h>

#include "weft/support/machine.h"

namespace weft::library::winograd {

namespace {

constexpr int kRows = 6; // tiles of the AVX2 product's register block (12 accumulators)
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

} // namespace

bool wide_products() {
  static const bool wide = __builtin_cpu_supports("avx512f");
  return wide;
}

int64_t v_group() { return wide_products() ? kWideGroup : kGroup; }

int64_t block_rows() { return wide_products() ? kWideRows : kRows; }

void weights_1d(const double* g, int64_t s, double* out, int64_t so, int64_t tile, int64_t stride) {
  double g0 = g[0], g1 = g[s], g2 = g[2 * s];
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
}

std::optional<std::vector<Step>>
epilogue_steps(const Absorbed& absorbed, const Dims& out_dims, bool channels_last,
               const std::function<bool(const Value*, Strides*)>& lies, LibraryCall& call) {
  std::vector<Step> steps;
  for (const PostOp& p : absorbed.epilogue) {
    Step s;
    if (!p.binary && p.algorithm == dnnl::algorithm::eltwise_relu) {
      s.relu = true;
      s.alpha = p.alpha;
    } else if (p.binary && p.algorithm == dnnl::algorithm::binary_add &&
               p.src1_dims.size() == out_dims.size() &&
               (channels_last ? channels_first(p.src1_dims) : p.src1_dims) == out_dims &&
               lies(p.src1, &s.strides)) {
      s.buffer = position(call.values, p.src1);
    } else {
      return std::nullopt;
    }
    steps.push_back(s);
  }
  return steps;
}

void output_in_place(LibraryCall& call, const std::vector<Step>& steps, const Strides& ys, int x,
                     int y) {
  for (const Step& s : steps) {
    if (!s.relu && s.strides == ys && s.buffer != x) call.output_in_place_of = {s.buffer, y};
  }
}

int PhasedKernel::residual() const {
  for (const Step& s : steps_)
    if (!s.relu) return s.buffer;
  return -1;
}

// Tiles of a chunk: its V and P (points x (K + M') floats a tile) in about chunk_bytes(),
// whole register blocks of the products.
int64_t PhasedKernel::chunk_tiles() const {
  int64_t per_tile = points() * (v_channels() + padded_out()) * 4;
  return std::max<int64_t>(chunk_bytes() / per_tile / block_rows(), 1) * block_rows();
}

// Point "q"'s product for strip "s" over "count" tiles.
void PhasedKernel::product(int64_t q, int64_t s, int64_t capacity, int64_t count, const float* v,
                           float* p) const {
  const int64_t ldp = padded_out(), strips = ldp / kStrip;
  (wide_products() ? product_strip_wide
                   : product_strip)(v + q * capacity * v_channels(), capacity * v_group(),
                                    u_->data() + (u_point(q) * strips + s) * k_channels() * kStrip,
                                    p + q * capacity * ldp + s * kStrip, count, k_channels(), ldp);
}

Status PhasedKernel::run(void* const* buffers, const int64_t* /*extents*/) const {
  Args a{static_cast<const float*>(buffers[x_]), static_cast<float*>(buffers[y_]),
         bias_ >= 0 ? static_cast<const float*>(buffers[bias_]) : nullptr, buffers};
  const int64_t tiles = this->tiles(), ldp = padded_out();
  const int64_t threads = std::max(1, omp_get_max_threads());
  if (int64_t chunk = chunk_tiles(); tiles >= 2 * threads * chunk) {
    // Many tiles: each thread takes chunks of them through all three phases, its V and P
    // in its own cache. The chunks, no larger, in a multiple of the threads where that
    // takes no more register blocks (196 tiles on 2 threads: 6 chunks of 36 instead of 4
    // of 42 and one of 28, 108 and 88 tiles a thread instead of 126 and 70).
    const int64_t rows = block_rows();
    int64_t chunks = ceil_div(ceil_div(tiles, chunk), threads) * threads;
    chunk = ceil_div(ceil_div(tiles, chunks), rows) * rows;
    chunks = ceil_div(tiles, chunk);
#pragma omp parallel
    {
      thread_local std::vector<float> scratch;
      size_t need = static_cast<size_t>(points() * chunk * (v_channels() + ldp));
      if (scratch.size() < need) scratch.resize(need);
      float* v = scratch.data();
      float* p = v + points() * chunk * v_channels();
#pragma omp for schedule(static)
      for (int64_t c = 0; c < chunks; ++c) {
        int64_t first = c * chunk, count = std::min(chunk, tiles - first);
        for (int64_t t = 0; t < count; ++t)
          for (int64_t unit = 0; unit < input_units(); ++unit)
            input(a, first, chunk, t, unit, v);
        for (int64_t q = 0; q < points(); ++q)
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
  size_t need = static_cast<size_t>(points() * tiles * (v_channels() + ldp));
  if (scratch.size() < need) scratch.resize(need);
  float* v = scratch.data();
  float* p = v + points() * tiles * v_channels();
#pragma omp parallel
  {
#pragma omp for schedule(static) collapse(2)
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t unit = 0; unit < input_units(); ++unit)
        input(a, 0, tiles, t, unit, v);
#pragma omp for schedule(static) collapse(2)
    for (int64_t q = 0; q < points(); ++q)
      for (int64_t s = 0; s < ldp / kStrip; ++s)
        product(q, s, tiles, tiles, v, p);
#pragma omp for schedule(static) collapse(2)
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t unit = 0; unit < output_units(); ++unit)
        output(a, 0, tiles, t, unit, p);
  }
  return {};
}

} // namespace weft::library::winograd
