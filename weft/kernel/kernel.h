// The kernel IR: loop-level statements over explicit buffers.
//
// Semantics (see docs/ir.md, "Kernel IR"):
// - A Kernel owns Buffers, each an input, an output or a temporary (Glow's in/out memory
//   model), with a dtype and a row-major shape whose dims may be symbols.
// - A Statement runs once per point of its domain, a box 0 <= i_k < extent_k cut by affine
//   guards (each >= 0). It evaluates
//   its expression, whose loads read buffers at affine indices of the iterators, and stores
//   the result at its write access; with a Combine other than kNone it instead stores
//   combine(old value, result) — a reduction update. Iterators that the write access does not
//   use are the statement's reduced iterators.
// - Statements execute in order; within one statement, points execute in lexicographic
//   order unless a schedule proves another order equivalent (poly/).
// - Arithmetic happens in the expression's dtype; loads of f16/bf16 widen to f32.
// - An access may be indirect along some buffer dims: the index there is the integer value
//   of an expression node (a gather when reading, a scatter when writing), brought into
//   [0, extent) as its IndexWrap says, so that no index, however wrong, leaves the buffer.
//   A read's index node comes before the load. Instances of a statement that write one
//   element (through an indirect index, or an affine index that is not one-to-one) run in
//   program order: the last one wins, or they combine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/graph/dtype.h"
#include "weft/graph/shape.h"
#include "weft/support/status.h"

namespace weft::kernel {

enum class BufferRole : uint8_t { kInput, kOutput, kTemp };

struct Buffer {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  BufferRole role = BufferRole::kInput;
  // Shares memory with the other buffers of its group (views of one value with two shapes,
  // after stitching, one of them written): the index of the group's first buffer, or -1.
  // Statements keep their program order, so only the scheduler (one array per group) and the
  // emitters care: they drop __restrict__ for such buffers (the CUDA emitter also for buffers
  // its threads share).
  int view_group = -1;
  bool aliased() const { return view_group >= 0; }
};

// constant + sum(coeff * iterator). Iterators are the statement's, by position.
struct AffineExpr {
  int64_t constant = 0;
  std::vector<std::pair<int, int64_t>> terms; // (iterator, coefficient), coefficient != 0

  static AffineExpr iterator(int i) { return {0, {{i, 1}}}; }
  static AffineExpr constant_of(int64_t c) { return {c, {}}; }
  int64_t coefficient(int iter) const;
  friend bool operator==(const AffineExpr&, const AffineExpr&) = default;
};

// How an indirect index outside [0, extent) is brought into the buffer.
enum class IndexWrap : uint8_t {
  kClamp,    // clamped to [0, extent - 1]
  kNegative, // ONNX's negative indices: i < 0 counts from the end (i + extent), then clamped
};

// The index along buffer dim "dim" is the value of expression node "node" (an integer node;
// before the load, for a read) instead of the affine index, whose entry there must be 0.
struct IndirectIndex {
  int dim = 0;
  int node = -1;
  IndexWrap wrap = IndexWrap::kClamp;
  friend bool operator==(const IndirectIndex&, const IndirectIndex&) = default;
};

struct Access {
  Access() = default;
  Access(int buffer_index, std::vector<AffineExpr> affine_index,
         std::vector<IndirectIndex> indirect_index = {})
      : buffer(buffer_index), index(std::move(affine_index)), indirect(std::move(indirect_index)) {}

  int buffer = 0;
  std::vector<AffineExpr> index;       // one per buffer dim
  std::vector<IndirectIndex> indirect; // sorted by dim, each dim at most once

  // The indirect index along buffer dim "d", or null when that dim is affine.
  const IndirectIndex* indirect_at(int d) const;
};

enum class ExprOp : uint8_t {
  kLoad,
  kIterator,
  kConstant,
  // The extent of a dim (ExprNode::extent), static or a product of symbols known when the
  // kernel runs, as a value of the node's dtype: a mean over a symbolic axis divides by it.
  kExtent,
  kCast,
  // unary
  kNeg,
  kAbs,
  kExp,
  // exp of softmax's shifted x - max(x): its argument is at most 0 (plus rounding) or NaN, so
  // the C dialect skips exp's overflow check. Garbage above 88.7, where exp overflows.
  kShiftedExp,
  kLog,
  kSqrt,
  kRsqrt,
  kTanh,
  kSigmoid,
  kErf,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kNot,
  kIsNan,
  kIsInf,
  // binary
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kPow,
  kMod,
  kFmod,
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kAnd,
  kOr,
  kXor,
  kShiftLeft,  // integers; a shift by the bit width or more gives 0
  kShiftRight, // unsigned integers (logical shift)
  // ternary
  kSelect,
};

// One node of a statement's expression; operands index earlier nodes of the same statement.
struct ExprNode {
  ExprOp op = ExprOp::kConstant;
  DType dtype = DType::kF32;
  std::vector<int> operands;
  int access = -1;    // kLoad: index into Statement::reads
  double value = 0.0; // kConstant
  Dim extent = 0;     // kExtent
};

// kShiftMax is the max that softmax, log-softmax, logsumexp and cross-entropy subtract
// before exp. It may ignore NaN inputs (the C dialect does: one vmaxps instead of four
// instructions) or propagate them (CUDA does): a NaN input reaches those outputs through the
// sum of exps either way.
enum class Combine : uint8_t { kNone, kSum, kProd, kMax, kMin, kShiftMax };

struct Statement {
  std::string name;
  std::vector<Dim> domain; // extents of the iterators
  // Affine conditions (each >= 0) that further restrict the domain, e.g. to the in-bounds
  // taps of a padded window. The loop bounds isl generates respect them.
  std::vector<AffineExpr> guards;
  Access write;
  Combine combine = Combine::kNone;
  std::vector<Access> reads;
  std::vector<ExprNode> expr; // the last node is the value stored

  // Is iterator "i" absent from the write access (so the statement reduces over it)? Never
  // for an indirect write, whose target moves with the data.
  bool is_reduced(int i) const;
};

struct Kernel {
  std::string name;
  std::vector<Buffer> buffers;
  std::vector<Statement> statements;
};

// Checks the invariants above: accesses match buffer ranks and iterators exist, expression
// operands point backwards, indirect indices are integer nodes (computed before their load,
// for reads), the last node's dtype is the written buffer's, inputs are never written.
Status verify_kernel(const Kernel& kernel);

// The lossless text form (print_kernel.cc; read back by parse_kernel, kernel_text.h), e.g.
//   kernel reduce_sum
//     in x: f32[N,64]
//     out y: f32[N]
//     S0[i0 < N]: y[i0] = 0
//     S1[i0 < N, i1 < 64]: y[i0] += x[i0, i1]
// It has no addresses, so it is stable from run to run.
std::string print_kernel(const Kernel& kernel);
std::string print_affine(const AffineExpr& e);
// That text without its first line ("kernel NAME"): what kernels the same but for their names
// share (the function cache's repeats, the tuning records' key).
std::string_view kernel_body(std::string_view printed);

std::string_view expr_op_name(ExprOp op);
int expr_op_arity(ExprOp op);
// The identity of a combine: 0 for sums, 1 for products, -inf / +inf for max / min.
double combine_identity(Combine c);

} // namespace weft::kernel
