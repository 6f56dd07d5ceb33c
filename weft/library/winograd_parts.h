// What Weft's Winograd kernels share (winograd.cc: 2-D 3x3; winograd_1d.cc: 1-D of any
// taps): the transforms along one side, the products of the transformed points, the epilogue,
// and the three phases over chunks of tiles. Internal to library/.
//
// A kernel runs in three phases over tiles of outputs:
// 1. the input transform of each tile's patch, into V [points][K / G][tiles][G] (G channels of
//    a group: 8, or 16 with AVX-512; K the channels a point's product sums over);
// 2. per point and strip of 16 output channels, the product V[point] x U[point] (U: the
//    weights' transform [points][strips][K][16], made once per constant) into P
//    [points][tiles][M'] (M' the output channels padded to whole strips);
// 3. the output transform of each tile, with the bias and the epilogue.
// With few tiles each phase runs over all of them, split across the threads; with many, each
// thread takes chunks of tiles through all three phases, their V and P in its L2.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/graph/tensor.h"
#include "weft/library/dnnl_epilogue.h"
#include "weft/runtime/library_kernel.h"

namespace weft::library::winograd {

// The transformed weights U, in Weft's host memory: on huge pages from 2 MiB (host_memory.h),
// as each run streams them where the model's weights outgrow the cache.
using Transformed = std::vector<float, UninitializedAllocator<float>>;

constexpr int64_t kGroup = 8;  // channels of an AVX register
constexpr int64_t kStrip = 16; // output channels of a product's strip
constexpr int64_t kWideGroup = 16;
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// The most memory a convolution's transformed weights may take: larger ones stay oneDNN's
// direct call. VGG's and ResNet's largest take 38 MB (F(4x4, 3x3): 4x the weights).
constexpr int64_t kMaxTransformedBytes = int64_t{256} << 20;

// Whether the products run on AVX-512 registers (a strip a register).
bool wide_products();
// The channels of a group of V: kWideGroup for the AVX-512 products, else kGroup.
int64_t v_group();
// The rows (tiles) of a product's register block.
int64_t block_rows();

// Where an activation's points lie, in floats: 8 channels of a group contiguous at
// n * batch + g * group + h * row + w * point (1-D: h = 0).
struct Strides {
  int64_t batch = 0, group = 0, row = 0, point = 0;
  bool operator==(const Strides&) const = default;
  int64_t at(int64_t n, int64_t g, int64_t h, int64_t w) const {
    return n * batch + g * group + h * row + w * point;
  }
};

// One step of the epilogue, after the bias: max(v, alpha * v), or v + a full-size operand.
struct Step {
  bool relu = false;
  float alpha = 0;
  int buffer = -1;
  Strides strides;
};

// B^T d of F(M, 3) over a side's points "s" floats apart, in place, on registers "Vec" of 8
// or 16 floats (GCC's vector operators; compiled for the ISA of the function it is inlined
// into). At stride 2: F(4, 2)'s B^T over the 5 even inputs (interpolation points 0, 1, -1, 2
// and infinity), then the 4 odd ones as they are.
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

// A^T m over a side's points "s" apart, into M points "so" apart, on registers "Vec" (as
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

// G g of the same transforms over 3 taps "s" apart, in fp64, into the side's points "so"
// apart (6 for F(4, 3), 4 for F(2, 3); at stride 2 F(4, 2)'s 5 over g0 and g2, then g1).
void weights_1d(const double* g, int64_t s, double* out, int64_t so, int64_t tile, int64_t stride);

// Adds the bias "b" to the output point "v" (channels from group "group" of 8 on) and takes
// it through the epilogue, at output point (n, h, w). (In place: a function returning a
// vector register changes the ABI with the ISA.)
template <class Vec>
[[gnu::always_inline]] inline void epilogue(Vec& v, const Vec& b, const std::vector<Step>& steps,
                                            void* const* buffers, int64_t n, int64_t group,
                                            int64_t h, int64_t w) {
  v += b;
  for (const Step& s : steps) {
    if (s.relu) {
      Vec scaled = s.alpha * v;
      v = v > scaled ? v : scaled; // max(v, alpha v)
    } else {
      const auto* res = static_cast<const float*>(buffers[s.buffer]);
      Vec add;
      std::memcpy(&add, res + s.strides.at(n, group, h, w), sizeof(Vec));
      v += add;
    }
  }
}

// The epilogue of a call as steps: ReLU, LeakyReLU, and the Add of a full-size operand
// ("out_dims" as the node's output, channels-first) which "lies" says where it lies; none where
// another op comes, or the operand lies otherwise. Each operand is bound in "call".
std::optional<std::vector<Step>>
epilogue_steps(const Absorbed& absorbed, const Dims& out_dims, bool channels_last,
               const std::function<bool(const Value*, Strides*)>& lies, LibraryCall& call);
// The output takes the memory of the residual that one of "steps" adds where it lies as the
// output does ("ys") and is not the source (bound at "x"): each point of it is read only to
// write the same point of the output, by the same thread, just before (as oneDNN's sum
// post-op does).
void output_in_place(LibraryCall& call, const std::vector<Step>& steps, const Strides& ys, int x,
                     int y);

// The three phases (above) over a kernel's tiles; the kernel says what its points, tiles and
// transforms are.
class PhasedKernel : public runtime::LibraryKernel {
public:
  PhasedKernel(int x, int y, int bias, std::vector<Step> steps,
               std::shared_ptr<const Transformed> u)
      : x_(x), y_(y), bias_(bias), steps_(std::move(steps)), u_(std::move(u)) {}

  Status run(void* const* buffers, const int64_t* extents) const override;

  // The full-size operand the epilogue adds, as a position in the call's values; -1 if none.
  int residual() const;

protected:
  struct Args {
    const float* x;
    float* y;
    const float* bias;
    void* const* buffers;
  };
  virtual int64_t tiles() const = 0;
  virtual int64_t points() const = 0;
  // The point of U that point "q" of a tile multiplies.
  virtual int64_t u_point(int64_t q) const { return q; }
  // The channels a point's product sums over, and a tile's row of V holds (whole groups).
  virtual int64_t k_channels() const = 0;
  virtual int64_t v_channels() const = 0;
  virtual int64_t out_channels() const = 0;
  virtual int64_t input_units() const = 0;
  virtual int64_t output_units() const = 0;
  // Tile "first + t" of a scratch of "capacity" tiles: its input transform for a unit (a
  // group of channels; 1-D: of a chunk of taps), and its output transform with the epilogue.
  virtual void input(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
                     float* v) const = 0;
  virtual void output(const Args& a, int64_t first, int64_t capacity, int64_t t, int64_t unit,
                      const float* p) const = 0;

  int64_t padded_out() const { return ceil_div(out_channels(), kStrip) * kStrip; }
  const std::vector<Step>& steps() const { return steps_; }

private:
  int64_t chunk_tiles() const;
  void product(int64_t q, int64_t s, int64_t capacity, int64_t count, const float* v,
               float* p) const;

  int x_, y_, bias_;
  std::vector<Step> steps_;
  std::shared_ptr<const Transformed> u_;
};

} // namespace weft::library::winograd
