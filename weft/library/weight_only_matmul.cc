#include "weft/library/weight_only_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <immintrin.h>
#include <omp.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/shape_call.h"
#include "weft/support/cpu_clones.h"

namespace weft::library {

namespace {

// The most rows that read the quantized weights directly.
constexpr int kDirectRows = 4;

// Columns whose weights (K bytes each) stay in cache while every group of rows reads them.
constexpr int64_t kColumns = 16;

// Sixteen lanes: one AVX-512 register, two AVX2 ones.
constexpr int kLanes = 16;

// The sum of a register's lanes, through memory (GCC 12 warns falsely inside
// _mm512_reduce_add_ps).
__attribute__((target("avx512f"))) inline float lane_sum(__m512 v) {
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, v);
  float sum = 0;
  for (float x : lanes)
    sum += x;
  return sum;
}

// y[r, c] for rows r < ROWS of a (each K long, "a_step" apart) and columns c in [first, last):
// the dot product of row r with row c of the weights, (q[c, k] - zero[c, k / block]) *
// scale[c, k / block] over k. Within a block the lanes add the products; a row's sum is
// taken once, at its end.
template <int ROWS>
WEFT_CPU_CLONES void
quantized_rows(const float* __restrict a, int64_t a_step, const uint8_t* __restrict q,
               const float* __restrict scale, const uint8_t* __restrict zero, float* __restrict y,
               int64_t y_step, int64_t k, int64_t block, int64_t first, int64_t last) {
  int64_t blocks = (k + block - 1) / block;
  for (int64_t c = first; c < last; ++c) {
    const uint8_t* row = q + c * k;
    float lanes[ROWS][kLanes] = {};
    float tail[ROWS] = {};
    for (int64_t b = 0; b < blocks; ++b) {
      float s = scale[c * blocks + b], z = zero[c * blocks + b];
      int64_t start = b * block, end = std::min(start + block, k), i = start;
      for (; i + kLanes <= end; i += kLanes) {
        float w[kLanes];
#pragma omp simd
        for (int j = 0; j < kLanes; ++j)
          w[j] = (static_cast<float>(row[i + j]) - z) * s;
        for (int r = 0; r < ROWS; ++r) {
#pragma omp simd
          for (int j = 0; j < kLanes; ++j)
            lanes[r][j] += a[r * a_step + i + j] * w[j];
        }
      }
      for (; i < end; ++i) {
        float w = (static_cast<float>(row[i]) - z) * s;
        for (int r = 0; r < ROWS; ++r)
          tail[r] += a[r * a_step + i] * w;
      }
    }
    for (int r = 0; r < ROWS; ++r) {
      float sum = tail[r];
      for (int j = 0; j < kLanes; ++j)
        sum += lanes[r][j];
      y[r * y_step + c] = sum;
    }
  }
}

// COLS columns c, c + 1, ... of quantized_rows with AVX-512 intrinsics: 16 weights of each
// column widened, converted and dequantized in one register (w = q s - z s) at a time, and
// ROWS x COLS independent sums (one chain of dependent adds had left the decoding step waiting
// on the adder's latency; GCC's vectorization of the portable form went through 128-bit pieces).
template <int ROWS, int COLS>
__attribute__((target("avx512f"))) inline void
quantized_tile_avx512(const float* __restrict a, int64_t a_step, const uint8_t* __restrict q,
                      const float* __restrict scale, const uint8_t* __restrict zero,
                      float* __restrict y, int64_t y_step, int64_t k, int64_t block, int64_t c) {
  int64_t blocks = (k + block - 1) / block;
  __m512 acc[ROWS][COLS];
  float tail[ROWS][COLS] = {};
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < COLS; ++j)
      acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    __m512 vs[COLS], vzs[COLS];
    float s[COLS], zs[COLS];
#pragma GCC unroll 4
    for (int j = 0; j < COLS; ++j) {
      int64_t at = (c + j) * blocks + b;
      s[j] = scale[at], zs[j] = static_cast<float>(zero[at]) * s[j];
      vs[j] = _mm512_set1_ps(s[j]), vzs[j] = _mm512_set1_ps(zs[j]);
    }
    int64_t start = b * block, end = std::min(start + block, k), i = start;
    for (; i + kLanes <= end; i += kLanes) {
      __m512 w[COLS];
#pragma GCC unroll 4
      for (int j = 0; j < COLS; ++j) {
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + (c + j) * k + i));
        w[j] = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)), vs[j], vzs[j]);
      }
