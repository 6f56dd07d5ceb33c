#include "tests/testing/kernels.h"

namespace weft::testing {

using kernel::AffineExpr;
using kernel::Buffer;
using kernel::BufferRole;
using kernel::Combine;
using kernel::ExprNode;
using kernel::ExprOp;
using kernel::Kernel;
using kernel::Statement;

namespace {

ExprNode load(int access) { return {ExprOp::kLoad, DType::kF32, {}, access, 0.0}; }
ExprNode constant(double v) { return {ExprOp::kConstant, DType::kF32, {}, -1, v}; }
AffineExpr it(int i) { return AffineExpr::iterator(i); }

Statement init(std::vector<Dim> domain, kernel::Access write, double value) {
  Statement s;
  s.name = "init";
  s.domain = std::move(domain);
  s.write = std::move(write);
  s.expr = {constant(value)};
  return s;
}

Statement update(std::vector<Dim> domain, kernel::Access write, Combine c, kernel::Access read) {
  Statement s;
  s.name = "update";
  s.domain = std::move(domain);
  s.write = std::move(write);
  s.combine = c;
  s.reads = {std::move(read)};
  s.expr = {load(0)};
  return s;
}

} // namespace

Kernel row_sum_kernel(Dim rows, Dim cols) {
  Kernel k;
  k.name = "row_sum";
  k.buffers = {Buffer{"x", DType::kF32, {rows, cols}, BufferRole::kInput},
               Buffer{"y", DType::kF32, {rows}, BufferRole::kOutput}};
  k.statements = {init({rows}, {1, {it(0)}}, 0.0),
                  update({rows, cols}, {1, {it(0)}}, Combine::kSum, {0, {it(0), it(1)}})};
  return k;
}

Kernel copy_kernel(int64_t rows, int64_t columns, bool transposed) {
  Kernel k;
  k.name = "transpose";
  k.buffers = {Buffer{"x",
                      DType::kF32,
                      {transposed ? columns : rows, transposed ? rows : columns},
                      BufferRole::kInput},
               Buffer{"y", DType::kF32, {rows, columns}, BufferRole::kOutput}};
  Statement st;
  st.name = "transpose";
  st.domain = {rows, columns};
  st.write = kernel::Access(1, {it(0), it(1)});
  st.reads = {transposed ? kernel::Access(0, {it(1), it(0)}) : kernel::Access(0, {it(0), it(1)})};
  st.expr = {load(0)};
  k.statements = {st};
  return k;
}

Kernel half_add_kernel(int64_t rows, int64_t columns) {
  Kernel k;
  k.name = "half_add";
  k.buffers = {Buffer{"x", DType::kF32, {rows, columns}, BufferRole::kInput},
               Buffer{"h", DType::kF16, {rows, columns}, BufferRole::kInput},
               Buffer{"y", DType::kF16, {rows, columns}, BufferRole::kOutput}};
  Statement st;
  st.name = "add";
  st.domain = {rows, columns};
  st.write = kernel::Access(2, {it(0), it(1)});
  st.reads = {kernel::Access(0, {it(0), it(1)}), kernel::Access(1, {it(0), it(1)})};
  st.expr = {load(0),
             {ExprOp::kCast, DType::kF16, {0}},
             {ExprOp::kLoad, DType::kF16, {}, 1},
             {ExprOp::kAdd, DType::kF16, {1, 2}}};
  k.statements = {st};
  return k;
}

Kernel column_sum_kernel(Dim rows, Dim cols) {
  Kernel k;
  k.name = "column_sum";
  k.buffers = {Buffer{"x", DType::kF32, {rows, cols}, BufferRole::kInput},
               Buffer{"y", DType::kF32, {cols}, BufferRole::kOutput}};
  // Iterators: i0 over R (outer), i1 over K (inner), as the data is laid out.
  k.statements = {init({cols}, {1, {it(0)}}, 0.0),
                  update({rows, cols}, {1, {it(1)}}, Combine::kSum, {0, {it(0), it(1)}})};
  return k;
}

Kernel all_max_kernel(Dim n) {
  Kernel k;
  k.name = "all_max";
  k.buffers = {Buffer{"x", DType::kF32, {n}, BufferRole::kInput},
               Buffer{"y", DType::kF32, {}, BufferRole::kOutput}};
  k.statements = {init({}, {1, {}}, kernel::combine_identity(Combine::kMax)),
                  update({n}, {1, {}}, Combine::kMax, {0, {it(0)}})};
  return k;
}

Kernel reduce_kernel(const std::string& name, const std::vector<Dim>& shape,
                     const std::vector<bool>& reduced, Combine c) {
  std::vector<Dim> kept;
  std::vector<AffineExpr> out_index;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) continue;
    kept.push_back(shape[i]);
    out_index.push_back(it(static_cast<int>(i)));
  }
  std::vector<AffineExpr> init_index, in_index;
  for (size_t i = 0; i < kept.size(); ++i)
    init_index.push_back(it(static_cast<int>(i)));
  for (size_t i = 0; i < shape.size(); ++i)
    in_index.push_back(it(static_cast<int>(i)));
  Kernel k;
  k.name = name;
  k.buffers = {Buffer{"x", DType::kF32, shape, BufferRole::kInput},
               Buffer{"y", DType::kF32, kept, BufferRole::kOutput}};
  k.statements = {init(kept, {1, init_index}, kernel::combine_identity(c)),
                  update(shape, {1, out_index}, c, {0, in_index})};
  return k;
}

