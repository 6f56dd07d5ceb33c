#include <gtest/gtest.h>

#include "weft/kernel/coalesce.h"

namespace weft::kernel {
namespace {

std::string steps(const Shape& shape, const std::vector<int64_t>& axes) {
  auto r = coalesce_reduction(shape, axes);
  if (!r.ok()) return "error: " + r.status().message();
  std::string out;
  for (const CanonicalReduction& step : *r)
    out += (out.empty() ? "" : " ; ") + print_canonical(step);
  return out.empty() ? "none" : out;
}

struct Case {
  Shape shape;
  std::vector<int64_t> axes;
  std::string expected;
};

TEST(CoalesceReduction, Table) {
  const Dim n = Dim::symbol("N");
  const std::vector<Case> cases = {
      {{65536, 3}, {1}, "ROW[K=65536 (0), R=3 (1)]"},
      {{64, 30000}, {1}, "ROW[K=64 (0), R=30000 (1)]"},
      {{2048, 256}, {0}, "COLUMN[R=2048 (0), K=256 (1)]"},
      {{9, 1024, 1024}, {0, 1, 2}, "ALL[R=9437184 (0,1,2)]"},
      {{9, 1024, 1024}, {2}, "ROW[K=9216 (0,1), R=1024 (2)]"},
      {{2, 3, 4}, {1}, "MIDDLE[K1=2 (0), R=3 (1), K2=4 (2)]"},
      {{2, 3, 4, 5}, {0, 1}, "COLUMN[R=6 (0,1), K=20 (2,3)]"},
      {{2, 3, 4, 5}, {1, 2}, "MIDDLE[K1=2 (0), R=12 (1,2), K2=5 (3)]"},
      // Extent-1 axes play either role, so they never split a group.
      {{2, 1, 3, 1, 4}, {2, 4}, "ROW[K=2 (0), R=12 (2,4)]"},
      {{8, 1, 16}, {1}, "none"},
      {{1, 1}, {0, 1}, "none"},
      // NCHW batch-norm statistics over N, H, W: reduce W*H first (MIDDLE), then N (COLUMN).
      {{8, 16, 5, 5}, {0, 2, 3}, "ROW[K=128 (0,1), R=25 (2,3)] ; COLUMN[R=8 (0), K=16 (1)]"},
      {{2, 3, 4, 5}, {0, 2}, "MIDDLE[K1=6 (0,1), R=4 (2), K2=5 (3)] ; COLUMN[R=2 (0), K=15 (1,3)]"},
      // A short innermost reduced run under many more reduced elements goes last, over the
      // small result of the others (GroupNorm channels-last: [S, G, C/G] over S and C/G).
      {{1, 4096, 32, 4}, {1, 3}, "COLUMN[R=4096 (1), K=128 (2,3)] ; ROW[K=32 (2), R=4 (3)]"},
      {{2, 100, 8, 16},
       {1, 3},
       "MIDDLE[K1=2 (0), R=100 (1), K2=128 (2,3)] ; ROW[K=16 (0,2), R=16 (3)]"},
      {{8, 16, 4, 4}, {0, 2, 3}, "ROW[K=128 (0,1), R=16 (2,3)] ; COLUMN[R=8 (0), K=16 (1)]"},
      {{64, 16, 4, 4}, {0, 2, 3}, "COLUMN[R=64 (0), K=256 (1,2,3)] ; ROW[K=16 (1), R=16 (2,3)]"},
      {{4096, 32, 17}, {0, 2}, "ROW[K=131072 (0,1), R=17 (2)] ; COLUMN[R=4096 (0), K=32 (1)]"},
      // Symbolic extents fold into products.
      {{n, 64}, {1}, "ROW[K=N (0), R=64 (1)]"},
      {{n, 4, 64}, {0, 1}, "COLUMN[R=4*N (0,1), K=64 (2)]"},
      // Empty tensors keep their axes: extent 0 is not 1.
      {{0, 5}, {1}, "ROW[K=0 (0), R=5 (1)]"},
      {{3}, {0}, "ALL[R=3 (0)]"},
      {{2, 3}, {}, "none"},
      {{2, 3}, {1, 0}, "error: reduction axes must be sorted, unique and within the rank"},
      {{2, 3}, {2}, "error: reduction axes must be sorted, unique and within the rank"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(steps(c.shape, c.axes), c.expected) << shape_to_string(c.shape);
  }
}

} // namespace
} // namespace weft::kernel
