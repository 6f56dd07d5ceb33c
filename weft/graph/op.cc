#include "weft/graph/op.h"

#include <array>
#include <unordered_map>

namespace weft {
namespace {

constexpr std::array kNames = {
    std::string_view("(unknown op)"),
#define WEFT_OP(id, name) std::string_view(name),
#include "weft/graph/ops.inc"
#undef WEFT_OP
};

} // namespace

std::string_view op_name(Op op) { return kNames[static_cast<size_t>(op)]; }

Op op_from_name(std::string_view name) {
  static const std::unordered_map<std::string_view, Op> by_name = [] {
    std::unordered_map<std::string_view, Op> m;
    for (size_t i = 1; i < kNames.size(); ++i) m.emplace(kNames[i], static_cast<Op>(i));
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? Op::kUnknown : it->second;
}

bool is_reduce_op(Op op) {
  switch (op) {
    case Op::kReduceL1:
    case Op::kReduceL2:
    case Op::kReduceLogSum:
    case Op::kReduceLogSumExp:
    case Op::kReduceMax:
    case Op::kReduceMean:
    case Op::kReduceMin:
    case Op::kReduceProd:
    case Op::kReduceSum:
    case Op::kReduceSumSquare: return true;
    default: return false;
  }
}

} // namespace weft