Kernel bias_add_kernel(Dim rows, Dim cols) {
  Kernel k;
  k.name = "bias_add";
  k.buffers = {Buffer{"x", DType::kF32, {rows, cols}, BufferRole::kInput},
               Buffer{"b", DType::kF32, {cols}, BufferRole::kInput},
               Buffer{"z", DType::kF32, {rows, cols}, BufferRole::kOutput}};
  Statement s;
  s.name = "add";
  s.domain = {rows, cols};
  s.write = {2, {it(0), it(1)}};
  s.reads = {{0, {it(0), it(1)}}, {1, {it(1)}}};
  s.expr = {load(0), load(1), {ExprOp::kAdd, DType::kF32, {0, 1}, -1, 0.0}};
  k.statements = {s};
  return k;
}

Kernel gather_rows_kernel(Dim rows, Dim cols, Dim n) {
  Kernel k;
  k.name = "gather_rows";
  k.buffers = {Buffer{"x", DType::kF32, {rows, cols}, BufferRole::kInput},
               Buffer{"idx", DType::kI64, {n}, BufferRole::kInput},
               Buffer{"y", DType::kF32, {n, cols}, BufferRole::kOutput}};
  Statement s;
  s.name = "gather";
  s.domain = {n, cols};
  s.write = {2, {it(0), it(1)}};
  s.reads = {{1, {it(0)}},
             {0, {AffineExpr::constant_of(0), it(1)}, {{0, 0, kernel::IndexWrap::kNegative}}}};
  s.expr = {{ExprOp::kLoad, DType::kI64, {}, 0, 0.0}, load(1)};
  k.statements = {s};
  return k;
}

Kernel scatter_add_rows_kernel(Dim rows, Dim cols, Dim n) {
  Kernel k;
  k.name = "scatter_add_rows";
  k.buffers = {Buffer{"x", DType::kF32, {n, cols}, BufferRole::kInput},
               Buffer{"idx", DType::kI64, {n}, BufferRole::kInput},
               Buffer{"y", DType::kF32, {rows, cols}, BufferRole::kOutput}};
  Statement s;
  s.name = "scatter";
  s.domain = {n, cols};
  s.write = {2, {AffineExpr::constant_of(0), it(1)}, {{0, 0, kernel::IndexWrap::kNegative}}};
  s.combine = Combine::kSum;
  s.reads = {{1, {it(0)}}, {0, {it(0), it(1)}}};
  s.expr = {{ExprOp::kLoad, DType::kI64, {}, 0, 0.0}, load(1)};
  k.statements = {init({rows, cols}, {2, {it(0), it(1)}}, 0.0), s};
  return k;
}

} // namespace weft::testing