#pragma GCC unroll 4
      for (int r = 0; r < ROWS; ++r) {
        __m512 x = _mm512_loadu_ps(a + r * a_step + i);
#pragma GCC unroll 4
        for (int j = 0; j < COLS; ++j)
          acc[r][j] = _mm512_fmadd_ps(x, w[j], acc[r][j]);
      }
    }
    for (; i < end; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < COLS; ++j) {
        float w = static_cast<float>(q[(c + j) * k + i]) * s[j] - zs[j];
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; ++r)
          tail[r][j] += a[r * a_step + i] * w;
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < COLS; ++j) {
      y[r * y_step + c + j] = tail[r][j] + lane_sum(acc[r][j]);
    }
  }
}

// Columns [first, last) of one row of a against 4-bit weights packed two to a byte: in each
// group of 32 weights along K, byte i holds weight i in its low half and weight i + 16 in its
// high half (QuantizedMatrix::pack), so that 16 bytes widen into two registers of weights in
// order. Half the bytes of quantized_rows' decoding step, and two independent sums.
__attribute__((target("avx512f"))) void
packed_row_avx512(const float* __restrict a, const uint8_t* __restrict packed,
                  const float* __restrict scale, const uint8_t* __restrict zero,
                  float* __restrict y, int64_t k, int64_t block, int64_t first, int64_t last) {
  int64_t blocks = (k + block - 1) / block; // the last one shorter where block does not divide K
  const __m128i low = _mm_set1_epi8(0x0F);
  for (int64_t c = first; c < last; ++c) {
    const uint8_t* row = packed + c * (k / 2);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      float s = scale[c * blocks + b];
      __m512 vs = _mm512_set1_ps(s),
             vzs = _mm512_set1_ps(static_cast<float>(zero[c * blocks + b]) * s);
      for (int64_t i = b * block; i < std::min((b + 1) * block, k); i += 2 * kLanes) {
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i / 2));
        __m128i lo = _mm_and_si128(bytes, low), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
        __m512 w0 = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(lo)), vs, vzs);
        __m512 w1 = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(hi)), vs, vzs);
        acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), w0, acc0);
        acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + kLanes), w1, acc1);
      }
    }
    y[c] = lane_sum(_mm512_add_ps(acc0, acc1));
  }
}

// f.template operator()<R>() with R = min(rows, kDirectRows): the kernels' row counts.
template <typename F> void with_rows(int64_t rows, F&& f) {
  static_assert(kDirectRows == 4, "a case for each row count");
  switch (std::min<int64_t>(rows, kDirectRows)) {
    case 1: f.template operator()<1>(); break;
    case 2: f.template operator()<2>(); break;
    case 3: f.template operator()<3>(); break;
    default: f.template operator()<4>(); break;
  }
}

// Columns [first, last) of the weights dequantized into w [last - first, K], 16 at a time.
__attribute__((target("avx512f"))) void
dequantize_avx512(const uint8_t* __restrict q, const float* __restrict scale,
                  const uint8_t* __restrict zero, float* __restrict w, int64_t k, int64_t block,
                  int64_t first, int64_t last) {
  int64_t blocks = (k + block - 1) / block;
  for (int64_t c = first; c < last; ++c) {
    const uint8_t* row = q + c * k;
    float* out = w + (c - first) * k;
    for (int64_t b = 0; b < blocks; ++b) {
      float s = scale[c * blocks + b], zs = static_cast<float>(zero[c * blocks + b]) * s;
      __m512 vs = _mm512_set1_ps(s), vzs = _mm512_set1_ps(zs);
      int64_t i = b * block, end = std::min(i + block, k);
      for (; i + kLanes <= end; i += kLanes) {
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i));
        _mm512_storeu_ps(out + i,
                         _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)), vs, vzs));
      }
      for (; i < end; ++i)
        out[i] = static_cast<float>(row[i]) * s - zs;
    }
  }
}

