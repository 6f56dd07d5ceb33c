#include <algorithm>

#include <gtest/gtest.h>

#include "tests/testing/onnx_text.h"
#include "weft/graph/passes/canonicalize.h"
#include "weft/graph/passes/fold_constants.h"
#include "weft/graph/passes/fold_shape_values.h"
#include "weft/graph/passes/infer_shapes.h"
#include "weft/graph/passes/unify_dims.h"

namespace weft {
namespace {

// The attributes of the Reshape that writes "output".
const ReshapeAttrs& reshape_of(const Graph& g, const std::string& output) {
  return g.find_value(output)->producer->attrs_as<ReshapeAttrs>();
}

// The views PyTorch's dynamo exporter writes for a dynamic [N, T, 64]: the batch and length
// read with Shape, heads and head size appended; a -1; a 0 and a length read with Shape.
TEST(FoldShapeValues, ReshapeTargetsFromShapesOverSymbols) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, T, 64] x) => (float[A, B, C, D] y, float[E, F] z, float[G, H, I] w) {
      nt = Shape <start = 0, end = 2> (x)
      split = Constant <value = int64[2] {4, 16}> ()
      to_heads = Concat <axis = 0> (nt, split)
      heads = Reshape (x, to_heads)
      minus = Constant <value = int64[1] {-1}> ()
      sixteen = Constant <value = int64[1] {16}> ()
      to_rows = Concat <axis = 0> (minus, sixteen)
      rows = Reshape (x, to_rows)
      t = Shape <start = 1, end = 2> (x)
      zero = Constant <value = int64[1] {0}> ()
      sixty_four = Constant <value = int64[1] {64}> ()
      to_back = Concat <axis = 0> (zero, t, sixty_four)
      back = Reshape (heads, to_back)
      y = Identity (heads)
      z = Identity (rows)
      w = Identity (back)
    })");
  ASSERT_TRUE(fold_constants(g).ok());
  ASSERT_TRUE(infer_shapes(g).ok());
  ASSERT_TRUE(canonicalize(g).ok());
  Result<bool> resolved = fold_shape_values(g);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_TRUE(*resolved);
  const auto& heads = reshape_of(g, "heads");
  ASSERT_TRUE(heads.symbolic_shape);
  EXPECT_EQ(shape_to_string(*heads.symbolic_shape), "[N,T,4,16]");
  // A constant target with a -1 needs no evaluation: infer_shapes divides the products.
  EXPECT_EQ(g.find_value("rows")->type.to_string(), "f32[4*N*T,16]");
  // "heads" has its new type only after shapes are inferred again: the next round.
  EXPECT_FALSE(reshape_of(g, "back").symbolic_shape);
  ASSERT_TRUE(infer_shapes(g).ok());
  ASSERT_TRUE(fold_shape_values(g).ok());
  const auto& back = reshape_of(g, "back");
  ASSERT_TRUE(back.symbolic_shape);
  EXPECT_EQ(shape_to_string(*back.symbolic_shape), "[N,T,64]");
  ASSERT_TRUE(infer_shapes(g).ok());
  EXPECT_EQ(g.find_value("back")->type.to_string(), "f32[N,T,64]");
}

TEST(FoldShapeValues, SymbolsNoShapeFunctionCouldTellStayUnresolved) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, 64] x, int64[2] s) => (float[A, B] y, float[C, D] z) {
      y = Reshape (x, s)
      sy = Shape (y)
      z = Reshape (x, sy)
    })");
  ASSERT_TRUE(infer_shapes(g).ok());
  ASSERT_TRUE(canonicalize(g).ok());
  Result<bool> resolved = fold_shape_values(g);
  ASSERT_TRUE(resolved.ok());
  EXPECT_FALSE(*resolved);
}

