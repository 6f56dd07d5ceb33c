#include "weft/kernel/kernel_text.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace weft::kernel {

namespace {

bool is_binary(ExprOp op) { return expr_op_arity(op) == 2; }

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

std::string dims_text(const std::vector<Dim>& dims) { return shape_to_string(dims); }

std::string access_difference(const Access& a, const Access& b) {
  if (a.buffer != b.buffer) return fmt::format("buffer #{} vs #{}", a.buffer, b.buffer);
  if (a.index.size() != b.index.size()) return "the number of indices";
  for (size_t d = 0; d < a.index.size(); ++d) {
    if (!(a.index[d] == b.index[d]))
      return fmt::format("index {}: {} vs {}", d, print_affine(a.index[d]),
                         print_affine(b.index[d]));
  }
  if (a.indirect != b.indirect) return "the indirect indices";
  return "";
}

std::string node_difference(const ExprNode& a, const ExprNode& b) {
  if (a.op != b.op) return fmt::format("op {} vs {}", expr_op_name(a.op), expr_op_name(b.op));
  if (a.dtype != b.dtype)
    return fmt::format("dtype {} vs {}", dtype_name(a.dtype), dtype_name(b.dtype));
  if (a.operands != b.operands)
    return fmt::format("operands {} vs {}", fmt::join(a.operands, ","), fmt::join(b.operands, ","));
  bool uses_access = a.op == ExprOp::kLoad || a.op == ExprOp::kIterator;
  if (uses_access && a.access != b.access)
    return fmt::format("access {} vs {}", a.access, b.access);
  if (a.op == ExprOp::kConstant && !same_value(a.value, b.value))
    return fmt::format("value {} vs {}", a.value, b.value);
  if (a.op == ExprOp::kExtent && !(a.extent == b.extent))
    return fmt::format("extent {} vs {}", a.extent.to_string(), b.extent.to_string());
  return "";
}

std::string statement_difference(const Statement& a, const Statement& b) {
  if (a.name != b.name) return fmt::format("name '{}' vs '{}'", a.name, b.name);
  if (a.domain != b.domain)
    return fmt::format("domain {} vs {}", dims_text(a.domain), dims_text(b.domain));
  if (a.guards != b.guards) return "the guards";
  if (std::string d = access_difference(a.write, b.write); !d.empty()) return "write: " + d;
  if (a.combine != b.combine)
    return fmt::format("combine {} vs {}", combine_spelling(a.combine),
                       combine_spelling(b.combine));
  if (a.reads.size() != b.reads.size())
    return fmt::format("{} reads vs {}", a.reads.size(), b.reads.size());
  for (size_t r = 0; r < a.reads.size(); ++r) {
    if (std::string d = access_difference(a.reads[r], b.reads[r]); !d.empty())
      return fmt::format("read {}: {}", r, d);
  }
  if (a.expr.size() != b.expr.size())
    return fmt::format("{} nodes vs {}", a.expr.size(), b.expr.size());
  for (size_t n = 0; n < a.expr.size(); ++n) {
    if (std::string d = node_difference(a.expr[n], b.expr[n]); !d.empty())
      return fmt::format("node {}: {}", n, d);
  }
  return "";
}

std::string buffer_difference(const Buffer& a, const Buffer& b) {
  if (a.name != b.name) return fmt::format("name '{}' vs '{}'", a.name, b.name);
  if (a.dtype != b.dtype)
    return fmt::format("dtype {} vs {}", dtype_name(a.dtype), dtype_name(b.dtype));
  if (a.shape != b.shape)
    return fmt::format("shape {} vs {}", shape_to_string(a.shape), shape_to_string(b.shape));
  if (a.role != b.role) return "role";
  if (a.view_group != b.view_group)
    return fmt::format("view group {} vs {}", a.view_group, b.view_group);
  return "";
}

} // namespace

std::string kernel_difference(const Kernel& a, const Kernel& b) {
  if (a.name != b.name) return fmt::format("kernel name '{}' vs '{}'", a.name, b.name);
  if (a.buffers.size() != b.buffers.size())
    return fmt::format("{} buffers vs {}", a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    if (std::string d = buffer_difference(a.buffers[i], b.buffers[i]); !d.empty())
      return fmt::format("buffer {}: {}", i, d);
  }
  if (a.statements.size() != b.statements.size())
    return fmt::format("{} statements vs {}", a.statements.size(), b.statements.size());
  for (size_t i = 0; i < a.statements.size(); ++i) {
    if (std::string d = statement_difference(a.statements[i], b.statements[i]); !d.empty())
      return fmt::format("statement {} ({}): {}", i, a.statements[i].name, d);
  }
  return "";
}

std::string_view expr_op_infix(ExprOp op) {
  switch (op) {
    case ExprOp::kAdd: return "+";
    case ExprOp::kSub: return "-";
    case ExprOp::kMul: return "*";
    case ExprOp::kDiv: return "/";
    case ExprOp::kLt: return "<";
    case ExprOp::kLe: return "<=";
    case ExprOp::kGt: return ">";
    case ExprOp::kGe: return ">=";
    case ExprOp::kEq: return "==";
    case ExprOp::kAnd: return "&&";
    case ExprOp::kOr: return "||";
    case ExprOp::kXor: return "^";
    case ExprOp::kShiftLeft: return "<<";
    case ExprOp::kShiftRight: return ">>";
    default: return "";
  }
}

std::string_view combine_spelling(Combine c) {
  switch (c) {
    case Combine::kNone: return "=";
    case Combine::kSum: return "+=";
    case Combine::kProd: return "*=";
    case Combine::kMax: return "max=";
    case Combine::kMin: return "min=";
    case Combine::kShiftMax: return "shiftmax=";
  }
  return "?";
}

std::optional<DType> natural_dtype(ExprOp op, const std::vector<DType>& operands,
                                   DType buffer_dtype) {
  switch (op) {
    case ExprOp::kLoad: return buffer_dtype;
    case ExprOp::kIterator: return DType::kI64;
    case ExprOp::kConstant:
    case ExprOp::kExtent:
    case ExprOp::kCast: return std::nullopt;
    case ExprOp::kLt:
    case ExprOp::kLe:
    case ExprOp::kGt:
    case ExprOp::kGe:
    case ExprOp::kEq:
    case ExprOp::kIsNan:
    case ExprOp::kIsInf: return DType::kBool;
    case ExprOp::kSelect:
      if (operands.size() > 1) return operands[1];
      return std::nullopt;
    default:
      if (!operands.empty()) return operands[0];
      return std::nullopt;
  }
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

bool is_symbol_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("_*+/()?.-").find(c) != std::string_view::npos;
}

int context_sibling(ExprOp parent, int position) {
  if (is_binary(parent) && (position == 0 || position == 1)) return 1 - position;
  if (parent == ExprOp::kSelect && (position == 1 || position == 2)) return 3 - position;
  return -1;
}

std::optional<DType> context_dtype(ExprOp parent, int position, std::optional<DType> sibling) {
  if (parent == ExprOp::kSelect && position == 0) return DType::kBool;
  if (context_sibling(parent, position) < 0) return std::nullopt;
  return sibling;
}

} // namespace weft::kernel
