#include "weft/graph/shape.h"

#include <algorithm>
#include <charconv>

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

Product factors_of(const Dim& d) {
  if (d.is_static()) return {d.value(), {}};
  Product p;
  const std::string& name = d.symbol_name();
  for (size_t begin = 0; begin <= name.size();) {
    size_t end = std::min(name.find('*', begin), name.size());
    std::string factor = name.substr(begin, end - begin);
    if (std::optional<int64_t> c = parse_constant(factor))
      p.constant *= *c;
    else
      p.symbols.push_back(factor);
    begin = end + 1;
  }
  return p;
}

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

std::optional<int64_t> eval_dim(const Dim& d, const std::map<std::string, int64_t>& symbols) {
  Product p = factors_of(d);
  int64_t n = p.constant;
  for (const std::string& s : p.symbols) {
    auto it = symbols.find(s);
    if (it == symbols.end() || __builtin_mul_overflow(n, it->second, &n)) return std::nullopt;
  }
  return n;
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + (shape ? shape_to_string(*shape) : "[?]");
}

} // namespace weft