// What transformers' attention masks compute from the length T of [N, T] token ids: a Range
// to T, a table's first T entries, Slices of T over constant and computed bounds, and a
// Concat one longer than T. Each gets its size over symbols; each end that is not its axis's
// extent is a limit runs check.
TEST(FoldShapeValues, RangesAndSlicesOverSymbols) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (int64[N, T] ids) => (int64[A] pos, float[B, C] prefix, int64[D, E] first,
                            int64[F, G] rest, int64[H, I] shifted) {
      t = Shape <start = 1, end = 2> (ids)
      ts = Squeeze (t)
      zero = Constant <value = int64 {0}> ()
      one = Constant <value = int64 {1}> ()
      pos = Range (zero, ts, one)
      table = Constant <value = float[1, 8] {0, 1, 2, 3, 4, 5, 6, 7}> ()
      zero1 = Constant <value = int64[1] {0}> ()
      one1 = Constant <value = int64[1] {1}> ()
      all = Constant <value = int64[1] {9223372036854775807}> ()
      prefix = Slice (table, zero1, t, one1)
      first = Slice (ids, zero1, one1, one1)
      rest = Slice (ids, one1, all, one1)
      cat = Concat <axis = 1> (first, ids)
      t1 = Add (one1, t)
      shifted = Slice (cat, one1, t1, one1)
    })");
  ASSERT_TRUE(fold_constants(g).ok());
  ASSERT_TRUE(infer_shapes(g).ok());
  ASSERT_TRUE(canonicalize(g).ok());
  for (int round = 0; round < 4; ++round) {
    Result<bool> resolved = fold_shape_values(g);
    ASSERT_TRUE(resolved.ok()) << resolved.status().message();
    ASSERT_TRUE(infer_shapes(g).ok());
    if (!*resolved) break;
  }
  EXPECT_EQ(g.find_value("pos")->type.to_string(), "i64[T]");
  EXPECT_EQ(g.find_value("prefix")->type.to_string(), "f32[1,T]");
  EXPECT_EQ(g.find_value("first")->type.to_string(), "i64[N,1]");
  EXPECT_EQ(g.find_value("rest")->type.to_string(), "i64[N,(T-1)/1]");
  EXPECT_EQ(g.find_value("cat")->type.to_string(), "i64[N,(T+1)/1]");
  EXPECT_EQ(g.find_value("shifted")->type.to_string(), "i64[N,T]");
  std::vector<std::string> limits;
  for (const DimLimit& l : g.dim_limits)
    limits.push_back(l.dim.to_string() + " <= " + l.bound.to_string());
  std::sort(limits.begin(), limits.end());
  EXPECT_EQ(limits, (std::vector<std::string>{"1 <= T", "T <= 8"})); // (T+1)/1 is its own axis
}

// A KV-cache step's mask [N, M] (a symbol of its own) added to scores over the past and new
// keys [N, (P+T)/1]: M is taken to be (P+T)/1 everywhere, the mask input's type included.
TEST(UnifyDims, AnInputSymbolTakesTheDimItIsBroadcastWith) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, P] past, float[N, T] new, float[N, M] mask) => (float[N, Q] y, float[N, R] z) {
      keys = Concat <axis = 1> (past, new)
      y = Add (keys, mask)
      z = Mul (mask, mask)
    })");
  ASSERT_TRUE(infer_shapes(g).ok());
  Result<bool> unified = unify_dims(g);
  ASSERT_TRUE(unified.ok()) << unified.status().message();
  EXPECT_TRUE(*unified);
  ASSERT_TRUE(infer_shapes(g).ok());
  EXPECT_EQ(g.find_value("mask")->type.to_string(), "f32[N,(P+T)/1]");
  EXPECT_EQ(g.find_value("y")->type.to_string(), "f32[N,(P+T)/1]");
  EXPECT_EQ(g.find_value("z")->type.to_string(), "f32[N,(P+T)/1]");
  unified = unify_dims(g); // nothing left to unify
  ASSERT_TRUE(unified.ok());
  EXPECT_FALSE(*unified);
}

// Dims that a Concat (off its axis), a MatMul or a Gemm (inner) requires to be equal: an
// input's symbol takes the other, static or not, everywhere; each run then checks the input's
// extent (a Concat of [2, 4000000] and [1, 3] along axis 0 read past the end: a segfault).
TEST(UnifyDims, ConcatAndMatMulDimsThatMustBeEqualAreTaken) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, 4, P, D] past, float[N, 4, T, 2] new, float[N, K] a, float[L, 3] b,
       float[N, 6] c, float[5, I] d) => (float[N, 4, Q, R] keys, float[N, 3] y,
                                         float[N, S] z, float[N, 5] w) {
      keys = Concat <axis = 2> (past, new)
      y = MatMul (a, b)
      z = Concat <axis = 1> (a, a)
      w = Gemm <transB = 1> (c, d)
    })");
  ASSERT_TRUE(infer_shapes(g).ok());
  int unified_count = 0;
  for (;;) {
    Result<bool> unified = unify_dims(g);
    ASSERT_TRUE(unified.ok()) << unified.status().message();
    if (!*unified) break;
    ++unified_count;
    ASSERT_TRUE(infer_shapes(g).ok());
  }
  EXPECT_EQ(unified_count, 3);
  EXPECT_EQ(g.find_value("past")->type.to_string(), "f32[N,4,P,2]");
  EXPECT_EQ(g.find_value("d")->type.to_string(), "f32[5,6]");
  EXPECT_EQ(g.find_value("keys")->type.to_string(), "f32[N,4,(P+T)/1,2]");
  // K and L: one takes the other.
  std::string a = g.find_value("a")->type.to_string(), b = g.find_value("b")->type.to_string();
  EXPECT_TRUE((a == "f32[N,L]" && b == "f32[L,3]") || (a == "f32[N,K]" && b == "f32[K,3]"))
      << a << " " << b;
}

