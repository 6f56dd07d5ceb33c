#include "weft/graph/shape.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "weft/support/check.h"

namespace weft {

int64_t Dim::value() const {
  WEFT_CHECK(is_static(), "Dim::value of a symbolic dim");
  return value_;
}

std::string Dim::to_string() const { return is_static() ? std::to_string(value()) : symbol_name(); }

std::string shape_to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ",";
    out += shape[i].to_string();
  }
  return out + "]";
}

bool shape_is_static(const Shape& shape) {
  for (const Dim& d : shape) {
    if (!d.is_static()) return false;
  }
  return true;
}

std::optional<int64_t> shape_num_elements(const Shape& shape) {
  int64_t n = 1;
  for (const Dim& d : shape) {
    if (!d.is_static() || d.value() < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d.value(), &n)) return std::nullopt;
  }
  return n;
}

std::vector<int64_t> shape_static_dims(const Shape& shape) {
  std::vector<int64_t> dims;
  for (const Dim& d : shape) {
    WEFT_CHECK(d.is_static(), "shape_static_dims on a symbolic shape");
    dims.push_back(d.value());
  }
  return dims;
}

Shape shape_from_dims(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

namespace {

// The factors of a symbolic product: its constant and its symbols, in order.
struct Product {
  int64_t constant = 1;
  std::vector<std::string> symbols;
};

// Is "s" all digits (a constant factor)?
std::optional<int64_t> parse_constant(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The factors of "name" split at its '*' outside parentheses (a quotient's own products
// stay in it).
std::vector<std::string> split_factors(const std::string& name) {
  std::vector<std::string> factors;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || (name[i] == '*' && depth == 0)) {
      factors.push_back(name.substr(begin, i - begin));
      begin = i + 1;
    } else if (name[i] == '(') {
      ++depth;
    } else if (name[i] == ')') {
      --depth;
    }
  }
  return factors;
}

Product factors_of(const Dim& d) {
  if (d.is_static()) return {d.value(), {}};
  Product p;
  for (const std::string& factor : split_factors(d.symbol_name())) {
    if (std::optional<int64_t> c = parse_constant(factor))
      p.constant *= *c;
    else
      p.symbols.push_back(factor);
  }
  return p;
}

// The positions in "s" outside parentheses (depth 0) of the characters "chars".
std::vector<size_t> top_level(const std::string& s, std::string_view chars) {
  std::vector<size_t> at;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (depth == 0 && chars.find(s[i]) != std::string_view::npos) at.push_back(i);
  }
  return at;
}

// Does the '(' at s[0] close at s[close]?
bool closes_at(const std::string& s, size_t close) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0) return i == close;
  }
  return false;
}

// A dim from its spelling: a constant or a symbolic one.
Dim dim_of(const std::string& s) {
  std::optional<int64_t> c = parse_constant(s);
  return c ? Dim(*c) : Dim::symbol(s);
}

// A quotient factor "(X+a)/b" (dim_floor_div's spelling): X, a and b; a sum "(X+Y)/1"
// (dim_add's), whose offset Y is a product and whose X may be a sum itself ("(A+B+C)/1": X
// is "(A+B)/1"); or a difference "(X-Y)/1" (dim_sub's), Y a product, taken away.
struct Quotient {
  Dim x;
  Dim offset;
  int64_t divisor;
  bool subtract = false; // a symbolic offset taken away
};

std::optional<Quotient> parse_quotient(const std::string& f) {
  size_t slash = f.rfind(")/");
  if (f.empty() || f[0] != '(' || slash == std::string::npos || !closes_at(f, slash))
    return std::nullopt;
  std::optional<int64_t> divisor = parse_constant(f.substr(slash + 2));
  std::string body = f.substr(1, slash - 1);
  std::vector<size_t> signs = top_level(body, "+-");
  if (!divisor || *divisor <= 0 || signs.empty() || signs.back() == 0) return std::nullopt;
  size_t sign = signs.back();
  std::string term = body.substr(sign + 1);
  std::optional<int64_t> constant = parse_constant(term);
  bool minus = body[sign] == '-';
  if (term.empty() || (!constant && minus && *divisor != 1)) return std::nullopt;
  Dim offset = constant ? Dim(minus ? -*constant : *constant) : Dim::symbol(term);
  std::string x = body.substr(0, sign);
  bool sum = !top_level(x, "+-").empty();
  return Quotient{sum ? Dim::symbol("(" + x + ")/1") : dim_of(x), offset, *divisor,
                  !constant && minus};
}