// The same from 4-bit weights packed as packed_row_avx512 reads them (K and the blocks
// multiples of 32).
__attribute__((target("avx512f"))) void
dequantize_packed_avx512(const uint8_t* __restrict packed, const float* __restrict scale,
                         const uint8_t* __restrict zero, float* __restrict w, int64_t k,
                         int64_t block, int64_t first, int64_t last) {
  int64_t blocks = k / block;
  const __m128i low = _mm_set1_epi8(0x0F);
  for (int64_t c = first; c < last; ++c) {
    const uint8_t* row = packed + c * (k / 2);
    float* out = w + (c - first) * k;
    for (int64_t b = 0; b < blocks; ++b) {
      float s = scale[c * blocks + b];
      __m512 vs = _mm512_set1_ps(s),
             vzs = _mm512_set1_ps(static_cast<float>(zero[c * blocks + b]) * s);
      for (int64_t i = b * block; i < (b + 1) * block; i += 2 * kLanes) {
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i / 2));
        __m128i lo = _mm_and_si128(bytes, low), hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
        _mm512_storeu_ps(out + i,
                         _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(lo)), vs, vzs));
        _mm512_storeu_ps(out + i + kLanes,
                         _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(hi)), vs, vzs));
      }
    }
  }
}

// y[r, c + j] = dot(a row r, w row j) for ROWS rows and COLS columns of f32 weights w [., K].
template <int ROWS, int COLS>
__attribute__((target("avx512f"))) inline void
float_tile_avx512(const float* __restrict a, int64_t a_step, const float* __restrict w,
                  float* __restrict y, int64_t y_step, int64_t k) {
  __m512 acc[ROWS][COLS];
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < COLS; ++j)
      acc[r][j] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + kLanes <= k; i += kLanes) {
    __m512 wv[COLS];
#pragma GCC unroll 4
    for (int j = 0; j < COLS; ++j)
      wv[j] = _mm512_loadu_ps(w + j * k + i);
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; ++r) {
      __m512 x = _mm512_loadu_ps(a + r * a_step + i);
#pragma GCC unroll 4
      for (int j = 0; j < COLS; ++j)
        acc[r][j] = _mm512_fmadd_ps(x, wv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < COLS; ++j) {
      float sum = lane_sum(acc[r][j]);
      for (int64_t t = i; t < k; ++t)
        sum += a[r * a_step + t] * w[j * k + t];
      y[r * y_step + j] = sum;
    }
  }
}

// Rows [0, rows) of a by dequantized columns w [count, K] (columns c.. of y), in tiles of 4 x 4.
__attribute__((target("avx512f"))) void float_rows_avx512(const float* a, const float* w, float* y,
                                                          int64_t y_step, int64_t rows, int64_t k,
                                                          int64_t count) {
  for (int64_t r = 0; r < rows; r += 4) {
    auto tiles = [&]<int R>() {
      int64_t j = 0;
      for (; j + 4 <= count; j += 4)
        float_tile_avx512<R, 4>(a + r * k, k, w + j * k, y + r * y_step + j, y_step, k);
      for (; j < count; ++j)
        float_tile_avx512<R, 1>(a + r * k, k, w + j * k, y + r * y_step + j, y_step, k);
    };
    with_rows(rows - r, tiles);
  }
}

// quantized_rows with AVX-512 intrinsics, four columns at a time.
template <int ROWS>
__attribute__((target("avx512f"))) void
quantized_rows_avx512(const float* __restrict a, int64_t a_step, const uint8_t* __restrict q,
                      const float* __restrict scale, const uint8_t* __restrict zero,
                      float* __restrict y, int64_t y_step, int64_t k, int64_t block, int64_t first,
                      int64_t last) {
  constexpr int kCols = ROWS == 1 ? 1 : 4;
  int64_t c = first;
  for (; c + kCols <= last; c += kCols)
    quantized_tile_avx512<ROWS, kCols>(a, a_step, q, scale, zero, y, y_step, k, block, c);
  for (; c < last; ++c)
    quantized_tile_avx512<ROWS, 1>(a, a_step, q, scale, zero, y, y_step, k, block, c);
}