// A dim the model declares as an input's symbol (the mask's length M) where the node computes
// another over the inputs' symbols (P + T): M is taken to be P + T, the mask's type included,
// and each run checks it (the declared M sized the buffer that the Concat wrote P + T rows
// into: ONNX Runtime GenAI's present, a heap corruption with a mask shorter than P + T).
TEST(UnifyDims, ADeclaredInputSymbolTakesTheDimTheNodeComputes) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, P, 2] past, float[N, T, 2] new, float[N, M] mask) => (float[N, M, 2] present) {
      present = Concat <axis = 1> (past, new)
    })");
  ASSERT_TRUE(infer_shapes(g).ok());
  EXPECT_EQ(g.find_value("present")->type.to_string(), "f32[N,M,2]");
  Result<bool> unified = unify_dims(g);
  ASSERT_TRUE(unified.ok()) << unified.status().message();
  EXPECT_TRUE(*unified);
  ASSERT_TRUE(infer_shapes(g).ok());
  EXPECT_EQ(g.find_value("mask")->type.to_string(), "f32[N,(P+T)/1]");
  EXPECT_EQ(g.find_value("present")->type.to_string(), "f32[N,(P+T)/1,2]");
  unified = unify_dims(g);
  ASSERT_TRUE(unified.ok());
  EXPECT_FALSE(*unified);
}

// Dims that are not an input's symbol on one side stay as they are.
TEST(UnifyDims, ComputedDimsOnBothSidesStay) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, P] a, float[N, T] b) => (float[N, Q] y) {
      ab = Concat <axis = 1> (a, b)
      aa = Concat <axis = 1> (a, a)
      y = Add (ab, aa)
    })");
  ASSERT_TRUE(infer_shapes(g).ok());
  Result<bool> unified = unify_dims(g);
  ASSERT_TRUE(unified.ok());
  EXPECT_FALSE(*unified);
}

// OPT's decoding step: positions from the mask [N, M] (its length, past and new), sliced
// from the past length P and added to the new tokens' [N, T]: the Slice's extent is M - P,
// which the Add finds to be T, so M is P + T.
TEST(UnifyDims, AMaskSlicedFromThePastLengthMeetsTheNewTokens) {
  Graph g = testing::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, P] past, float[N, M] mask, float[N, T] x) => (float[N, Q] y) {
      p = Shape <start = 1, end = 2> (past)
      all = Constant <value = int64[1] {9223372036854775807}> ()
      one1 = Constant <value = int64[1] {1}> ()
      pos = Slice (mask, p, all, one1)
      y = Add (x, pos)
    })");
  ASSERT_TRUE(fold_constants(g).ok());
  ASSERT_TRUE(infer_shapes(g).ok());
  ASSERT_TRUE(canonicalize(g).ok());
  Result<bool> resolved = fold_shape_values(g);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_TRUE(*resolved);
  ASSERT_TRUE(infer_shapes(g).ok());
  EXPECT_EQ(g.find_value("pos")->type.to_string(), "f32[N,(M-P)/1]");
  Result<bool> unified = unify_dims(g);
  ASSERT_TRUE(unified.ok()) << unified.status().message();
  EXPECT_TRUE(*unified);
  ASSERT_TRUE(infer_shapes(g).ok());
  EXPECT_EQ(g.find_value("mask")->type.to_string(), "f32[N,(P+T)/1]");
  EXPECT_EQ(g.find_value("pos")->type.to_string(), "f32[N,T]");
  EXPECT_EQ(g.find_value("y")->type.to_string(), "f32[N,T]");
  ASSERT_EQ(g.dim_limits.size(), 1u); // the start within the end
  EXPECT_EQ(g.dim_limits[0].dim.to_string() + " <= " + g.dim_limits[0].bound.to_string(),
            "P <= (P+T)/1");
}

