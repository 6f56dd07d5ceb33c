// A copy of f32 elements between two dense strided layouts of the same dims: the moves
// between channels-last and plain activations around oneDNN's calls (DnnlKernel). oneDNN's
// reorder made them at 6-25 GB/s where channels are many and planes small ([1, 1024, 14, 14]
// channels-last to plain: 0.28 ms on 2 threads of an AMD EPYC, 0.03-0.04 ms here), in
// cache-resident activations. Internal to library/.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace weft::library {

class PermuteCopy {
public:
  // Register tiles: 16x16 with AVX-512, 8x8 with AVX2, element by element without either.
  enum class Tiles { kScalar, kAvx2, kAvx512 };

  // The copy from elements at "from" strides to "to" strides (in elements), or nullopt
  // unless both are dense layouts of "dims" (some axis of unit stride on each side, no two
  // elements on one offset).
  static std::optional<PermuteCopy> between(const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& from,
                                            const std::vector<int64_t>& to);

  // Whether it runs in register tiles on this CPU (or moves runs of elements): false where
  // a transposed extent is under a tile (channels-last to plain with 3 channels) or the CPU
  // has neither AVX2 nor AVX-512, where oneDNN's reorder was as fast or faster.
  bool tiled() const;

  // On the threads of an OpenMP team, with the widest tiles the CPU has ("tiles" for tests).
  void run(const float* from, float* to) const;
  void run(const float* from, float* to, Tiles tiles) const;

private:
  struct Axis {
    int64_t extent, from, to; // strides in elements
  };
  // Outer axes, each a loop around the inner copy.
  std::vector<Axis> outer_;
  // The inner copy. Where the destination's innermost axis "row" has unit stride on both
  // sides, a run of its extent; otherwise a transposition of it with "col", the source's
  // unit-stride axis: element (r, c) at from[r * row.from + c] and to[r + c * col.to].
  Axis row_{1, 0, 0}, col_{1, 0, 0};
  bool transposes_ = false;
};

} // namespace weft::library
