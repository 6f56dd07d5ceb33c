#include "weft/poly/loop_ast.h"

#include <fmt/format.h>

namespace weft::poly {

namespace {

std::string_view infix(AstExpr::Op op) {
  switch (op) {
    case AstExpr::Op::kAdd: return "+";
    case AstExpr::Op::kSub: return "-";
    case AstExpr::Op::kMul: return "*";
    case AstExpr::Op::kRem: return "%";
    case AstExpr::Op::kLe: return "<=";
    case AstExpr::Op::kLt: return "<";
    case AstExpr::Op::kGe: return ">=";
    case AstExpr::Op::kGt: return ">";
    case AstExpr::Op::kEq: return "==";
    case AstExpr::Op::kAnd: return "&&";
    case AstExpr::Op::kOr: return "||";
    default: return "";
  }
}

void print_node(const AstNode& n, int depth, std::string& out) {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  switch (n.kind) {
    case AstNode::Kind::kBlock:
      for (const AstNode& c : n.children)
        print_node(c, depth, out);
      break;
    case AstNode::Kind::kFor: {
      std::string mark = n.mark == AstNode::Mark::kParallel    ? "  // parallel"
                         : n.mark == AstNode::Mark::kReduction ? "  // reduction"
                                                               : "";
      out += fmt::format("{}for ({} = {}; {}; {} += {}){}\n", pad, n.iterator,
                         print_ast_expr(n.init), print_ast_expr(n.cond), n.iterator, n.step, mark);
      print_node(n.children[0], depth + 1, out);
      break;
    }
    case AstNode::Kind::kIf:
      out += fmt::format("{}if ({})\n", pad, print_ast_expr(n.cond));
      print_node(n.children[0], depth + 1, out);
      if (n.children.size() > 1) {
        out += pad + "else\n";
        print_node(n.children[1], depth + 1, out);
      }
      break;
    case AstNode::Kind::kCall: {
      std::vector<std::string> args;
      for (const AstExpr& a : n.args)
        args.push_back(print_ast_expr(a));
      out += fmt::format("{}S{}({});\n", pad, n.statement, fmt::join(args, ", "));
      break;
    }
  }
}

} // namespace

std::string print_ast_expr(const AstExpr& e) {
  switch (e.kind) {
    case AstExpr::Kind::kInt: return std::to_string(e.value);
    case AstExpr::Kind::kId: return e.id;
    case AstExpr::Kind::kOp: break;
  }
  auto arg = [&](size_t i) { return print_ast_expr(e.args[i]); };
  switch (e.op) {
    case AstExpr::Op::kNeg: return "-" + arg(0);
    case AstExpr::Op::kMin: return fmt::format("min({}, {})", arg(0), arg(1));
    case AstExpr::Op::kMax: return fmt::format("max({}, {})", arg(0), arg(1));
    case AstExpr::Op::kFloorDiv: return fmt::format("floord({}, {})", arg(0), arg(1));
    default: return fmt::format("({} {} {})", arg(0), infix(e.op), arg(1));
  }
}

std::string print_loop_ast(const AstNode& node) {
  std::string out;
  print_node(node, 0, out);
  return out;
}

} // namespace weft::poly
