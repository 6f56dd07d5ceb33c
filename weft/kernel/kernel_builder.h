// Builders for kernels and statements, shared by the lowering functions.
#pragma once

#include <string>
#include <vector>

#include "weft/kernel/lower_node.h"

namespace weft::kernel {

class KernelBuilder {
public:
  explicit KernelBuilder(std::string name) { bound_.kernel.name = std::move(name); }

  // A buffer holding "value", viewed with "shape" (the value's own shape when empty).
  int buffer(const Value* value, BufferRole role, const Shape& shape = {});
  int temp(DType dtype, const Shape& shape);
  void add(Statement s) { bound_.kernel.statements.push_back(std::move(s)); }
  const Buffer& buffer_at(int b) const { return bound_.kernel.buffers[static_cast<size_t>(b)]; }
  Result<BoundKernel> finish();
  // finish(), as the lowering of a node into this one kernel.
  Result<LoweredNode> lowered();

private:
  BoundKernel bound_;
};

class StatementBuilder {
public:
  StatementBuilder(std::string name, std::vector<Dim> domain);

  int load(int buffer, std::vector<AffineExpr> index, DType dtype);
  // A load whose index along some dims comes from earlier nodes ("index" is 0 there).
  int gather(int buffer, std::vector<AffineExpr> index, std::vector<IndirectIndex> indirect,
             DType dtype);
  int constant(double value, DType dtype);
  // The extent "d" as a value of "dtype": a constant when static, else an ExprOp::kExtent.
  int extent(const Dim& d, DType dtype);
  // The value of iterator "i", as an i64.
  int iterator(int i);
  int op(ExprOp op, DType dtype, std::vector<int> operands);
  DType dtype_of(int node) const { return s_.expr[static_cast<size_t>(node)].dtype; }
  // The statement storing node "value" (made the last node) at "index" of "buffer".
  Statement store(int value, int buffer, std::vector<AffineExpr> index, Combine c = Combine::kNone);

private:
  Statement s_;
};

// The type arithmetic accumulates in: f32 for f16 and bf16, the type itself otherwise.
DType accumulator_type(DType t);
// Number of elements of a static shape.
Dim num_elements(const Shape& s);
// A load of "buffer" (stored as "stored") converted to "t".
int load_as(StatementBuilder& b, int buffer, std::vector<AffineExpr> index, DType stored, DType t);

// "v" minus the zero point "zp" (absent: v itself), in "t": a scalar or one-element zero
// point applies everywhere, a vector one at "index" (ConvInteger, MatMulInteger).
int subtract_zero_point(KernelBuilder& k, StatementBuilder& b, const Value* zp, int v,
                        const AffineExpr& index, DType t);

// A scale of a quantized product: one element, or a vector read at "index" (QLinearConv's
// per output channel weight scales, QLinearMatMul's per row and per column ones).
struct QuantScale {
  const Value* value = nullptr;
  AffineExpr index;
};

// out = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero), elementwise
// over "shape", both buffers read at "index": the end of a quantized product (QLinearMatMul,
// QLinearConv); y_scale and y_zero (absent: 0) are per tensor; "to" is u8 or i8.
void add_requantize(KernelBuilder& k, int acc, const QuantScale& a_scale, const QuantScale& b_scale,
                    const Value* y_scale, const Value* y_zero, int out, const Shape& shape,
                    const std::vector<AffineExpr>& index, DType to);

// Iterators 0..n-1 as index expressions.
std::vector<AffineExpr> iterators(size_t n);
// Index of an operand of shape "in" broadcast (numpy, right-aligned) to the domain "out".
std::vector<AffineExpr> broadcast_index(const Shape& in, const Shape& out);

} // namespace weft::kernel
