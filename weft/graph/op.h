// Op identities. Every op a node can be is one enumerator of Op, listed once in ops.inc; the
// passes, lowerings and library matchers compare and key on Op, never on op names, so that a
// misspelt op does not compile instead of silently never matching. Names appear only where
// text meets the graph: the importer (op_from_name) and messages (op_name).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace weft {

enum class Op : uint16_t {
  kUnknown, // a name Weft does not know (the importer refuses such nodes)
#define WEFT_OP(id, name) id,
#include "weft/graph/ops.inc"
#undef WEFT_OP
};

// The name of "op" as models spell it, e.g. "Conv" or "ai.onnx.ml.Binarizer".
std::string_view op_name(Op op);
// The op named "name", or Op::kUnknown.
Op op_from_name(std::string_view name);
// ReduceSum, ReduceMean, ... (the ONNX reductions over axes).
bool is_reduce_op(Op op);

// A node's op: its identity, and for an op Weft does not know, the name it came with. It
// converts to Op (to compare, switch and look up tables); there is deliberately no
// comparison with strings.
class OpType {
public:
  OpType() = default;
  OpType(Op op) : id_(op) {} // NOLINT(google-explicit-constructor): node.op_type = Op::kMul
  explicit OpType(std::string_view name) : id_(op_from_name(name)) {
    if (id_ == Op::kUnknown) unknown_name_ = name;
  }

  operator Op() const { return id_; } // NOLINT(google-explicit-constructor)
  Op id() const { return id_; }
  std::string_view name() const { return id_ == Op::kUnknown ? unknown_name_ : op_name(id_); }

private:
  Op id_ = Op::kUnknown;
  std::string unknown_name_;
};

inline std::ostream& operator<<(std::ostream& out, Op op) { return out << op_name(op); }
inline std::ostream& operator<<(std::ostream& out, const OpType& op) { return out << op.name(); }

} // namespace weft

template <>
struct fmt::formatter<weft::Op> : fmt::formatter<std::string_view> {
  auto format(weft::Op op, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(weft::op_name(op), ctx);
  }
};

template <>
struct fmt::formatter<weft::OpType> : fmt::formatter<std::string_view> {
  auto format(const weft::OpType& op, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(op.name(), ctx);
  }
};
