#include "weft/graph/shape.h"

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

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + (shape ? shape_to_string(*shape) : "[?]");
}

} // namespace weft
