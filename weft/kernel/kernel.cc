#include "weft/kernel/kernel.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace weft::kernel {

namespace {

struct OpInfo {
  ExprOp op;
  std::string_view name;
  int arity;
};

// clang-format off
constexpr OpInfo kOps[] = {
    {ExprOp::kLoad, "load", 0}, {ExprOp::kConstant, "const", 0}, {ExprOp::kExtent, "extent", 0},
    {ExprOp::kCast, "cast", 1}, {ExprOp::kIterator, "iterator", 0}, {ExprOp::kNeg, "neg", 1},
    {ExprOp::kAbs, "abs", 1}, {ExprOp::kExp, "exp", 1}, {ExprOp::kShiftedExp, "shifted_exp", 1},
    {ExprOp::kLog, "log", 1}, {ExprOp::kSqrt, "sqrt", 1}, {ExprOp::kRsqrt, "rsqrt", 1},
    {ExprOp::kTanh, "tanh", 1}, {ExprOp::kSigmoid, "sigmoid", 1}, {ExprOp::kErf, "erf", 1},
    {ExprOp::kFloor, "floor", 1}, {ExprOp::kCeil, "ceil", 1}, {ExprOp::kRound, "round", 1},
    {ExprOp::kSin, "sin", 1}, {ExprOp::kCos, "cos", 1}, {ExprOp::kTan, "tan", 1},
    {ExprOp::kAsin, "asin", 1}, {ExprOp::kAcos, "acos", 1}, {ExprOp::kAtan, "atan", 1},
    {ExprOp::kSinh, "sinh", 1}, {ExprOp::kCosh, "cosh", 1}, {ExprOp::kAsinh, "asinh", 1},
    {ExprOp::kAcosh, "acosh", 1}, {ExprOp::kAtanh, "atanh", 1}, {ExprOp::kNot, "not", 1},
    {ExprOp::kIsNan, "isnan", 1}, {ExprOp::kIsInf, "isinf", 1}, {ExprOp::kAdd, "add", 2},
    {ExprOp::kSub, "sub", 2}, {ExprOp::kMul, "mul", 2}, {ExprOp::kDiv, "div", 2},
    {ExprOp::kMax, "max", 2}, {ExprOp::kMin, "min", 2}, {ExprOp::kPow, "pow", 2},
    {ExprOp::kMod, "mod", 2}, {ExprOp::kFmod, "fmod", 2}, {ExprOp::kLt, "lt", 2},
    {ExprOp::kLe, "le", 2}, {ExprOp::kGt, "gt", 2}, {ExprOp::kGe, "ge", 2},
    {ExprOp::kEq, "eq", 2}, {ExprOp::kAnd, "and", 2}, {ExprOp::kOr, "or", 2},
    {ExprOp::kXor, "xor", 2}, {ExprOp::kShiftLeft, "shl", 2}, {ExprOp::kShiftRight, "shr", 2},
    {ExprOp::kSelect, "select", 3},
};
// clang-format on

const OpInfo& info(ExprOp op) {
  for (const OpInfo& i : kOps) {
    if (i.op == op) return i;
  }
  return kOps[0];
}

Status check_access(const Kernel& k, const Statement& s, const Access& a) {
  if (a.buffer < 0 || a.buffer >= static_cast<int>(k.buffers.size())) {
    return Status::error(
        fmt::format("{}: access to buffer #{} which does not exist", s.name, a.buffer));
  }
  const Buffer& b = k.buffers[static_cast<size_t>(a.buffer)];
  if (a.index.size() != b.shape.size()) {
    return Status::error(fmt::format("{}: access to {} has {} indices for rank {}", s.name, b.name,
                                     a.index.size(), b.shape.size()));
  }
  for (const AffineExpr& e : a.index) {
    for (auto [iter, coeff] : e.terms) {
      if (iter < 0 || iter >= static_cast<int>(s.domain.size()) || coeff == 0) {
        return Status::error(fmt::format("{}: bad term in index {}", s.name, print_affine(e)));
      }
    }
  }
  for (size_t i = 0; i < a.indirect.size(); ++i) {
    const IndirectIndex& ind = a.indirect[i];
    if (ind.dim < 0 || ind.dim >= static_cast<int>(a.index.size()) ||
        (i > 0 && ind.dim <= a.indirect[i - 1].dim) ||
        !(a.index[static_cast<size_t>(ind.dim)] == AffineExpr::constant_of(0))) {
      return Status::error(
          fmt::format("{}: bad indirect index along dim {} of {}", s.name, ind.dim, b.name));
    }
  }
  return Status();
}

bool is_integer(DType t) { return dtype_is_signed_int(t) || dtype_is_unsigned_int(t); }

// Does every indirect index of "a" come from an integer node before node "before"?
Status check_indirect(const Statement& s, const Access& a, int before) {
  for (const IndirectIndex& ind : a.indirect) {
    if (ind.node < 0 || ind.node >= before ||
        !is_integer(s.expr[static_cast<size_t>(ind.node)].dtype)) {
      return Status::error(
          fmt::format("{}: an access takes its index from node {}, not an earlier integer node",
                      s.name, ind.node));
    }
  }
  return Status();
}

} // namespace

