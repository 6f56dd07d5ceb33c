#include "weft/kernel/kernel_builder.h"

#include <fmt/format.h>

namespace weft::kernel {

int KernelBuilder::buffer(const Value* value, BufferRole role, const Shape& shape) {
  Kernel& k = bound_.kernel;
  k.buffers.push_back({fmt::format("b{}", k.buffers.size()), value->type.dtype,
                       shape.empty() && value->type.shape ? *value->type.shape : shape, role});
  bound_.values.push_back(value);
  return static_cast<int>(k.buffers.size()) - 1;
}

int KernelBuilder::temp(DType dtype, const Shape& shape) {
  Kernel& k = bound_.kernel;
  k.buffers.push_back({fmt::format("t{}", k.buffers.size()), dtype, shape, BufferRole::kTemp});
  bound_.values.push_back(nullptr);
  return static_cast<int>(k.buffers.size()) - 1;
}

Result<BoundKernel> KernelBuilder::finish() {
  Status s = verify_kernel(bound_.kernel);
  if (!s.ok()) {
    return Status::error(fmt::format("internal error: lowering built an invalid kernel: {}\n{}",
                                     s.message(), print_kernel(bound_.kernel)));
  }
  return std::move(bound_);
}

Result<LoweredNode> KernelBuilder::lowered() {
  WEFT_ASSIGN_OR_RETURN(BoundKernel bound, finish());
  LoweredNode node;
  node.kernels.push_back(std::move(bound));
  return node;
}

namespace {

// "index" without terms of coefficient 0 (AffineExpr's invariant), which lowerings make from
// extents of 0: a convolution of 0 output channels a group indexes them g*0 + m.
std::vector<AffineExpr> nonzero_terms(std::vector<AffineExpr> index) {
  for (AffineExpr& e : index)
    std::erase_if(e.terms, [](const std::pair<int, int64_t>& t) { return t.second == 0; });
  return index;
}

} // namespace

StatementBuilder::StatementBuilder(std::string name, std::vector<Dim> domain) {
  s_.name = std::move(name);
  s_.domain = std::move(domain);
}

int StatementBuilder::load(int buffer, std::vector<AffineExpr> index, DType dtype) {
  return gather(buffer, std::move(index), {}, dtype);
}

int StatementBuilder::gather(int buffer, std::vector<AffineExpr> index,
                             std::vector<IndirectIndex> indirect, DType dtype) {
  s_.reads.push_back({buffer, nonzero_terms(std::move(index)), std::move(indirect)});
  s_.expr.push_back({ExprOp::kLoad, dtype, {}, static_cast<int>(s_.reads.size()) - 1, 0.0});
  return static_cast<int>(s_.expr.size()) - 1;
}

int StatementBuilder::constant(double value, DType dtype) {
  s_.expr.push_back({ExprOp::kConstant, dtype, {}, -1, value});
  return static_cast<int>(s_.expr.size()) - 1;
}

int StatementBuilder::extent(const Dim& d, DType dtype) {
  if (d.is_static()) return constant(static_cast<double>(d.value()), dtype);
  s_.expr.push_back({ExprOp::kExtent, dtype, {}, -1, 0.0, d});
  return static_cast<int>(s_.expr.size()) - 1;
}

int StatementBuilder::iterator(int i) {
  s_.expr.push_back({ExprOp::kIterator, DType::kI64, {}, i, 0.0});
  return static_cast<int>(s_.expr.size()) - 1;
}

int StatementBuilder::op(ExprOp op, DType dtype, std::vector<int> operands) {
  s_.expr.push_back({op, dtype, std::move(operands), -1, 0.0});
  return static_cast<int>(s_.expr.size()) - 1;
}

Statement StatementBuilder::store(int value, int buffer, std::vector<AffineExpr> index, Combine c) {
  if (value != static_cast<int>(s_.expr.size()) - 1)
    value = op(ExprOp::kCast, dtype_of(value), {value});
  s_.write = {buffer, nonzero_terms(std::move(index))};
  s_.combine = c;
  return s_;
}

DType accumulator_type(DType t) { return t == DType::kF16 || t == DType::kBF16 ? DType::kF32 : t; }

Dim num_elements(const Shape& s) {
  Dim n = 1;
  for (const Dim& d : s)
    n = dim_mul(n, d);
  return n;
}

int load_as(StatementBuilder& b, int buffer, std::vector<AffineExpr> index, DType stored, DType t) {
  int v = b.load(buffer, std::move(index), stored);
  return stored == t ? v : b.op(ExprOp::kCast, t, {v});
}

int subtract_zero_point(KernelBuilder& k, StatementBuilder& b, const Value* zp, int v,
                        const AffineExpr& index, DType t) {
  if (!zp) return v;
  Dim count = num_elements(*zp->type.shape);
  bool single = count.value() == 1;
  int buf = k.buffer(zp, BufferRole::kInput, {count});
  int z = load_as(b, buf, {single ? AffineExpr::constant_of(0) : index}, zp->type.dtype, t);
  return b.op(ExprOp::kSub, t, {v, z});
}

void add_requantize(KernelBuilder& k, int acc, const QuantScale& a_scale, const QuantScale& b_scale,
                    const Value* y_scale, const Value* y_zero, int out, const Shape& shape,
                    const std::vector<AffineExpr>& index, DType to) {
  constexpr DType kF32 = DType::kF32;
  StatementBuilder b("requantize", shape);
  auto load = [&](const QuantScale& s) {
    Dim count = num_elements(*s.value->type.shape);
    bool single = count.value() == 1;
    return load_as(b, k.buffer(s.value, BufferRole::kInput, {count}),
                   {single ? AffineExpr::constant_of(0) : s.index}, s.value->type.dtype, kF32);
  };
  int v = b.op(ExprOp::kCast, kF32, {b.load(acc, index, k.buffer_at(acc).dtype)});
  int scale = b.op(ExprOp::kDiv, kF32,
                   {b.op(ExprOp::kMul, kF32, {load(a_scale), load(b_scale)}), load({y_scale, {}})});
  int q = b.op(ExprOp::kRound, kF32, {b.op(ExprOp::kMul, kF32, {v, scale})});
  if (y_zero) q = b.op(ExprOp::kAdd, kF32, {q, load({y_zero, {}})});
  double lo = to == DType::kU8 ? 0 : -128, hi = to == DType::kU8 ? 255 : 127;
  q = b.op(ExprOp::kMin, kF32,
           {b.op(ExprOp::kMax, kF32, {q, b.constant(lo, kF32)}), b.constant(hi, kF32)});
  k.add(b.store(b.op(ExprOp::kCast, to, {q}), out, index));
}

std::vector<AffineExpr> iterators(size_t n) {
  std::vector<AffineExpr> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(AffineExpr::iterator(static_cast<int>(i)));
  return out;
}

std::vector<AffineExpr> broadcast_index(const Shape& in, const Shape& out) {
  std::vector<AffineExpr> index;
  size_t offset = out.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j) {
    bool broadcast = in[j].is_static() && in[j].value() == 1 && !(out[offset + j] == in[j]);
    index.push_back(broadcast ? AffineExpr::constant_of(0)
                              : AffineExpr::iterator(static_cast<int>(offset + j)));
  }
  return index;
}

} // namespace weft::kernel
