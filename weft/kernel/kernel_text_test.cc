// The kernel text both ways: print_kernel then parse_kernel gives the kernel back, field for
// field (kernel_difference), for kernels covering every op class, every combine, indirect
// reads and writes, guards, symbolic dims and aliased buffers; bad text gives an error with
// its line and column, never a crash.
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "tests/testing/kernels.h"
#include "weft/kernel/kernel.h"
#include "weft/kernel/kernel_text.h"

namespace weft::kernel {
namespace {

AffineExpr it(int i) { return AffineExpr::iterator(i); }

// Parses the printed "k" and checks that it is "k" again, and prints the same.
void expect_round_trip(const Kernel& k) {
  ASSERT_TRUE(verify_kernel(k).ok()) << verify_kernel(k).message() << "\n" << print_kernel(k);
  std::string text = print_kernel(k);
  Result<Kernel> parsed = parse_kernel(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;
  EXPECT_EQ(kernel_difference(k, *parsed), "") << text;
  EXPECT_EQ(print_kernel(*parsed), text);
}

// One statement's expression, node by node.
struct Expr {
  int node(ExprNode e) {
    nodes.push_back(std::move(e));
    return static_cast<int>(nodes.size()) - 1;
  }
  int load(int access, DType t) { return node({ExprOp::kLoad, t, {}, access, 0.0}); }
  int constant(double v, DType t) { return node({ExprOp::kConstant, t, {}, -1, v}); }
  int extent(Dim d, DType t) { return node({ExprOp::kExtent, t, {}, -1, 0.0, std::move(d)}); }
  int iterator(int i, DType t = DType::kI64) { return node({ExprOp::kIterator, t, {}, i, 0.0}); }
  int op(ExprOp op, DType t, std::vector<int> operands) {
    return node({op, t, std::move(operands), -1, 0.0});
  }
  std::vector<ExprNode> nodes;
};

Statement statement(std::string name, std::vector<Dim> domain, Access write,
                    std::vector<Access> reads, Expr e, Combine c = Combine::kNone) {
  Statement s;
  s.name = std::move(name);
  s.domain = std::move(domain);
  s.write = std::move(write);
  s.reads = std::move(reads);
  s.expr = std::move(e.nodes);
  s.combine = c;
  return s;
}

bool is_bitwise(ExprOp op) {
  return op == ExprOp::kShiftLeft || op == ExprOp::kShiftRight || op == ExprOp::kAnd ||
         op == ExprOp::kOr || op == ExprOp::kXor || op == ExprOp::kNot;
}
bool is_predicate(ExprOp op) {
  return (op >= ExprOp::kLt && op <= ExprOp::kEq) || op == ExprOp::kIsNan || op == ExprOp::kIsInf;
}

// y[i0, i1] = OP over x (f32) or m (u8), one statement per op.
Kernel every_op_kernel() {
  Kernel k;
  k.name = "ops";
  k.buffers = {{"x", DType::kF32, {4, Dim::symbol("N")}, BufferRole::kInput},
               {"y", DType::kF32, {4, Dim::symbol("N")}, BufferRole::kOutput},
               {"m", DType::kU8, {4}, BufferRole::kInput}};
  for (int i = 0; i <= static_cast<int>(ExprOp::kSelect); ++i) {
    ExprOp op = static_cast<ExprOp>(i);
    Expr e;
    std::vector<Access> reads;
    auto load_x = [&] {
      reads.push_back({0, {it(0), it(1)}});
      return e.load(static_cast<int>(reads.size()) - 1, DType::kF32);
    };
    if (op == ExprOp::kLoad) continue; // every other statement loads
    if (op == ExprOp::kIterator) {
      e.op(ExprOp::kCast, DType::kF32, {e.iterator(1)});
    } else if (op == ExprOp::kConstant) {
      e.op(ExprOp::kAdd, DType::kF32, {load_x(), e.constant(0.5, DType::kF32)});
    } else if (op == ExprOp::kExtent) {
      e.op(ExprOp::kDiv, DType::kF32, {load_x(), e.extent(Dim::symbol("N"), DType::kF32)});
    } else if (is_bitwise(op)) { // on u8
      reads.push_back({2, {it(0)}});
      int m = e.load(0, DType::kU8);
      std::vector<int> args = {m};
      if (expr_op_arity(op) == 2) args.push_back(e.constant(1, DType::kU8));
      e.op(ExprOp::kCast, DType::kF32, {e.op(op, DType::kU8, args)});
    } else if (op == ExprOp::kSelect) {
      int c = e.op(ExprOp::kGt, DType::kBool, {load_x(), e.constant(0, DType::kF32)});
      e.op(op, DType::kF32, {c, load_x(), e.constant(-1, DType::kF32)});
    } else {
      std::vector<int> args = {load_x()};
      if (expr_op_arity(op) == 2) args.push_back(e.op(ExprOp::kExp, DType::kF32, {load_x()}));
      int r = e.op(op, is_predicate(op) ? DType::kBool : DType::kF32, args);
      if (is_predicate(op)) e.op(ExprOp::kCast, DType::kF32, {r});
    }
    k.statements.push_back(statement(std::string(expr_op_name(op)), {4, Dim::symbol("N")},
                                     {1, {it(0), it(1)}}, reads, e));
  }
  return k;
}

TEST(KernelText, EveryOpRoundTrips) {
  Kernel k = every_op_kernel();
  expect_round_trip(k);
  std::string text = print_kernel(k);
  for (const char* line : {
           "  add[i0 < 4, i1 < N]: y[i0, i1] = (x[i0, i1] + exp(x[i0, i1]))\n",
           "  shl[i0 < 4, i1 < N]: y[i0, i1] = f32((m[i0] << 1))\n",
           "  select[i0 < 4, i1 < N]: y[i0, i1] = select((x[i0, i1] > 0), x[i0, i1], -1)\n",
           "  extent[i0 < 4, i1 < N]: y[i0, i1] = (x[i0, i1] / extent(N))\n",
           "  iterator[i0 < 4, i1 < N]: y[i0, i1] = f32(i1)\n",
           "  pow[i0 < 4, i1 < N]: y[i0, i1] = pow(x[i0, i1], exp(x[i0, i1]))\n",
           "  isnan[i0 < 4, i1 < N]: y[i0, i1] = f32(isnan(x[i0, i1]))\n",
       })
    EXPECT_NE(text.find(line), std::string::npos) << line << "in\n" << text;
}

TEST(KernelText, EveryCombineRoundTrips) {
  for (Combine c :
       {Combine::kSum, Combine::kProd, Combine::kMax, Combine::kMin, Combine::kShiftMax}) {
    Kernel k = testing::reduce_kernel("r", {Dim::symbol("B"), 7, 5}, {false, true, false}, c);
    SCOPED_TRACE(print_kernel(k));
    expect_round_trip(k);
  }
  EXPECT_NE(print_kernel(testing::all_max_kernel(9)).find("y[] = -inf\n"), std::string::npos);
}

TEST(KernelText, IndirectReadsAndWritesRoundTrip) {
  expect_round_trip(testing::gather_rows_kernel(Dim::symbol("R"), 8, 3));
  expect_round_trip(testing::scatter_add_rows_kernel(4, 8, 3));
  // A clamped index from arithmetic on a load, in a write; and the stored value as an index.
  Kernel k;
  k.name = "scatter";
  k.buffers = {{"idx", DType::kI32, {3}, BufferRole::kInput},
               {"y", DType::kI32, {6}, BufferRole::kOutput}};
  Expr e;
  int i = e.load(0, DType::kI32);
  e.op(ExprOp::kAdd, DType::kI32, {i, e.constant(1, DType::kI32)});
  e.load(1, DType::kI32);
  k.statements.push_back(statement("s", {3},
                                   {1, {AffineExpr::constant_of(0)}, {{0, 2, IndexWrap::kClamp}}},
                                   {{0, {it(0)}}, {0, {it(0)}}}, e, Combine::kMax));
  Expr self;
  self.load(0, DType::kI32);
  k.statements.push_back(
      statement("self", {3}, {1, {AffineExpr::constant_of(0)}, {{0, 0, IndexWrap::kNegative}}},
                {{0, {it(0)}}}, self));
  expect_round_trip(k);
  EXPECT_NE(print_kernel(k).find("s[i0 < 3]: y[clamp((idx[i0] + 1))] max= idx[i0]\n"),
            std::string::npos)
      << print_kernel(k);
  EXPECT_NE(print_kernel(k).find("  self[i0 < 3]:\n    let %0 = idx[i0]\n    y[wrap(%0)] = %0\n"),
            std::string::npos)
      << print_kernel(k);
}

TEST(KernelText, GuardsSymbolsAndAliasesRoundTrip) {
  Kernel k;
  k.name = "window";
  Dim w = dim_floor_div(Dim::symbol("W"), 3, 4);
  k.buffers = {
      {"x", DType::kF32, {dim_mul(64, Dim::symbol("N")), Dim::symbol("W")}, BufferRole::kInput},
      {"y", DType::kF32, {dim_mul(64, Dim::symbol("N")), w}, BufferRole::kOutput, 1},
      {"t", DType::kF64, {}, BufferRole::kTemp, 1},
      {"in", DType::kBF16, {Dim::symbol("batch size"), Dim::symbol("12")}, BufferRole::kTemp}};
  Expr e;
  e.load(0, DType::kF32);
  Statement s = statement("pool", {dim_mul(64, Dim::symbol("N")), w, 3}, {1, {it(0), it(1)}},
                          {{0, {it(0), {-2, {{1, 4}, {2, 1}}}}}}, e, Combine::kMax);
  s.guards = {{-2, {{1, 4}, {2, 1}}}, {5, {{2, -1}}}};
  k.statements.push_back(s);
  expect_round_trip(k);
  std::string text = print_kernel(k);
  EXPECT_NE(text.find("  out y: f32[64*N,(W+3)/4] (aliased: y)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  temp \"in\": bf16[\"batch size\",\"12\"]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("pool[i0 < 64*N, i1 < (W+3)/4, i2 < 3, 4*i1 + i2 + -2 >= 0, -1*i2 + 5 >= 0]: "
                      "y[i0, i1] max= x[i0, 4*i1 + i2 + -2]\n"),
            std::string::npos)
      << text;
}

// Shared nodes, unused nodes, and an order that nesting cannot give are bound by lets.
TEST(KernelText, LetsKeepSharingAndNodeOrder) {
  Kernel k = testing::bias_add_kernel(3, 4);
  Statement& s = k.statements[0];
  // z = (x - b) * (x - b), the difference shared.
  Expr shared;
  int d = shared.op(ExprOp::kSub, DType::kF32,
                    {shared.load(0, DType::kF32), shared.load(1, DType::kF32)});
  shared.op(ExprOp::kMul, DType::kF32, {d, d});
  s.expr = shared.nodes;
  expect_round_trip(k);
  EXPECT_NE(print_kernel(k).find("  add[i0 < 3, i1 < 4]:\n"
                                 "    let %2 = (x[i0, i1] - b[i1])\n"
                                 "    z[i0, i1] = (%2 * %2)\n"),
            std::string::npos)
      << print_kernel(k);

  // The constant made before the load it is added to; an unused node.
  Expr reordered;
  int c = reordered.constant(2, DType::kF32);
  int x = reordered.load(0, DType::kF32);
  reordered.op(ExprOp::kExp, DType::kF32, {x});
  int b = reordered.load(1, DType::kF32);
  reordered.op(ExprOp::kAdd, DType::kF32, {b, c});
  s.expr = reordered.nodes;
  expect_round_trip(k);
  EXPECT_NE(print_kernel(k).find("    let %0 = 2:f32\n"
                                 "    let %2 = exp(x[i0, i1])\n"
                                 "    z[i0, i1] = (b[i1] + %0)\n"),
            std::string::npos)
      << print_kernel(k);

  // A chain deeper than the printer nests.
  Expr deep;
  int v = deep.load(0, DType::kF32);
  for (int i = 0; i < 300; ++i)
    v = deep.op(i % 2 ? ExprOp::kNeg : ExprOp::kAbs, DType::kF32, {v});
  deep.op(ExprOp::kAdd, DType::kF32, {v, deep.load(1, DType::kF32)});
  s.expr = deep.nodes;
  expect_round_trip(k);
}

// Loads that do not read the reads in order, once each, name them ("@R"); a read no load
// reads gets a line of its own.
TEST(KernelText, ExplicitReadsRoundTrip) {
  Kernel k = testing::bias_add_kernel(3, 4);
  Statement& s = k.statements[0];
  s.reads = {{1, {it(1)}}, {0, {it(0), it(1)}}, {0, {it(1), it(0)}}};
  Expr e;
  int x = e.load(1, DType::kF32);
  int product = e.op(ExprOp::kMul, DType::kF32, {x, e.load(1, DType::kF32)});
  e.op(ExprOp::kAdd, DType::kF32, {product, e.load(0, DType::kF32)});
  s.expr = e.nodes;
  expect_round_trip(k);
  EXPECT_NE(print_kernel(k).find("    read @2 = x[i1, i0]\n"
                                 "    z[i0, i1] = ((x[i0, i1]@1 * x[i0, i1]@1) + b[i1]@0)\n"),
            std::string::npos)
      << print_kernel(k);
}

TEST(KernelText, DtypesAreWrittenWhereTheyCannotBeDeduced) {
  Kernel k;
  k.name = "typed";
  k.buffers = {{"a", DType::kF16, {8}, BufferRole::kInput},
               {"q", DType::kU8, {8}, BufferRole::kOutput},
               {"z", DType::kI32, {8}, BufferRole::kOutput}};
  Expr e;
  int a = e.op(ExprOp::kCast, DType::kF64, {e.load(0, DType::kF32)});
  int two =
      e.op(ExprOp::kAdd, DType::kF64, {e.constant(1, DType::kF64), e.constant(1, DType::kF64)});
  e.op(ExprOp::kLt, DType::kU8, {a, two});
  k.statements.push_back(statement("s0", {8}, {1, {it(0)}}, {{0, {it(0)}}}, e));
  Expr f;
  f.op(ExprOp::kAbs, DType::kI32, {f.op(ExprOp::kNeg, DType::kI32, {f.iterator(0, DType::kI32)})});
  k.statements.push_back(statement("s1", {8}, {2, {it(0)}}, {}, f));
  Expr g;
  g.op(ExprOp::kCast, DType::kI32, {g.constant(7, DType::kI64)});
  k.statements.push_back(statement("s2", {8}, {2, {it(0)}}, {}, g));
  expect_round_trip(k);
  std::string text = print_kernel(k);
  EXPECT_NE(text.find("s0[i0 < 8]: q[i0] = (f64(a[i0]:f32) < (1:f64 + 1:f64)):u8\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("s1[i0 < 8]: z[i0] = abs(neg(i0:i32))\n"), std::string::npos) << text;
  EXPECT_NE(text.find("s2[i0 < 8]: z[i0] = i32(7:i64)\n"), std::string::npos) << text;
}

TEST(KernelText, ConstantsRoundTripExactly) {
  Kernel k = testing::bias_add_kernel(3, 4);
  k.statements.clear();
  for (double v :
       {0.0, -0.0, 0.1, 1.0 / 3.0, 1e300, 5e-324, 3.4028234663852886e+38, 9007199254740993.0,
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()}) {
    Expr e;
    e.constant(v, DType::kF32);
    k.statements.push_back(statement("c", {3, 4}, {2, {it(0), it(1)}}, {}, e));
  }
  expect_round_trip(k);
  std::string text = print_kernel(k);
  for (const char* spelled : {"= -0\n", "= 0.1\n", "= 0.3333333333333333\n", "= 5e-324\n",
                              "= inf\n", "= -inf\n", "= nan\n", "= -nan\n"})
    EXPECT_NE(text.find(spelled), std::string::npos) << spelled << " in\n" << text;
}

TEST(KernelText, DifferenceNamesTheField) {
  Kernel a = testing::row_sum_kernel(Dim::symbol("N"), 64);
  EXPECT_EQ(kernel_difference(a, a), "");
  Kernel b = a;
  b.statements[1].expr[0].dtype = DType::kF64;
  EXPECT_EQ(kernel_difference(a, b), "statement 1 (update): node 0: dtype f32 vs f64");
  b = a;
  b.buffers[0].shape[0] = Dim::symbol("M");
  EXPECT_EQ(kernel_difference(a, b), "buffer 0: shape [N,64] vs [M,64]");
  b = a;
  b.statements[0].expr[0].access = 5; // meaningless for a constant
  EXPECT_EQ(kernel_difference(a, b), "");
}

TEST(KernelText, CommentsAndBlankLinesAreSkipped) {
  Result<Kernel> k = parse_kernel("# node 'n' (ReduceSum): reduce ROW sum\n"
                                  "kernel k0\n"
                                  "\n"
                                  "  in x: f32[N,64]\n"
                                  "  out y: f32[N]\n"
                                  "  # a comment\n"
                                  "  S0[i0 < N]: y[i0] = 0\n"
                                  "  S1[i0 < N, i1 < 64]:\n"
                                  "    let %v = x[i0, i1]\n"
                                  "\n"
                                  "    y[i0] += (%v * %v)\n");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->statements[1].expr.size(), 2u);
}

// The example of docs/ir.md.
TEST(KernelText, DocumentedExampleReadsBack) {
  std::string text = "kernel example\n"
                     "  in x: f32[N,8]\n"
                     "  in idx: i64[3]\n"
                     "  out y: f32[N,8]\n"
                     "  temp t: f32[N] (aliased: t)\n"
                     "  init[i0 < N]: t[i0] = 0\n"
                     "  sum[i0 < N, i1 < 8, i1 + -1 >= 0]: t[i0] += x[i0, i1]\n"
                     "  square[i0 < N, i1 < 8]:\n"
                     "    let %2 = (x[i0, i1] - t[i0])\n"
                     "    y[i0, i1] = (%2 * %2)\n"
                     "  mask[i0 < N, i1 < 8]: y[i0, i1] = f32((x[i0, i1] > 0):u8)\n"
                     "  scatter[i0 < 3, i1 < 8]: y[wrap(idx[i0]), i1] max= x[i0, i1]\n";
  Result<Kernel> k = parse_kernel(text);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(print_kernel(*k), text);
}

std::string error_of(std::string_view text) {
  Result<Kernel> k = parse_kernel(text);
  return k.ok() ? "(parsed)" : k.status().message();
}

TEST(KernelText, ErrorsNameLineColumnAndWhatWasExpected) {
  const std::string head = "kernel k\n  in x: f32[4]\n  out y: f32[4]\n";
  EXPECT_EQ(error_of("kernal k\n"), "line 1, column 1: expected 'kernel', found 'kernal k'");
  EXPECT_EQ(error_of(head + "  s[i0 < 4]: z[i0] = 0\n"),
            "line 4, column 14: expected a buffer declared above, found 'z[i0] = 0'");
  EXPECT_EQ(error_of(head + "  s[i0 < 4]: y[i0] = x[i0\n"),
            "line 4, column 26: expected ']', found the end of the line");
  EXPECT_EQ(error_of("kernel k\n  in x: f33[4]\n"),
            "line 2, column 9: expected a dtype (f32, i64, ...), found 'f33[4]'");
  EXPECT_EQ(error_of(head + "  s[i0 < 4]:\n    let %a = 1\n    y[i0] = %a\n"),
            "line 5, column 14: expected a dtype here, e.g. 1:f32, found '1'");
  EXPECT_EQ(error_of(head + "  s[i0 < 4]: y[i0] = (x[i0] + %b)\n"),
            "line 4, column 31: expected a label bound by a let above, found '%b)'");
  EXPECT_EQ(error_of(head + "  s[i1 < 4]: y[i0] = 0\n"),
            "line 4, column 5: expected i0 (iterators in order, before the guards), found 'i1 < "
            "4]: y[i0] ='");
  EXPECT_EQ(error_of(head + "  s[i0 < 4]: y[i0] = frob(x[i0])\n"),
            "line 4, column 22: expected an op, a dtype (a cast) or extent, found 'frob(x[i0])'");
  EXPECT_EQ(error_of(head + "  s[i0 < 4]: y[i0] = 0\n  in z: f32[1]\n"),
            "line 5, column 3: expected a statement (buffers come first), found 'in z: f32[1]'");
  EXPECT_EQ(error_of("kernel k\n  in x: f32[4]\n  out x: f32[4]\n"),
            "line 3, column 7: expected a name no other buffer has, found 'x: f32[4]'");
  // A view group is named by its first buffer, declared above (or the buffer itself).
  EXPECT_EQ(error_of("kernel k\n  in x: f32[4]\n  out y: f32[4] (aliased: x)\n"),
            "line 3, column 27: expected this buffer's name or an earlier one's that starts a view "
            "group, found 'x)'");
  EXPECT_EQ(error_of("kernel k\n  out y: f32[4] (aliased: z)\n  in z: f32[2,2] (aliased: y)\n"),
            "line 2, column 27: expected this buffer's name or an earlier one's that starts a view "
            "group, found 'z)'");
  // Well-formed text of a kernel that does not verify.
  EXPECT_EQ(error_of(head + "  s[i0 < 4]: x[i0] = 0\n"),
            "the kernel text does not verify: s: writes input buffer x");
}

// Every prefix of valid text, and many damaged copies, parse or fail cleanly.
TEST(KernelText, BrokenTextNeverCrashes) {
  Kernel k = every_op_kernel();
  std::vector<std::string> texts = {print_kernel(k),
                                    print_kernel(testing::scatter_add_rows_kernel(4, 8, 3))};
  int errors = 0;
  for (const std::string& text : texts) {
    for (size_t n = 0; n < text.size(); ++n) {
      Result<Kernel> r = parse_kernel(std::string_view(text).substr(0, n));
      if (!r.ok()) {
        ++errors;
        EXPECT_TRUE(r.status().message().starts_with("line ") ||
                    r.status().message().starts_with("the kernel text does not verify"))
            << r.status().message();
      }
    }
  }
  EXPECT_GT(errors, 1000);
  std::mt19937 rng(28);
  const std::string alphabet = "[](),:%@<>=+-*/ \n0123456789ixyz\"\\.#fe";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = texts[static_cast<size_t>(trial) % texts.size()];
    for (int edits = 1 + trial % 4; edits > 0; --edits)
      text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
    (void)parse_kernel(text);
  }
}

} // namespace
} // namespace weft::kernel