TEST(DimFloorDiv, SumsWithConstantsFold) {
  Dim t = Dim::symbol("T");
  Dim plus_one = dim_floor_div(t, 1, 1);
  EXPECT_EQ(plus_one.to_string(), "(T+1)/1");
  EXPECT_EQ(dim_floor_div(plus_one, -1, 1), t);
  EXPECT_EQ(eval_dim(dim_floor_div(plus_one, 2, 1), {{"T", 5}}), 8);
  // A divisor of the constant factor divides it out: 2x2 pooling of 2*h is h.
  Dim two_h = dim_mul(2, Dim::symbol("h"));
  EXPECT_EQ(dim_floor_div(two_h, 0, 2), Dim::symbol("h"));
  EXPECT_EQ(dim_floor_div(two_h, 1, 2), Dim::symbol("h"));
  EXPECT_EQ(dim_floor_div(dim_mul(6, t), 3, 2), dim_floor_div(dim_mul(3, t), 1, 1));
  EXPECT_EQ(dim_floor_div(two_h, -1, 2).to_string(), "(h-1)/1");
  EXPECT_EQ(dim_floor_div(dim_mul(3, t), 0, 2).to_string(), "(3*T+0)/2");
  EXPECT_EQ(dim_sub(t, dim_floor_div(t, -3, 1)), Dim(3)); // x[-3:] of T
}

TEST(DimAdd, SumsOfSymbolsAreOneDimEitherWay) {
  Dim p = Dim::symbol("past"), t = Dim::symbol("seq");
  std::optional<Dim> total = dim_add(p, t);
  ASSERT_TRUE(total);
  EXPECT_EQ(total->to_string(), "(past+seq)/1");
  EXPECT_EQ(dim_add(t, p), total);
  EXPECT_EQ(eval_dim(dim_mul(4, *total), {{"past", 5}, {"seq", 2}}), 28);
  EXPECT_EQ(dim_symbols(*total), (std::vector<std::string>{"past", "seq"}));
  EXPECT_EQ(dim_add(t, 0), t);
  EXPECT_EQ(dim_add(Dim(3), Dim(4)), Dim(7));
  std::optional<Dim> more = dim_add(*total, dim_floor_div(t, 1, 1)); // (seq+1)/1 is one term
  ASSERT_TRUE(more);
  EXPECT_EQ(eval_dim(*more, {{"past", 5}, {"seq", 2}}), 10);
}

TEST(DimAdd, SumsOfManyTermsAreOneDimInAnyOrder) {
  Dim a = Dim::symbol("a"), b = Dim::symbol("b"), c = dim_mul(2, Dim::symbol("c"));
  std::optional<Dim> ab = dim_add(a, b), bc = dim_add(b, c);
  ASSERT_TRUE(ab && bc);
  std::optional<Dim> left = dim_add(*ab, c), right = dim_add(a, *bc);
  ASSERT_TRUE(left && right);
  EXPECT_EQ(left->to_string(), "(2*c+a+b)/1");
  EXPECT_EQ(*left, *right);
  std::map<std::string, int64_t> values{{"a", 5}, {"b", 7}, {"c", 3}};
  EXPECT_EQ(eval_dim(*left, values), 18);
  EXPECT_EQ(eval_dim(dim_mul(4, *left), values), 72);
  EXPECT_EQ(eval_dim(dim_floor_div(*left, 2, 4), values), 5);
  EXPECT_EQ(dim_symbols(*left), (std::vector<std::string>{"c", "a", "b"}));
}

TEST(DimMin, OneFactorThatEvaluatesAndSums) {
  Dim n = Dim::symbol("N"), m = Dim::symbol("M");
  Dim k = dim_min(Dim(300), n);
  EXPECT_EQ(k.to_string(), "min(300,N)");
  EXPECT_EQ(dim_min(n, Dim(300)), k);
  EXPECT_EQ(dim_min(n, n), n);
  EXPECT_EQ(dim_min(Dim(3), Dim(5)), Dim(3));
  EXPECT_EQ(eval_dim(k, {{"N", 5}}), 5);
  EXPECT_EQ(eval_dim(dim_mul(4, k), {{"N", 1000}}), 1200);
  EXPECT_FALSE(eval_dim(k, {{"M", 5}}));
  std::optional<Dim> total = dim_add(k, dim_min(Dim(300), m));
  ASSERT_TRUE(total);
  EXPECT_EQ(eval_dim(*total, {{"N", 5}, {"M", 400}}), 305);
  std::optional<Dim> more = dim_add(*total, dim_floor_div(n, 1, 2));
  ASSERT_TRUE(more);
  EXPECT_EQ(eval_dim(*more, {{"N", 5}, {"M", 400}}), 308);
  EXPECT_EQ(dim_symbols(*more).size(), 3u);
  EXPECT_FALSE(dim_is_symbol(k));
}

