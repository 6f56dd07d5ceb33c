#include "weft/library/cuda_top_k.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "weft/graph/attrs.h"
#include "weft/library/shape_call.h"
#include "weft/library/top_k_call.h"

namespace weft::library {

namespace {

using runtime::cuda::Device;
using runtime::cuda::TopKShape;

// Binds X, Values[, Indices] in that order.
class CudaTopKKernel final : public runtime::LibraryKernel {
public:
  CudaTopKKernel(std::shared_ptr<Device> device, CallExtent a, CallExtent n, CallExtent b,
                 CallExtent k, bool largest, bool indices)
      : device_(std::move(device)), a_(a), n_(n), b_(b), k_(k), largest_(largest),
        indices_(indices) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    if (!device_) return Status::error("built without a device (compile only)");
    TopKShape s{a_.at(extents), n_.at(extents), b_.at(extents), k_.at(extents), largest_};
    return device_->top_k(s, static_cast<const float*>(buffers[0]), static_cast<float*>(buffers[1]),
                          indices_ ? static_cast<int64_t*>(buffers[2]) : nullptr);
  }

  std::string describe() const override { return "radix selection and a bitonic sort per row"; }

private:
  std::shared_ptr<Device> device_;
  CallExtent a_, n_, b_, k_;
  bool largest_, indices_;
};

// The most that "d" can be: its value, or the constant of a minimum "min(C,X)" (dim_min's
// spelling; torchvision takes the top min(300, count) candidates); none when unbounded.
std::optional<int64_t> bound(const Dim& d) {
  if (d.is_static()) return d.value();
  const std::string& s = d.symbol_name();
  if (!s.starts_with("min(")) return std::nullopt;
  size_t comma = s.find(',');
  std::string first = s.substr(4, comma == std::string::npos ? 0 : comma - 4);
  if (first.empty() || !std::all_of(first.begin(), first.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      }))
    return std::nullopt;
  return std::stoll(first);
}

} // namespace

std::optional<LibraryCall> cuda_top_k_call(const Node& node, std::shared_ptr<Device> device) {
  if (node.op_type != Op::kTopK) return std::nullopt;
  const Value* x = node.inputs[0];
  const Value* values = node.outputs.empty() ? nullptr : node.outputs[0];
  const Value* indices = node.outputs.size() > 1 ? node.outputs[1] : nullptr;
  if (!values || !x->type.shape || !values->type.shape || x->type.dtype != DType::kF32)
    return std::nullopt;
  const Shape& xs = *x->type.shape;
  auto rank = static_cast<int64_t>(xs.size());
  int64_t axis = node.attrs_as<TopKAttrs>().axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const Dim& len = xs[static_cast<size_t>(axis)];
  const Dim& k = (*values->type.shape)[static_cast<size_t>(axis)];
  // Short static axes stay generated code (every pair compared; one kernel with its
  // neighbours); so do selections larger than shared memory holds.
  std::optional<int64_t> most = bound(k);
  if (k.is_unknown() || !most || *most > runtime::cuda::kTopKMost ||
      (len.is_static() && len.value() <= kGeneratedTopKMaxAxis && shape_is_static(xs) &&
       shape_is_static(*values->type.shape)))
    return std::nullopt;
  for (const Dim& d : xs)
    if (d.is_unknown()) return std::nullopt;
  Dim a = 1, b = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) a = dim_mul(a, xs[static_cast<size_t>(d)]);
    if (d > axis) b = dim_mul(b, xs[static_cast<size_t>(d)]);
  }
  LibraryCall call;
  CallExtent ea = call_extent(a, call.symbols), en = call_extent(len, call.symbols),
             eb = call_extent(b, call.symbols), ek = call_extent(k, call.symbols);
  call.kernel = std::make_shared<CudaTopKKernel>(
      std::move(device), ea, en, eb, ek, node.attrs_as<TopKAttrs>().largest, indices != nullptr);
  call.values = {x, values};
  if (indices) call.values.push_back(indices);
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