// The int8 path (MatMulNBits' accuracy level 4, as ONNX Runtime runs it): the rows of A are
// quantized to int8 per block of K (symmetric, scale max |a| / 127), and each group of 32
// weights times its 32 activations is an integer sum of vpdpbusd's byte products, scaled once
// per group by both scales. The weights (4 or 8 bits) are laid out for it in tiles of 32
// columns (QuantizedMatrix::tile): a lane per column, so that a group's scaling is one
// multiply-add per 16 columns and row.
constexpr int64_t kGroup = 32, kTile = 32;

// A tile's bytes per group: 32 columns x 32 weights of "bits" bits.
constexpr int64_t tile_group_bytes(int bits) { return kTile * kGroup * bits / 8; }

// Rows of A quantized for int8_tile_avx512: q [rows, K]; per row and group of 32 the scale and
// zero_term = "zero" x scale x the sum of the group's q, the term the weights' zero points take
// off.
struct Int8Rows {
  std::vector<int8_t> q;
  std::vector<float> scale, zero_term;
};

void quantize_rows(const float* a, int64_t rows, int64_t k, int64_t block, float zero,
                   Int8Rows& out) {
  int64_t groups = k / kGroup;
  out.q.resize(static_cast<size_t>(rows * k));
  out.scale.resize(static_cast<size_t>(rows * groups));
  out.zero_term.resize(out.scale.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a + r * k;
    int8_t* q = out.q.data() + r * k;
    for (int64_t start = 0; start < k; start += block) {
      int64_t end = std::min(start + block, k);
      float amax = 0.0f;
      for (int64_t i = start; i < end; ++i)
        amax = std::max(amax, std::fabs(x[i]));
      float scale = amax / 127.0f, inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
      for (int64_t g = start; g < end; g += kGroup) {
        int sum = 0;
        for (int64_t i = g; i < g + kGroup; ++i) {
          float t = x[i] * inverse;
          int v = t == t ? static_cast<int>(std::nearbyint(std::clamp(t, -127.0f, 127.0f))) : 0;
          q[i] = static_cast<int8_t>(v);
          sum += v;
        }
        out.scale[r * groups + g / kGroup] = scale;
        out.zero_term[r * groups + g / kGroup] = zero * scale * static_cast<float>(sum);
      }
    }
  }
}

// Four int8 values of a row, broadcast to every lane.
__attribute__((target("avx512f"))) inline __m512i broadcast4(const int8_t* x) {
  int32_t v;
  std::memcpy(&v, x, sizeof v);
  return _mm512_set1_epi32(v);
}

// y[r, c] for ROWS quantized rows from "row" on and the "columns" (up to 32) of one tile:
// "tile" its BITS-bit weights, "scale" and "zero_scale" its weights' scale and scale x zero point
// per group and column ([groups, 32]). With UNIFORM_ZERO every zero point is the same, folded
// into the rows' zero_term, and zero_scale is not read. Each group: 8 vpdpbusd per row and 16
// columns (4 weights of a column per lane each), the two 16-column halves of the tile as
// independent sums.
template <int ROWS, int BITS, bool UNIFORM_ZERO>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void
int8_tile_avx512(const Int8Rows& a, int64_t row, int64_t k, const uint8_t* __restrict tile,
                 const float* __restrict scale, const float* __restrict zero_scale,
                 float* __restrict y, int64_t y_step, int64_t columns) {
  int64_t groups = k / kGroup;
  const __m512i low = _mm512_set1_epi8(0x0F);
  __m512 acc[ROWS][2];
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* w = tile + g * tile_group_bytes(BITS);
    __m512i sum[ROWS][2];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; ++r)
      sum[r][0] = sum[r][1] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) { // weights 8 m .. 8 m + 7 of the group
      __m512i lo[2], hi[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        if constexpr (BITS == 4) {
          __m512i bytes = _mm512_loadu_si512(w + (2 * m + h) * 64);
          lo[h] = _mm512_and_si512(bytes, low);
          hi[h] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
        } else {
          lo[h] = _mm512_loadu_si512(w + (4 * m + h) * 64);
          hi[h] = _mm512_loadu_si512(w + (4 * m + 2 + h) * 64);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < ROWS; ++r) {
        const int8_t* x = a.q.data() + (row + r) * k + g * kGroup + 8 * m;
        __m512i x0 = broadcast4(x), x1 = broadcast4(x + 4);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
          sum[r][h] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sum[r][h], lo[h], x0), hi[h], x1);
      }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512 ws = _mm512_loadu_ps(scale + g * kTile + 16 * h);