// The operands of a minimum factor "min(A,B)" (dim_min's spelling).
std::optional<std::pair<Dim, Dim>> parse_min(const std::string& f) {
  if (!f.starts_with("min(") || f.back() != ')') return std::nullopt;
  std::string args = f.substr(4, f.size() - 5);
  std::vector<size_t> commas = top_level(args, ",");
  if (commas.size() != 1 || !closes_at(f.substr(3), f.size() - 4)) return std::nullopt;
  return std::pair{dim_of(args.substr(0, commas[0])), dim_of(args.substr(commas[0] + 1))};
}

// The terms of a sum of products: a product alone, or the terms of dim_add's "(A+B+C)/1"
// (sorted); nullopt for other dims. A term is no constant: "(X+c)/1" is X plus a constant,
// one factor.
std::optional<std::vector<std::string>> sum_terms(const Dim& d) {
  if (d.is_static()) return std::nullopt;
  const std::string& s = d.symbol_name();
  if (s.starts_with("(") && s.ends_with(")/1") && closes_at(s, s.size() - 3)) {
    std::string inner = s.substr(1, s.size() - 4);
    std::vector<std::string> terms;
    size_t begin = 0;
    for (size_t plus : top_level(inner, "+")) {
      terms.push_back(inner.substr(begin, plus - begin));
      begin = plus + 1;
    }
    terms.push_back(inner.substr(begin));
    bool all_products = top_level(inner, "-").empty() &&
                        std::none_of(terms.begin(), terms.end(), [](const std::string& t) {
                          return t.empty() || parse_constant(t);
                        });
    if (terms.size() > 1 && all_products) return terms;
  }
  if (!top_level(s, "+-").empty()) return std::nullopt;
  return std::vector<std::string>{s};
}

// a + sign * b where both are products of the same factors ("2*h" and "h": 3*h or h), the
// result not negative; nullopt otherwise.
std::optional<Dim> combine_like(const Dim& a, const Dim& b, int sign) {
  if (a.is_static() || b.is_static()) return std::nullopt;
  Product pa = factors_of(a), pb = factors_of(b);
  std::sort(pa.symbols.begin(), pa.symbols.end());
  std::sort(pb.symbols.begin(), pb.symbols.end());
  int64_t constant = pa.constant + sign * pb.constant;
  if (pa.symbols != pb.symbols || constant < 0) return std::nullopt;
  Dim out = constant;
  for (const std::string& s : pa.symbols)
    out = dim_mul(out, Dim::symbol(s));
  return out;
}

// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

} // namespace

Dim dims_product(const Shape& shape, size_t begin, size_t end) {
  Dim n = 1;
  for (size_t i = begin; i < std::min(end, shape.size()); ++i) {
    if (shape[i].is_unknown()) return Dim::unknown();
    n = dim_mul(n, shape[i]);
  }
  return n;
}

Dim dim_mul(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value() * b.value();
  Product pa = factors_of(a), pb = factors_of(b);
  int64_t constant = pa.constant * pb.constant;
  if (constant == 0) return 0;
  std::vector<std::string> symbols = pa.symbols;
  symbols.insert(symbols.end(), pb.symbols.begin(), pb.symbols.end());
  std::sort(symbols.begin(), symbols.end());
  std::string name = constant == 1 ? "" : std::to_string(constant);
  for (const std::string& s : symbols)
    name += (name.empty() ? "" : "*") + s;
  return Dim::symbol(name);
}

