// Small kernels for tests of the kernel, poly and codegen layers.
#pragma once

#include <string>
#include <vector>

#include "weft/kernel/kernel.h"

namespace weft::testing {

// y[k] = sum_r x[k, r]: a ROW reduction with an init statement, over "rows" x "cols".
kernel::Kernel row_sum_kernel(Dim rows, Dim cols);
// y[i, j] = x[j, i] ("transposed"), or x[i, j]: a copy over "rows" x "columns".
kernel::Kernel copy_kernel(int64_t rows, int64_t columns, bool transposed);
// y[i, j] = Cast(x[i, j], f16) + h[i, j], x f32, h and y f16: the arithmetic in f16 (its
// compute type f32), each value rounded where it is cast or stored.
kernel::Kernel half_add_kernel(int64_t rows, int64_t columns);
// y[k] = sum_r x[r, k]: a COLUMN reduction.
kernel::Kernel column_sum_kernel(Dim rows, Dim cols);
// y[] = max_r x[r]: an ALL reduction into a scalar.
kernel::Kernel all_max_kernel(Dim n);
// y = x combined by "c" over the axes of "shape" marked in "reduced", y starting from the
// identity; y keeps the other axes in order. {false, true} is a ROW reduction, {true} ALL,
// {true, false} COLUMN, {false, true, false} MIDDLE.
kernel::Kernel reduce_kernel(const std::string& name, const std::vector<Dim>& shape,
                             const std::vector<bool>& reduced, kernel::Combine c);
// z[i, j] = x[i, j] + b[j]: elementwise with a broadcast operand.
kernel::Kernel bias_add_kernel(Dim rows, Dim cols);
// y[i, j] = x[idx[i], j], negative indices counting from the end: an indirect load.
kernel::Kernel gather_rows_kernel(Dim rows, Dim cols, Dim n);
// y = 0, then y[idx[i], j] += x[i, j]: an indirect (scatter) write that combines.
kernel::Kernel scatter_add_rows_kernel(Dim rows, Dim cols, Dim n);

} // namespace weft::testing