#pragma GCC unroll 4
      for (int r = 0; r < ROWS; ++r) {
        int64_t at = (row + r) * groups + g;
        __m512 dots = _mm512_cvtepi32_ps(sum[r][h]), as = _mm512_set1_ps(a.scale[at]),
               term = _mm512_set1_ps(a.zero_term[at]);
        if constexpr (UNIFORM_ZERO) {
          acc[r][h] = _mm512_fmadd_ps(ws, _mm512_fmsub_ps(dots, as, term), acc[r][h]);
        } else {
          acc[r][h] = _mm512_fmadd_ps(ws, _mm512_mul_ps(dots, as), acc[r][h]);
          acc[r][h] =
              _mm512_fnmadd_ps(_mm512_loadu_ps(zero_scale + g * kTile + 16 * h), term, acc[r][h]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < ROWS; ++r) {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      int64_t n = std::clamp<int64_t>(columns - 16 * h, 0, 16);
      _mm512_mask_storeu_ps(y + r * y_step + 16 * h, static_cast<__mmask16>((1u << n) - 1),
                            acc[r][h]);
    }
  }
}

// The constant tensor of "v", when it is one of "dtype".
const Tensor* constant_of(const Value* v, DType dtype) {
  return v && v->is_constant() && v->type.dtype == dtype ? v->constant.get() : nullptr;
}

const uint8_t* bytes(const Tensor& t) { return reinterpret_cast<const uint8_t*>(t.data()); }

const float* floats(const Tensor& t) { return reinterpret_cast<const float*>(t.data()); }

// Column c of q [N, K] a byte a weight, from q as given: so already, or (4 bits) two a byte
// as ONNX packs them, then unpacked into "row".
const uint8_t* column_of(const uint8_t* q, bool packed, int64_t c, int64_t k,
                         std::vector<uint8_t>& row) {
  if (!packed) return q + c * k;
  row.resize(static_cast<size_t>(k));
  unpack_elements(DType::kU4, q + c * k / 2, k, row.data());
  return row.data();
}

} // namespace

QuantizedMatrix::QuantizedMatrix(int64_t k, int64_t n, int64_t block, int bits, const uint8_t* q,
                                 bool q_packed, const float* scale, const uint8_t* zero, bool int8)
    : k_(k), n_(n), block_(block), bits_(bits) {
  bool groups = k % kGroup == 0 && block % kGroup == 0;
  if (groups && int8 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vnni"))
    tile(q, q_packed, scale, zero);
  else if (groups && bits == 4 && __builtin_cpu_supports("avx512f"))
    pack(q, q_packed);
}

  // The int8 path's tiles: for each 32 columns (the last padded with zeros) and group of 32
  // along K, vectors of 64 bytes whose byte 4 l + i holds weight 8 m + i or 8 m + 4 + i of
  // column 16 h + l (vpdpbusd's four bytes per lane): with 4 bits, 8 vectors, vector 2 m + h
  // holding the first in its low half and the second in its high half; with 8 bits, 16
  // vectors, the first in vector 4 m + h and the second in 4 m + 2 + h. With them, each group's
  // weight scales and scale x zero point ([groups, 32] per tile; the latter unless every zero
  // point is the same).
void QuantizedMatrix::tile(const uint8_t* q, bool q_packed, const float* scale,
                           const uint8_t* zero) {
  std::vector<uint8_t> row;
  int64_t blocks = (k_ + block_ - 1) / block_, groups = k_ / kGroup;
  int64_t tiles = (n_ + kTile - 1) / kTile;
  if (std::all_of(zero, zero + n_ * blocks, [&](uint8_t z) { return z == zero[0]; }))
    uniform_zero_ = zero[0];
  tiles_.assign(static_cast<size_t>(tiles * groups * tile_group_bytes(bits_)), 0);
  tile_scale_.assign(static_cast<size_t>(tiles * groups * kTile), 0.0f);
  if (!uniform_zero_) tile_zero_scale_.assign(tile_scale_.size(), 0.0f);
  for (int64_t c = 0; c < n_; ++c) {
    int64_t t = c / kTile, h = c % kTile / 16, l = c % 16;
    const uint8_t* column = column_of(q, q_packed, c, k_, row);
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t* to = tiles_.data() + (t * groups + g) * tile_group_bytes(bits_) + 4 * l;
      const uint8_t* from = column + g * kGroup;
      for (int m = 0; m < 4; ++m) {
        for (int i = 0; i < 4; ++i) {
          uint8_t first = from[8 * m + i], second = from[8 * m + 4 + i];
          if (bits_ == 4) {
            to[(2 * m + h) * 64 + i] = static_cast<uint8_t>(first | second << 4);
          } else {
            to[(4 * m + h) * 64 + i] = first;
            to[(4 * m + 2 + h) * 64 + i] = second;
          }
        }
      }
      int64_t s = c * blocks + g * kGroup / block_, at = (t * groups + g) * kTile + c % kTile;
      tile_scale_[at] = scale[s];
      if (!uniform_zero_) tile_zero_scale_[at] = scale[s] * static_cast<float>(zero[s]);
    }
  }
}

  // Two 4-bit weights a byte, each group of 32 along K as packed_row_avx512 reads it.