std::optional<Dim> dim_div(const Dim& a, const Dim& b) {
  Product pa = factors_of(a), pb = factors_of(b);
  if (pb.constant == 0 || pa.constant % pb.constant != 0) return std::nullopt;
  Dim out = pa.constant / pb.constant;
  std::vector<std::string> rest = pa.symbols;
  for (const std::string& s : pb.symbols) {
    auto it = std::find(rest.begin(), rest.end(), s);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  for (const std::string& s : rest)
    out = dim_mul(out, Dim::symbol(s));
  return out;
}

Dim dim_floor_div(const Dim& a, int64_t offset, int64_t divisor) {
  WEFT_CHECK(divisor > 0, "dim_floor_div by a divisor below 1");
  if (a.is_static()) return floor_div(a.value() + offset, divisor);
  if (divisor == 1 && offset == 0) return a;
  // floor((floor((x + a) / b) + c) / d) = floor((x + a + b c) / (b d)) for integers.
  Dim x = a;
  if (std::optional<Quotient> q = parse_quotient(a.symbol_name()); q && q->offset.is_static()) {
    x = q->x;
    offset = q->offset.value() + q->divisor * offset;
    divisor *= q->divisor;
    if (offset == 0 && divisor == 1) return x; // (T+1)/1 - 1 is T
  }
  // floor((c X + a) / d) = (c / d) X + floor(a / d) where d divides c: a 2x2 pooling of 2*h
  // is h, as the x2 upsampling after it needs.
  if (divisor > 1 && factors_of(x).constant % divisor == 0) {
    Dim whole = *dim_div(x, divisor);
    int64_t rest = floor_div(offset, divisor);
    return rest == 0 ? whole : dim_floor_div(whole, rest, 1);
  }
  return Dim::symbol(fmt::format("({}{}{})/{}", x.to_string(), offset < 0 ? '-' : '+',
                                 offset < 0 ? -offset : offset, divisor));
}

std::optional<Dim> dim_add(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value() + b.value();
  if (b.is_static())
    return b.value() >= 0 ? std::optional(dim_floor_div(a, b.value(), 1)) : std::nullopt;
  if (a.is_static()) return dim_add(b, a);
  if (std::optional<Dim> like = combine_like(a, b, 1)) return like; // h + h is 2*h
  // Sums of products of plain symbols, their terms sorted: P + T and T + P are one dim, and so
  // are (A + B) + C and A + (B + C) (a Concat of many data-dependent counts).
  std::optional<std::vector<std::string>> ta = sum_terms(a), tb = sum_terms(b);
  if (!ta || !tb) return std::nullopt;
  ta->insert(ta->end(), tb->begin(), tb->end());
  std::sort(ta->begin(), ta->end());
  return Dim::symbol(fmt::format("({})/1", fmt::join(*ta, "+")));
}

std::optional<Dim> dim_sub(const Dim& a, const Dim& b) {
  if (a == b) return 0;
  if (a.is_static() && b.is_static()) return a.value() - b.value();
  if (b.is_static()) return dim_floor_div(a, -b.value(), 1);
  if (std::optional<Dim> like = combine_like(a, b, -1)) return like; // 2*h - h is h
  if (std::optional<Quotient> q = parse_quotient(b.symbol_name());
      q && q->divisor == 1 && !q->subtract && q->offset.is_static() && q->x == a &&
      q->offset.value() <= 0)
    return -q->offset.value(); // X - (X-3)/1 is 3
  std::optional<std::vector<std::string>> ta = sum_terms(a), tb = sum_terms(b);
  if (!ta || !tb || tb->size() != 1) return std::nullopt;
  auto it = std::find(ta->begin(), ta->end(), tb->front());
  if (it == ta->end()) return Dim::symbol(fmt::format("({}-{})/1", a.to_string(), b.to_string()));
  ta->erase(it); // (A+B)/1 - B is A
  if (ta->size() == 1) return Dim::symbol(ta->front());
  return Dim::symbol(fmt::format("({})/1", fmt::join(*ta, "+")));
}

Dim dim_min(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return std::min(a.value(), b.value());
  if (a == b) return a;
  std::string x = a.to_string(), y = b.to_string();
  return Dim::symbol(fmt::format("min({},{})", std::min(x, y), std::max(x, y)));
}

std::optional<int64_t> eval_dim(const Dim& d, const std::map<std::string, int64_t>& symbols) {
  Product p = factors_of(d);
  int64_t n = p.constant;
  for (const std::string& s : p.symbols) {
    int64_t v = 0;
    if (auto it = symbols.find(s); it != symbols.end()) {
      v = it->second;
    } else if (std::optional<Quotient> q = parse_quotient(s)) {
      std::optional<int64_t> x = eval_dim(q->x, symbols);
      std::optional<int64_t> offset = eval_dim(q->offset, symbols);
      if (!x || !offset || __builtin_add_overflow(*x, q->subtract ? -*offset : *offset, &v))
        return std::nullopt;
      v = floor_div(v, q->divisor);
      if (v < 0) return std::nullopt;
    } else if (std::optional<std::pair<Dim, Dim>> m = parse_min(s)) {
      std::optional<int64_t> x = eval_dim(m->first, symbols), y = eval_dim(m->second, symbols);
      if (!x || !y) return std::nullopt;
      v = std::min(*x, *y);
    } else {
      return std::nullopt;
    }
    if (__builtin_mul_overflow(n, v, &n)) return std::nullopt;
  }
  return n;
}

bool dim_over(const Dim& d, const std::set<std::string>& names) {
  if (d.is_static() || names.contains(d.symbol_name())) return true;
  for (const std::string& s : factors_of(d).symbols) {
    if (names.contains(s)) continue;
    if (std::optional<Quotient> q = parse_quotient(s)) {
      if (!dim_over(q->x, names) || !dim_over(q->offset, names)) return false;
    } else if (std::optional<std::pair<Dim, Dim>> m = parse_min(s)) {
      if (!dim_over(m->first, names) || !dim_over(m->second, names)) return false;
    } else {
      return false;
    }
  }
  return true;
}

std::optional<Dim> dim_substitute(const Dim& d, const std::string& symbol, const Dim& by) {
  if (d.is_static()) return d;
  Product p = factors_of(d);
  Dim out = p.constant;
  for (const std::string& f : p.symbols) {
    std::optional<Dim> factor = Dim::symbol(f);
    if (f == symbol) {
      factor = by;
    } else if (std::optional<Quotient> q = parse_quotient(f)) {
      std::optional<Dim> x = dim_substitute(q->x, symbol, by);
      std::optional<Dim> offset = dim_substitute(q->offset, symbol, by);
      if (!x || !offset) return std::nullopt;
      if (q->subtract)
        factor = dim_sub(*x, *offset);
      else if (offset->is_static())
        factor = dim_floor_div(*x, offset->value(), q->divisor);
      else if (q->divisor == 1)
        factor = dim_add(*x, *offset);
      else
        return std::nullopt;
    } else if (std::optional<std::pair<Dim, Dim>> m = parse_min(f)) {
      std::optional<Dim> x = dim_substitute(m->first, symbol, by);
      std::optional<Dim> y = dim_substitute(m->second, symbol, by);
      if (!x || !y) return std::nullopt;
      factor = dim_min(*x, *y);
    }
    if (!factor) return std::nullopt;
    out = dim_mul(out, *factor);
  }
  return out;
}

std::optional<std::pair<Dim, Dim>> dim_difference(const Dim& d) {
  if (d.is_static()) return std::nullopt;
  std::optional<Quotient> q = parse_quotient(d.symbol_name());
  if (!q || !q->subtract) return std::nullopt;
  return std::pair{q->x, q->offset};
}

bool dim_is_symbol(const Dim& d) {
  if (d.is_static()) return false;
  std::vector<std::string> s = dim_symbols(d);
  return s.size() == 1 && s[0] == d.symbol_name();
}

std::vector<std::string> dim_symbols(const Dim& d) {
  std::vector<std::string> out;
  for (const std::string& s : factors_of(d).symbols) {
    if (std::optional<Quotient> q = parse_quotient(s)) {
      for (const Dim* part : {&q->x, &q->offset}) {
        for (std::string& inner : dim_symbols(*part))
          out.push_back(std::move(inner));
      }
    } else if (std::optional<std::pair<Dim, Dim>> m = parse_min(s)) {
      for (const Dim* part : {&m->first, &m->second}) {
        for (std::string& inner : dim_symbols(*part))
          out.push_back(std::move(inner));
      }
    } else {
      out.push_back(s);
    }
  }
  return out;
}

namespace {

bool is_name(const std::string& s) {
  auto alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !s.empty() && alpha(s[0]) && std::all_of(s.begin(), s.end(), alnum);
}

// "2*h" or "h*w" or "3" as a dim; nullopt unless each factor is a constant or a name.
std::optional<Dim> product_from_spelling(const std::string& s) {
  Dim out = 1;
  for (const std::string& factor : split_factors(s)) {
    if (std::optional<int64_t> c = parse_constant(factor))
      out = dim_mul(out, *c);
    else if (is_name(factor))
      out = dim_mul(out, Dim::symbol(factor));
    else
      return std::nullopt;
  }
  return out;
}

} // namespace

Dim dim_from_spelling(const std::string& s) {
  if (s.find_first_of("*+-") == std::string::npos) return Dim::symbol(s); // a name
  // Terms joined by " + " and " - ", as sympy prints them.
  std::optional<Dim> sum;
  size_t begin = 0;
  bool subtract = false;
  while (true) {
    size_t plus = s.find(" + ", begin), minus = s.find(" - ", begin);
    size_t end = std::min(plus, minus);
    std::optional<Dim> term = product_from_spelling(s.substr(begin, end - begin));
    if (!term) return Dim::symbol(s);
    if (!sum)
      sum = term;
    else
      sum = subtract ? (term->is_static() ? dim_sub(*sum, *term) : std::nullopt)
                     : dim_add(*sum, *term);
    if (!sum) return Dim::symbol(s);
    if (end == std::string::npos) return sum->is_static() ? Dim::symbol(s) : *sum;
    subtract = end == minus;
    begin = end + 3;
  }
}

namespace {

// The name X when "d" is a*X or a*X + b (b a constant, "(a*X+b)/1"), as dim_from_spelling
// reads sympy's sums; nullopt for any other dim (a minimum, a quotient, several symbols).
std::optional<std::string> affine_symbol(const Dim& d) {
  Product p = factors_of(d);
  if (p.symbols.size() != 1) return std::nullopt;
  if (is_name(p.symbols[0])) return p.symbols[0];
  std::optional<Quotient> q = parse_quotient(p.symbols[0]);
  if (!q || q->divisor != 1 || q->subtract || !q->offset.is_static()) return std::nullopt;
  Product x = factors_of(q->x);
  if (x.symbols.size() != 1 || !is_name(x.symbols[0])) return std::nullopt;
  return x.symbols[0];
}

} // namespace

std::optional<std::pair<std::string, int64_t>> solve_dim(const Dim& d, int64_t extent) {
  std::optional<std::string> symbol = affine_symbol(d);
  if (!symbol) return std::nullopt;
  // d at the first X where it is defined ("(3*h-3)/1" is not at 0) and at X + 1 gives its
  // slope; the extent of X so found is then checked, not assumed.
  const std::string& x = *symbol;
  for (int64_t x0 = 0; x0 < 8; ++x0) {
    std::optional<int64_t> at0 = eval_dim(d, {{x, x0}}), at1 = eval_dim(d, {{x, x0 + 1}});
    if (!at0 || !at1) continue;
    int64_t slope = *at1 - *at0;
    if (slope <= 0 || extent < *at0 || (extent - *at0) % slope != 0) return std::nullopt;
    int64_t value = x0 + (extent - *at0) / slope;
    if (eval_dim(d, {{x, value}}) != extent) return std::nullopt;
    return std::pair{x, value};
  }
  return std::nullopt;
}

std::optional<std::string> bound_symbol(const Dim& d) {
  if (dim_is_symbol(d)) return d.symbol_name();
  return d.is_static() ? std::nullopt : affine_symbol(d);
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + (shape ? shape_to_string(*shape) : "[?]");
}

} // namespace weft
