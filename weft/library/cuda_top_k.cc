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
  LibraryCall call;
  std::optional<TopKView> v = top_k_view(node, call);
  // Selections larger than shared memory holds stay generated code.
  std::optional<int64_t> most = v ? bound(v->k_dim) : std::nullopt;
  if (!v || node.inputs[0]->type.dtype != DType::kF32 || !most || *most > runtime::cuda::kTopKMost)
    return std::nullopt;
  call.kernel = std::make_shared<CudaTopKKernel>(std::move(device), v->a, v->n, v->b, v->k,
                                                 v->largest, v->indices);
  return call;
}

} // namespace weft::library
