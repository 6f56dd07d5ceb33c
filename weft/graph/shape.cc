#include "weft/graph/shape.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

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

// A quotient factor "(X+a)/b" (dim_floor_div's spelling): X, a and b.
struct Quotient {
  Dim x;
  int64_t offset, divisor;
};

std::optional<Quotient> parse_quotient(const std::string& f) {
  size_t slash = f.rfind(")/");
  if (f.empty() || f[0] != '(' || slash == std::string::npos) return std::nullopt;
  std::optional<int64_t> divisor = parse_constant(f.substr(slash + 2));
  size_t sign = f.find_last_of("+-", slash);
  if (!divisor || *divisor <= 0 || sign == std::string::npos || sign < 2) return std::nullopt;
  std::optional<int64_t> offset = parse_constant(f.substr(sign + 1, slash - sign - 1));
  if (!offset) return std::nullopt;
  std::string x = f.substr(1, sign - 1);
  Dim xd = parse_constant(x) ? Dim(*parse_constant(x)) : Dim::symbol(x);
  return Quotient{xd, f[sign] == '-' ? -*offset : *offset, *divisor};
}

// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

} // namespace

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
  if (std::optional<Quotient> q = parse_quotient(a.symbol_name())) {
    x = q->x;
    offset = q->offset + q->divisor * offset;
    divisor *= q->divisor;
    if (offset == 0 && divisor == 1) return x; // (T+1)/1 - 1 is T
  }
  return Dim::symbol(fmt::format("({}{}{})/{}", x.to_string(), offset < 0 ? '-' : '+',
                                 offset < 0 ? -offset : offset, divisor));
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
      if (!x || __builtin_add_overflow(*x, q->offset, &v)) return std::nullopt;
      v = floor_div(v, q->divisor);
      if (v < 0) return std::nullopt;
    } else {
      return std::nullopt;
    }
    if (__builtin_mul_overflow(n, v, &n)) return std::nullopt;
  }
  return n;
}

std::vector<std::string> dim_symbols(const Dim& d) {
  std::vector<std::string> out;
  for (const std::string& s : factors_of(d).symbols) {
    if (std::optional<Quotient> q = parse_quotient(s)) {
      for (std::string& inner : dim_symbols(q->x))
        out.push_back(std::move(inner));
    } else {
      out.push_back(s);
    }
  }
  return out;
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + (shape ? shape_to_string(*shape) : "[?]");
}

} // namespace weft
