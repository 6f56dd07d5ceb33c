// Weft's loop AST: what the isl AST generator produced, in Weft's own types, so that no isl
// type leaves poly/. codegen/ walks it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::poly {

// An integer expression of loop iterators and symbolic extents.
struct AstExpr {
  enum class Kind : uint8_t { kInt, kId, kOp };
  enum class Op : uint8_t {
    kAdd,
    kSub,
    kMul,
    kNeg,
    kMin,
    kMax,
    kFloorDiv,
    kRem,
    kLe,
    kLt,
    kGe,
    kGt,
    kEq,
    kAnd,
    kOr
  };
  Kind kind = Kind::kInt;
  int64_t value = 0; // kInt
  std::string id;    // kId: an iterator ("c0") or a symbolic extent ("N")
  Op op = Op::kAdd;  // kOp
  std::vector<AstExpr> args;
};

// A loop-nest node.
struct AstNode {
  enum class Kind : uint8_t { kBlock, kFor, kIf, kCall };
  enum class Mark : uint8_t { kNone, kParallel, kReduction };
  Kind kind = Kind::kBlock;
  // kFor: for (iterator = init; cond; iterator += step) body
  std::string iterator;
  AstExpr init, cond;
  int64_t step = 1;
  Mark mark = Mark::kNone;
  // kIf: if (cond) children[0] [else children[1]]
  // kBlock: children in order; kFor: children[0] is the body.
  std::vector<AstNode> children;
  // kCall: statement index and the value of each of its iterators.
  int statement = -1;
  std::vector<AstExpr> args;
};

std::string print_ast_expr(const AstExpr& e);
// C-like text, two spaces per level, marks as comments: the form golden tests pin.
std::string print_loop_ast(const AstNode& node);

} // namespace weft::poly