void QuantizedMatrix::pack(const uint8_t* q, bool q_packed) {
  packed_.resize(static_cast<size_t>(n_ * k_ / 2));
  std::vector<uint8_t> row;
  for (int64_t c = 0; c < n_; ++c) {
    const uint8_t* column = column_of(q, q_packed, c, k_, row);
    for (int64_t g = 0; g < k_; g += 2 * kLanes) {
      const uint8_t* from = column + g;
      uint8_t* to = packed_.data() + (c * k_ + g) / 2;
      for (int i = 0; i < kLanes; ++i)
        to[i] = static_cast<uint8_t>(from[i] | from[i + kLanes] << 4);
    }
  }
}

void QuantizedMatrix::multiply(const float* a, int64_t rows, const uint8_t* q, const float* scale,
                               const uint8_t* zero, float* y) const {
  if (!tiles_.empty()) {
    thread_local Int8Rows quantized;
    quantize_rows(a, rows, k_, block_, uniform_zero_ ? *uniform_zero_ : 1.0f, quantized);
    const Int8Rows& rows_q = quantized;
    int64_t groups = k_ / kGroup, tiles = (n_ + kTile - 1) / kTile;
    // Each thread takes a range of the tiles, and each tile (in cache after the first) every
    // group of up to kDirectRows rows.
#pragma omp parallel
      {
        int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
        for (int64_t i = tiles * t / count; i < tiles * (t + 1) / count; ++i) {
          for (int64_t r = 0; r < rows; r += kDirectRows) {
            auto go = [&]<int R>() {
              auto* kernel = bits_ == 4 ? (uniform_zero_ ? int8_tile_avx512<R, 4, true>
                                                         : int8_tile_avx512<R, 4, false>)
                                        : (uniform_zero_ ? int8_tile_avx512<R, 8, true>
                                                         : int8_tile_avx512<R, 8, false>);
              kernel(rows_q, r, k_, tiles_.data() + i * groups * tile_group_bytes(bits_),
                     tile_scale_.data() + i * groups * kTile,
                     tile_zero_scale_.empty() ? nullptr
                                              : tile_zero_scale_.data() + i * groups * kTile,
                     y + r * n_ + i * kTile, n_, std::min(kTile, n_ - i * kTile));
            };
            with_rows(rows - r, go);
          }
        }
      }
      return;
  }
    if (rows == 1 && !packed_.empty()) {
#pragma omp parallel
      {
        int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
        packed_row_avx512(a, packed_.data(), scale, zero, y, k_, block_, n_ * t / count,
                          n_ * (t + 1) / count);
      }
      return;
    }
    static const bool avx512 = __builtin_cpu_supports("avx512f");
    // With the packed weights (AVX-512) every row count takes this path, so that q is never
    // read (Tensor::over_packed leaves it packed).
    if (avx512 && (rows > kDirectRows || !packed_.empty())) {
      // A prompt: each chunk of kColumns columns dequantized once into f32 in cache, then
      // every row against it, in tiles of 4 x 4 (dequantizing again for each group of 4 rows
      // took 1.25x as long for 32 rows).
#pragma omp parallel
      {
        thread_local std::vector<float> w;
        w.resize(std::max(w.size(), static_cast<size_t>(kColumns * k_)));
        int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
        int64_t first = n_ * t / count, last = n_ * (t + 1) / count;
        for (int64_t c = first; c < last; c += kColumns) {
          int64_t end = std::min(c + kColumns, last);
          if (packed_.empty())
            dequantize_avx512(q, scale, zero, w.data(), k_, block_, c, end);
          else
            dequantize_packed_avx512(packed_.data(), scale, zero, w.data(), k_, block_, c, end);
          float_rows_avx512(a, w.data(), y + c, n_, rows, k_, end - c);
        }
      }
      return;
    }
    // Each thread takes a range of the columns, kColumns at a time, and for each such chunk
    // (its weights then in cache) every group of up to kDirectRows rows.
#pragma omp parallel
    {
      int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
      int64_t first = n_ * t / count, last = n_ * (t + 1) / count;
      for (int64_t c = first; c < last; c += kColumns) {
        int64_t end = std::min(c + kColumns, last);
        for (int64_t r = 0; r < rows; r += kDirectRows) {
          auto go = [&]<int R>() {
            (avx512 ? quantized_rows_avx512<R> : quantized_rows<R>)(a + r * k_, k_, q, scale, zero,
                                                                    y + r * n_, n_, k_, block_, c,
                                                                    end);
          };
          with_rows(rows - r, go);
        }
      }
    }
}

