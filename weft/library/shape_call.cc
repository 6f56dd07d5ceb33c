#include "weft/library/shape_call.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace weft::library {

namespace {

// Writes each element: a static extent, or the extent of one of the launch's symbols.
class ShapeKernel final : public runtime::LibraryKernel {
public:
  struct Element {
    int64_t value = 0;
    int symbol = -1; // index into the launch's extents, or -1 for "value"
  };

  explicit ShapeKernel(std::vector<Element> elements) : elements_(std::move(elements)) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    auto* out = static_cast<int64_t*>(buffers[0]);
    for (size_t i = 0; i < elements_.size(); ++i) {
      const Element& e = elements_[i];
      out[i] = e.symbol < 0 ? e.value : extents[e.symbol];
    }
    return Status();
  }

  std::string describe() const override { return "extents bound at run time"; }

private:
  std::vector<Element> elements_;
};

} // namespace

std::optional<LibraryCall> shape_call(const Node& node) {
  if (node.op_type != Op::kShape && node.op_type != Op::kSize) return std::nullopt;
  const Value* x = node.inputs[0];
  const Value* y = node.outputs[0];
  if (!x->type.shape || shape_is_static(*x->type.shape) || y->type.dtype != DType::kI64)
    return std::nullopt;
  const Shape& dims = *x->type.shape;
  Shape taken;
  if (node.op_type == Op::kSize) {
    Dim product = 1;
    for (const Dim& d : dims)
      product = dim_mul(product, d);
    taken.push_back(product);
  } else {
    const auto& a = node.attrs_as<ShapeAttrs>();
    auto rank = static_cast<int64_t>(dims.size());
    auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
    for (int64_t i = clamp(a.start); i < clamp(a.end.value_or(rank)); ++i)
      taken.push_back(dims[static_cast<size_t>(i)]);
  }
  LibraryCall call;
  std::vector<ShapeKernel::Element> elements;
  for (const Dim& d : taken) {
    if (d.is_static()) {
      elements.push_back({d.value(), -1});
      continue;
    }
    auto it = std::find(call.symbols.begin(), call.symbols.end(), d);
    if (it == call.symbols.end()) it = call.symbols.insert(it, d);
    elements.push_back({0, static_cast<int>(it - call.symbols.begin())});
  }
  call.kernel = std::make_shared<ShapeKernel>(std::move(elements));
  call.values = {y};
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