const IndirectIndex* Access::indirect_at(int d) const {
  for (const IndirectIndex& ind : indirect) {
    if (ind.dim == d) return &ind;
  }
  return nullptr;
}

int64_t AffineExpr::coefficient(int iter) const {
  for (auto [i, c] : terms) {
    if (i == iter) return c;
  }
  return 0;
}

bool Statement::is_reduced(int i) const {
  if (!write.indirect.empty()) return false;
  return std::none_of(write.index.begin(), write.index.end(),
                      [&](const AffineExpr& e) { return e.coefficient(i) != 0; });
}

std::string_view expr_op_name(ExprOp op) { return info(op).name; }
int expr_op_arity(ExprOp op) { return info(op).arity; }

double combine_identity(Combine c) {
  switch (c) {
    case Combine::kSum: return 0.0;
    case Combine::kProd: return 1.0;
    case Combine::kMax:
    case Combine::kShiftMax: return -std::numeric_limits<double>::infinity();
    case Combine::kMin: return std::numeric_limits<double>::infinity();
    case Combine::kNone: break;
  }
  return 0.0;
}

std::string print_affine(const AffineExpr& e) {
  std::string out;
  for (auto [iter, coeff] : e.terms) {
    std::string term = coeff == 1 ? fmt::format("i{}", iter) : fmt::format("{}*i{}", coeff, iter);
    out += out.empty() ? term : " + " + term;
  }
  if (e.constant != 0 || out.empty()) {
    out += out.empty() ? std::to_string(e.constant) : fmt::format(" + {}", e.constant);
  }
  return out;
}

Status verify_kernel(const Kernel& k) {
  for (const Buffer& b : k.buffers) {
    if (!b.aliased()) continue;
    size_t g = static_cast<size_t>(b.view_group);
    if (g >= k.buffers.size() || k.buffers[g].view_group != b.view_group)
      return Status::error(fmt::format("buffer {}: view group {} does not start at a buffer of its "
                                       "own",
                                       b.name, b.view_group));
  }
  for (const Statement& s : k.statements) {
    WEFT_RETURN_IF_ERROR(check_access(k, s, s.write));
    const Buffer& out = k.buffers[static_cast<size_t>(s.write.buffer)];
    if (out.role == BufferRole::kInput) {
      return Status::error(fmt::format("{}: writes input buffer {}", s.name, out.name));
    }
    for (const Access& a : s.reads)
      WEFT_RETURN_IF_ERROR(check_access(k, s, a));
    for (const AffineExpr& g : s.guards) {
      for (auto [iter, coeff] : g.terms) {
        if (iter < 0 || iter >= static_cast<int>(s.domain.size()) || coeff == 0) {
          return Status::error(fmt::format("{}: bad term in guard {}", s.name, print_affine(g)));
        }
      }
    }
    if (s.expr.empty()) return Status::error(s.name + ": empty expression");
    for (size_t n = 0; n < s.expr.size(); ++n) {
      const ExprNode& e = s.expr[n];
      if (static_cast<int>(e.operands.size()) != expr_op_arity(e.op)) {
        return Status::error(fmt::format("{}: node {} ({}) has {} operands", s.name, n,
                                         expr_op_name(e.op), e.operands.size()));
      }
      for (int o : e.operands) {
        if (o < 0 || o >= static_cast<int>(n)) {
          return Status::error(fmt::format("{}: node {} uses a later node", s.name, n));
        }
      }
      if (e.op == ExprOp::kLoad && (e.access < 0 || e.access >= static_cast<int>(s.reads.size()))) {
        return Status::error(fmt::format("{}: node {} loads a missing access", s.name, n));
      }
      if (e.op == ExprOp::kLoad) {
        WEFT_RETURN_IF_ERROR(
            check_indirect(s, s.reads[static_cast<size_t>(e.access)], static_cast<int>(n)));
      }
      if (e.op == ExprOp::kIterator &&
          (e.access < 0 || e.access >= static_cast<int>(s.domain.size()))) {
        return Status::error(fmt::format("{}: node {} reads a missing iterator", s.name, n));
      }
    }
    WEFT_RETURN_IF_ERROR(check_indirect(s, s.write, static_cast<int>(s.expr.size())));
    if (s.expr.back().dtype != out.dtype) {
      return Status::error(fmt::format("{}: stores {} into {} buffer {}", s.name,
                                       dtype_name(s.expr.back().dtype), dtype_name(out.dtype),
                                       out.name));
    }
  }
  return Status();
}

} // namespace weft::kernel
