#include "weft/library/permute_copy.h"

#include <algorithm>
#include <cstring>

#include <immintrin.h>

namespace weft::library {

namespace {

// One register tile of a transposing copy: row r of the tile, T elements from
// from[r * from_row], lands in column r of rows to[c * to_col]. (Generated kernels carry the
// same shuffles as text in their prelude, weft_store_transposed16 in codegen/dialect.cc:
// they compile without Weft's headers.)
using Tile = void (*)(const float* from, int64_t from_row, float* to, int64_t to_col);

// GCC 12's AVX-512 shuffles start from _mm512_undefined_*, which -Wuninitialized flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
[[gnu::target("avx512f")]] void tile16(const float* from, int64_t from_row, float* to,
                                       int64_t to_col) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_loadu_ps(from + i * from_row);
  // Pairs of rows interleaved, then pairs of pairs, then 4x4 blocks of 128-bit lanes moved.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    for (int j = 0; j < 2; ++j) {
      __m512d a = _mm512_castps_pd(t[i + j]), b = _mm512_castps_pd(t[i + j + 2]);
      r[i + j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      r[i + j + 2] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  }
  for (int i = 0; i < 16; i += 8) {
    for (int k = 0; k < 4; ++k) {
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + 4 + k], 0x88);
      t[i + 4 + k] = _mm512_shuffle_f32x4(r[i + k], r[i + 4 + k], 0xdd);
    }
  }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
  }
  // The column each register now holds.
  static constexpr int kColumn[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
  for (int i = 0; i < 16; ++i)
    _mm512_storeu_ps(to + kColumn[i] * to_col, r[i]);
}
#pragma GCC diagnostic pop

[[gnu::target("avx2")]] void tile8(const float* from, int64_t from_row, float* to, int64_t to_col) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(from + i * from_row);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(to + k * to_col, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(to + (k + 4) * to_col, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

// Rows [r0, r1) by columns [c0, c1) of a transposing copy, in tiles of "size" where whole.
void block(const float* from, int64_t from_row, float* to, int64_t to_col, int64_t r0, int64_t r1,
           int64_t c0, int64_t c1, Tile tile, int64_t size) {
  for (int64_t c = c0; c < c1; c += size) {
    for (int64_t r = r0; r < r1; r += size) {
      int64_t re = std::min(r + size, r1), ce = std::min(c + size, c1);
      if (tile && re - r == size && ce - c == size) {
        tile(from + r * from_row + c, from_row, to + r + c * to_col, to_col);
        continue;
      }
      for (int64_t j = c; j < ce; ++j) {
        for (int64_t i = r; i < re; ++i)
          to[i + j * to_col] = from[i * from_row + j];
      }
    }
  }
}

PermuteCopy::Tiles widest() {
  static const PermuteCopy::Tiles tiles =
      __builtin_cpu_supports("avx512f") ? PermuteCopy::Tiles::kAvx512
      : __builtin_cpu_supports("avx2")  ? PermuteCopy::Tiles::kAvx2
                                        : PermuteCopy::Tiles::kScalar;
  return tiles;
}

int64_t tile_size(PermuteCopy::Tiles tiles) {
  return tiles == PermuteCopy::Tiles::kAvx512 ? 16 : 8;
}

} // namespace

std::optional<PermuteCopy> PermuteCopy::between(const std::vector<int64_t>& dims,
                                                const std::vector<int64_t>& from,
                                                const std::vector<int64_t>& to) {
  if (from.size() != dims.size() || to.size() != dims.size()) return std::nullopt;
  std::vector<Axis> axes;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) return std::nullopt;
    if (dims[i] == 0) { // nothing to copy
      PermuteCopy none;
      none.outer_ = {{0, 0, 0}};
      return none;
    }
    if (dims[i] > 1) axes.push_back({dims[i], from[i], to[i]});
  }
  // Dense on both sides: ordered by stride, each stride the product of the extents inside it.
  for (int64_t Axis::*side : {&Axis::from, &Axis::to}) {
    std::vector<Axis> sorted = axes;
    std::sort(sorted.begin(), sorted.end(),
              [&](const Axis& a, const Axis& b) { return a.*side < b.*side; });
    int64_t expected = 1;
    for (const Axis& a : sorted) {
      if (a.*side != expected) return std::nullopt;
      expected *= a.extent;
    }
  }
  // In the destination's order, outermost first, neighbours contiguous on both sides merged.
  std::sort(axes.begin(), axes.end(), [](const Axis& a, const Axis& b) { return a.to > b.to; });
  std::vector<Axis> merged;
  for (const Axis& a : axes) {
    if (!merged.empty() && merged.back().to == a.to * a.extent &&
        merged.back().from == a.from * a.extent)
      merged.back() = {merged.back().extent * a.extent, a.from, a.to};
    else
      merged.push_back(a);
  }
  PermuteCopy copy;
  if (merged.empty()) return copy; // one element
  copy.row_ = merged.back();       // unit stride in the destination
  merged.pop_back();
  if (copy.row_.from != 1) { // a transposition with the source's unit-stride axis
    auto unit =
        std::find_if(merged.begin(), merged.end(), [](const Axis& a) { return a.from == 1; });
    copy.col_ = *unit;
    merged.erase(unit);
    copy.transposes_ = true;
  }
  copy.outer_ = std::move(merged);
  return copy;
}

bool PermuteCopy::tiled() const {
  if (!transposes_) return true;
  Tiles tiles = widest();
  return tiles != Tiles::kScalar && row_.extent >= tile_size(tiles) &&
         col_.extent >= tile_size(tiles);
}

void PermuteCopy::run(const float* from, float* to) const { run(from, to, widest()); }

void PermuteCopy::run(const float* from, float* to, Tiles tiles) const {
  int64_t outer = 1;
  for (const Axis& a : outer_)
    outer *= a.extent;
  auto offsets = [&](int64_t o, int64_t& f, int64_t& t) {
    f = t = 0;
    for (size_t k = outer_.size(); k-- > 0;) {
      int64_t i = o % outer_[k].extent;
      o /= outer_[k].extent;
      f += i * outer_[k].from;
      t += i * outer_[k].to;
    }
  };
  if (!transposes_) {
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      int64_t f, t;
      offsets(o, f, t);
      std::memcpy(to + t, from + f, sizeof(float) * static_cast<size_t>(row_.extent));
    }
    return;
  }
  Tile tile = tiles == Tiles::kAvx512 ? tile16 : tiles == Tiles::kAvx2 ? tile8 : nullptr;
  int64_t size = tile_size(tiles);
  // Blocks of 64x64 elements (16 KB, in L1 with their destination), each a thread's.
  constexpr int64_t kBlock = 64;
  const int64_t rows = row_.extent, cols = col_.extent;
  const int64_t row_blocks = (rows + kBlock - 1) / kBlock,
                col_blocks = (cols + kBlock - 1) / kBlock;
  const int64_t per_outer = row_blocks * col_blocks;
#pragma omp parallel for schedule(static)
  for (int64_t u = 0; u < outer * per_outer; ++u) {
    int64_t f, t, b = u % per_outer;
    offsets(u / per_outer, f, t);
    // Row blocks inner: a block column's destination rows are written one after another.
    int64_t r0 = b % row_blocks * kBlock, c0 = b / row_blocks * kBlock;
    block(from + f, row_.from, to + t, col_.to, r0, std::min(r0 + kBlock, rows), c0,
          std::min(c0 + kBlock, cols), tile, size);
  }
}

} // namespace weft::library