std::string QuantizedMatrix::describe() const {
  return fmt::format("K {} N {} (blocks of {}{}{})", k_, n_, block_,
                     packed_.empty() ? "" : "; packed for one row",
                     tiles_.empty() ? "" : "; int8 activations");
}

std::optional<BlockQuantized> block_quantized(const Node& dq) {
  if (dq.op_type != Op::kDequantizeLinear || dq.inputs.size() != 3 || !dq.inputs[2])
    return std::nullopt;
  const auto& attrs = dq.attrs_as<QuantizeAttrs>();
  DType qt = dq.inputs[0]->type.dtype;
  const Tensor* q = constant_of(dq.inputs[0], qt);
  const Tensor* scale = constant_of(dq.inputs[1], DType::kF32);
  const Tensor* zero = constant_of(dq.inputs[2], qt);
  if ((qt != DType::kU4 && qt != DType::kU8) || !q || !scale || !zero || q->dims().size() < 2 ||
      attrs.axis != static_cast<int64_t>(q->dims().size()) - 1 || attrs.block_size <= 0 ||
      dq.outputs[0]->type.dtype != DType::kF32)
    return std::nullopt;
  std::vector<int64_t> blocks = q->dims();
  blocks.back() = (blocks.back() + attrs.block_size - 1) / attrs.block_size;
  if (scale->dims() != blocks || zero->dims() != blocks) return std::nullopt;
  return BlockQuantized{dq.inputs[0]->constant, dq.inputs[1]->constant,
                        dq.inputs[2]->constant, qt == DType::kU4 ? 4 : 8,
                        attrs.block_size,       attrs.accuracy_level == 4};
}

