#include "weft/library/shape_call.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace weft::library {

namespace {

// Writes each element: a static extent, or the extent of one of the launch's symbols.
class ShapeKernel final : public runtime::LibraryKernel {
public:
  explicit ShapeKernel(std::vector<CallExtent> elements) : elements_(std::move(elements)) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    auto* out = static_cast<int64_t*>(buffers[0]);
    for (size_t i = 0; i < elements_.size(); ++i)
      out[i] = elements_[i].at(extents);
    return Status();
  }

  std::string describe() const override { return "extents bound at run time"; }

private:
  std::vector<CallExtent> elements_;
};

} // namespace

CallExtent call_extent(const Dim& d, std::vector<Dim>& symbols) {
  if (d.is_static()) return {d.value(), -1};
  auto it = std::find(symbols.begin(), symbols.end(), d);
  if (it == symbols.end()) it = symbols.insert(it, d);
  return {0, static_cast<int>(it - symbols.begin())};
}

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
  std::vector<CallExtent> elements;
  for (const Dim& d : taken)
    elements.push_back(call_extent(d, call.symbols));
  call.kernel = std::make_shared<ShapeKernel>(std::move(elements));
  call.values = {y};
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