TEST(DimDiv, ExactProductsOnly) {
  Dim n = Dim::symbol("N"), t = Dim::symbol("T");
  EXPECT_EQ(dim_div(dim_mul(dim_mul(12, n), t), dim_mul(4, t)), dim_mul(3, n));
  EXPECT_EQ(dim_div(dim_mul(n, t), dim_mul(n, t)), Dim(1));
  EXPECT_EQ(dim_div(Dim(64), Dim(16)), Dim(4));
  EXPECT_FALSE(dim_div(dim_mul(6, n), Dim(4)));
  EXPECT_FALSE(dim_div(n, t));
}

TEST(DimFromSpelling, PyTorchDerivedDimsAndSolvingThem) {
  Dim h = Dim::symbol("h");
  EXPECT_EQ(dim_from_spelling("2*h"), dim_mul(2, h));
  EXPECT_EQ(dim_from_spelling("h*2"), dim_mul(2, h));
  EXPECT_EQ(dim_from_spelling("2*h + 1"), dim_floor_div(dim_mul(2, h), 1, 1));
  EXPECT_EQ(dim_from_spelling("3*h - 3").to_string(), "(3*h-3)/1");
  EXPECT_EQ(dim_from_spelling("batch"), Dim::symbol("batch"));
  EXPECT_EQ(dim_from_spelling("seq-len"), Dim::symbol("seq-len")); // a name, not a difference
  EXPECT_EQ(dim_from_spelling("2*(h + 1)"), Dim::symbol("2*(h + 1)"));
  EXPECT_EQ(dim_from_spelling("2*3"), Dim::symbol("2*3"));

  using Solved = std::optional<std::pair<std::string, int64_t>>;
  EXPECT_EQ(solve_dim(dim_from_spelling("2*h"), 10), (Solved{{"h", 5}}));
  EXPECT_EQ(solve_dim(dim_from_spelling("2*h"), 0), (Solved{{"h", 0}}));
  EXPECT_EQ(solve_dim(dim_from_spelling("2*h"), 7), std::nullopt);
  EXPECT_EQ(solve_dim(dim_from_spelling("2*h + 1"), 7), (Solved{{"h", 3}}));
  EXPECT_EQ(solve_dim(dim_from_spelling("2*h + 1"), 0), std::nullopt);
  EXPECT_EQ(solve_dim(dim_from_spelling("3*h - 3"), 0), (Solved{{"h", 1}}));
  EXPECT_EQ(solve_dim(dim_from_spelling("3*h - 3"), 9), (Solved{{"h", 4}}));
  // A minimum or a quotient is not solved for its symbol: 90*min(1000,N) at 90000 holds for
  // every N from 1000.
  EXPECT_EQ(solve_dim(dim_mul(90, dim_min(Dim(1000), Dim::symbol("N"))), 900), std::nullopt);
  EXPECT_EQ(solve_dim(dim_floor_div(h, 0, 2), 3), std::nullopt);
  EXPECT_EQ(solve_dim(dim_mul(h, Dim::symbol("w")), 6), std::nullopt);
  EXPECT_EQ(bound_symbol(dim_mul(4, h)), "h");
  EXPECT_EQ(bound_symbol(h), "h");
  EXPECT_EQ(bound_symbol(dim_floor_div(h, 0, 2)), std::nullopt);
  EXPECT_EQ(bound_symbol(Dim(3)), std::nullopt);
}

TEST(DimOver, KnownFromNamesWithoutValues) {
  std::set<std::string> t{"T"};
  EXPECT_TRUE(dim_over(dim_floor_div(Dim::symbol("T"), -3, 1), t)); // negative at T = 1
  EXPECT_TRUE(dim_over(dim_mul(4, dim_floor_div(Dim::symbol("T"), 1, 2)), t));
  EXPECT_TRUE(dim_over(Dim(7), t));
  EXPECT_FALSE(dim_over(dim_mul(Dim::symbol("T"), Dim::symbol("unk0")), t));
  // A later stage's input of min(100,N) boxes binds that dim as a whole, not N.
  Dim boxes = dim_min(Dim(100), Dim::symbol("N"));
  EXPECT_TRUE(dim_over(dim_mul(20, boxes), {boxes.symbol_name()}));
  EXPECT_FALSE(dim_over(Dim::symbol("N"), {boxes.symbol_name()}));
}

} // namespace
} // namespace weft