std::shared_ptr<const std::vector<QuantizedMatrix>> quantized_matrices(const BlockQuantized& w) {
  // The form keeps the scales and zero points it was made from, so that their addresses,
  // part of its name, are no other tensor's while it lives.
  struct Made {
    std::vector<QuantizedMatrix> matrices;
    TensorRef scale, zero;
  };
  std::string form =
      fmt::format("QuantizedMatrix {} {} {} {} {}", w.bits, w.block, w.int8,
                  static_cast<const void*>(w.scale.get()), static_cast<const void*>(w.zero.get()));
  std::shared_ptr<const Made> made = w.q->derived_as<Made>(form, [&] {
    auto m = std::make_shared<Made>();
    m->scale = w.scale, m->zero = w.zero;
    const std::vector<int64_t>& d = w.q->dims();
    int64_t n = d[d.size() - 2], k = d.back(), blocks = (k + w.block - 1) / w.block;
    int64_t count = w.q->num_elements() / (n * k);
    m->matrices.reserve(static_cast<size_t>(count));
    // Read as ONNX packs them where the tensor has that (mapped external data): unpacked a
    // column at a time, never all of them, where the layouts made here are all runs read.
    bool packed = w.q->packed() && w.bits == 4 && k % 2 == 0;
    const uint8_t* q = packed ? reinterpret_cast<const uint8_t*>(w.q->packed()) : bytes(*w.q);
    for (int64_t i = 0; i < count; ++i) {
      m->matrices.emplace_back(k, n, w.block, w.bits, q + i * n * k / (packed ? 2 : 1), packed,
                               floats(*w.scale) + i * n * blocks, bytes(*w.zero) + i * n * blocks,
                               w.int8);
    }
    return m;
  });
  return {made, &made->matrices};
}

namespace {

class WeightOnlyMatMul final : public runtime::LibraryKernel {
public:
  WeightOnlyMatMul(CallExtent rows, const BlockQuantized& w)
      : rows_(rows), n_(w.q->dims()[0]), matrices_(quantized_matrices(w)),
        matrix_(matrices_->front()) {}

  // Whether the call binds q: not where the matrix never reads it, so that a tensor over
  // packed bytes (Tensor::over_packed) is never unpacked.
  bool reads_q() const { return matrix_.reads_q(); }

  // buffers: a, scale, zero, y, then q where it reads it.
  Status run(void* const* buffers, const int64_t* extents) const override {
    const auto* q = reads_q() ? static_cast<const uint8_t*>(buffers[4]) : nullptr;
    matrix_.multiply(static_cast<const float*>(buffers[0]), rows_.at(extents), q,
                     static_cast<const float*>(buffers[1]), static_cast<const uint8_t*>(buffers[2]),
                     static_cast<float*>(buffers[3]));
    return Status();
  }

  std::string describe() const override {
    return fmt::format("Weft {}-bit weights matrix product, {}", matrix_.bits(),
                       matrix_.describe());
  }

private:
  CallExtent rows_;
  int64_t n_;
  std::shared_ptr<const std::vector<QuantizedMatrix>> matrices_; // one
  const QuantizedMatrix& matrix_;
};

} // namespace

std::optional<LibraryCall> weight_only_matmul_call(const Node& matmul,
                                                   const SoleReader& sole_reader) {
  if (matmul.op_type != Op::kMatMul || matmul.inputs.size() != 2) return std::nullopt;
  const Value *a = matmul.inputs[0], *y = matmul.outputs[0];
  const Node* transpose = matmul.inputs[1]->producer;
  if (a->type.dtype != DType::kF32 || !a->type.shape || a->type.shape->size() < 2 || !transpose ||
      transpose->op_type != Op::kTranspose || sole_reader(transpose->outputs[0]) != &matmul ||
      transpose_perm(*transpose) != Ints{1, 0})
    return std::nullopt;
  const Node* dq = transpose->inputs[0]->producer;
  std::optional<BlockQuantized> w = dq ? block_quantized(*dq) : std::nullopt;
  if (!w || sole_reader(dq->outputs[0]) != transpose || w->q->dims().size() != 2 ||
      a->type.shape->back() != Dim(w->q->dims()[1]))
    return std::nullopt;
  LibraryCall call;
  Dim rows = 1;
  for (size_t d = 0; d + 1 < a->type.shape->size(); ++d)
    rows = dim_mul(rows, (*a->type.shape)[d]);
  if (rows.is_unknown()) return std::nullopt;
  CallExtent extent = call_extent(rows, call.symbols);
  auto kernel = std::make_shared<WeightOnlyMatMul>(extent, *w);
  call.values = {a, dq->inputs[1], dq->inputs[2], y};
  (kernel->reads_q() ? call.values : call.held).push_back(dq->inputs[0]);
  call.kernel = std::move(kernel);
  call.nodes = {dq, transpose, &matmul};
  return call;
}

} // namespace weft::library
