// Shapes whose dims are integers or named symbols, and the type of a value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weft/graph/dtype.h"

namespace weft {

// One dimension: a known extent, or a symbol such as "batch" that stands for an extent
// known only at run time. Two dims with the same symbol are equal.
class Dim {
public:
  Dim(int64_t value) : value_(value) {} // NOLINT(google-explicit-constructor)
  static Dim symbol(std::string name) { return Dim(0, std::move(name)); }
  // A dim a shape function could not determine. It never appears in the graph IR itself.
  static Dim unknown() { return symbol("?"); }

  bool is_static() const { return symbol_.empty(); }
  bool is_unknown() const { return symbol_ == "?"; }
  int64_t value() const;                                     // requires is_static()
  const std::string& symbol_name() const { return symbol_; } // empty when static
  std::string to_string() const;

  friend bool operator==(const Dim&, const Dim&) = default;

private:
  Dim(int64_t value, std::string symbol) : value_(value), symbol_(std::move(symbol)) {}
  int64_t value_;
  std::string symbol_; // empty for a static dim
};

using Shape = std::vector<Dim>;

// "[2,3,N]"; "[]" is a scalar.
std::string shape_to_string(const Shape& shape);
bool shape_is_static(const Shape& shape);
// Product of the dims, or nullopt when a dim is symbolic or the product overflows int64.
std::optional<int64_t> shape_num_elements(const Shape& shape);
std::vector<int64_t> shape_static_dims(const Shape& shape); // requires shape_is_static
Shape shape_from_dims(const std::vector<int64_t>& dims);

// Product of dims [begin, end) of "shape" (dim_mul: symbolic ones multiply), or unknown when
// one of them is unknown; the whole shape by default.
Dim dims_product(const Shape& shape, size_t begin = 0, size_t end = SIZE_MAX);

// Products of symbols. A symbolic product is one symbol spelled canonically: the constant
// factor first (when not 1), then the symbols sorted, joined by '*' ("64*N*T"), so that equal
// products are equal dims.
Dim dim_mul(const Dim& a, const Dim& b);
// a / b when b divides a exactly as a product: its constant divides a's and its symbols are
// among a's (12*N*T / 4*T = 3*N); nullopt otherwise.
std::optional<Dim> dim_div(const Dim& a, const Dim& b);
// floor((a + offset) / divisor), divisor >= 1: a window's output extent over a symbolic input
// ((W + 2 pad - dilation (kernel - 1) - 1) / stride + 1). With symbols it is one factor
// spelled "(X+offset)/divisor" (X a product; a quotient of a quotient is folded into one:
// "(W+3)/4", not "((W+1)/2+1)/2"), which multiplies with others as a symbol does.
Dim dim_floor_div(const Dim& a, int64_t offset, int64_t divisor);
// a + b, where dims can spell it: both static; a symbolic one plus a constant c >= 0
// ("(X+c)/1", as dim_floor_div); or sums of products ("(P+T)/1", the terms sorted: a KV
// cache's past and new lengths; a Concat of many data-dependent counts). nullopt otherwise.
std::optional<Dim> dim_add(const Dim& a, const Dim& b);
// a - b, taken to be >= 0 (a Slice from a symbolic start to its end): both static; a constant
// b (dim_floor_div); terms of a sum taken away ((P+T)/1 - P is T); or a difference of a
// product b from a sum or product a, one factor "(A-B)/1" (OPT's positions from the past
// length P of a mask of length M: M - P, until unify_dims finds M to be P + T). nullopt
// otherwise.
std::optional<Dim> dim_sub(const Dim& a, const Dim& b);
// min(a, b): one factor "min(A,B)" (the two sorted) when symbolic, which multiplies with
// others as a symbol does (TopK's K of min(300, N), as torchvision computes it).
Dim dim_min(const Dim& a, const Dim& b);
// The extent of "d" when "symbols" gives each of its factors (or those a quotient's X holds);
// nullopt otherwise, when a quotient is negative, or when the product overflows int64.
std::optional<int64_t> eval_dim(const Dim& d, const std::map<std::string, int64_t>& symbols);
// Is "d" known once "names" are: each factor static, one of them, or a quotient, sum or
// minimum of such (eval_dim's recursion, without values: "(T-3)/1" is known from T, though
// negative at T = 1).
bool dim_over(const Dim& d, const std::set<std::string>& names);
// The symbols "d" is made of, quotients looked into, with repeats: "N*(W+1)/2" gives N, W.
std::vector<std::string> dim_symbols(const Dim& d);
// "d" with the symbol "symbol" taken to be "by", inside quotients, sums, differences and
// minimums too ((M-P)/1 with M := (P+T)/1 is T); nullopt where the result cannot be spelled.
std::optional<Dim> dim_substitute(const Dim& d, const std::string& symbol, const Dim& by);
// X and Y when "d" is a difference "(X-Y)/1" (dim_sub's).
std::optional<std::pair<Dim, Dim>> dim_difference(const Dim& d);
// Is "d" one symbol alone ("T"; not "2*T" or "(P+T)/1"), as an input's dim binds?
bool dim_is_symbol(const Dim& d);
// A dim_param as PyTorch's exporter spells a derived dim ("2*h", "2*h + 1", "3*h - 3":
// sympy's sums of a constant and products of names) as a dim over its names; any other
// spelling is one symbol of that name.
Dim dim_from_spelling(const std::string& s);
// The extent of the one symbol of "d" that makes "d" equal "extent", where "d" is over one
// symbol alone and grows with it, as a*X + b does ("2*h", "(2*h+1)/1"): an input's dim binds
// its symbol this way. nullopt where no extent >= 0 of the symbol gives "extent".
std::optional<std::pair<std::string, int64_t>> solve_dim(const Dim& d, int64_t extent);
// The symbol that an input's dim "d" binds: "d" itself when a name alone, or the symbol that
// solve_dim finds from its extent; nullopt for a dim over several symbols.
std::optional<std::string> bound_symbol(const Dim& d);

// A relation between two dims that a dynamic-shape compile takes to hold, as node "node"
// needs; each run checks it (Executable::bind). "need" says what for, in its message.
struct DimLimit {
  enum class Kind : uint8_t {
    kAtMost,     // dim <= bound: a Slice's symbolic end within its axis
    kMultipleOf, // dim a multiple of bound: GroupNormalization's channels of its groups
    kNotEmpty,   // bound >= 1 where dim > 0: an axis that dim indices index into
    kEqual,      // dim == bound: GroupNormalization's scale, one per channel
    kOneOrEqual, // dim == 1 or bound: RMSNormalization's scale broadcast to the input
  };
  Dim dim;
  Dim bound;
  std::string node;
  Kind kind = Kind::kAtMost;
  std::string need = "a slice within its axis";
  friend bool operator==(const DimLimit&, const DimLimit&) = default;
};

// The type of a value: a dtype and, when known, a shape. An unknown rank is a missing shape.
struct TensorType {
  DType dtype = DType::kF32;
  std::optional<Shape> shape;

  bool has_static_shape() const { return shape && shape_is_static(*shape); }
  // "f32[2,3,N]", or "f32[?]" when the rank is unknown.
  std::string to_string() const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

} // namespace weft
