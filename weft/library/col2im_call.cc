#include "weft/library/col2im_call.h"

#include <cstring>
#include <vector>

#include "weft/graph/shape_functions.h"

namespace weft::library {

namespace {

// Input channel c of the ConvTranspose is tap c % taps of channel c / taps: its weights are
// one at that tap and zero elsewhere, as decompose's col2im writes them.
bool one_hot(const Tensor& w, int64_t taps) {
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    int64_t c = i / taps, t = i % taps;
    if (w.get_double(i) != (t == c % taps ? 1.0 : 0.0)) return false;
  }
  return true;
}

class Col2ImKernel final : public runtime::LibraryKernel {
public:
  Col2ImKernel(std::vector<int64_t> x, std::vector<int64_t> y, std::vector<TransposedWindow> win)
      : x_(std::move(x)), y_(std::move(y)), win_(std::move(win)) {}

  // Each (image, channel) plane on one thread: zeroed, then each tap's columns added in.
  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    const auto* x = static_cast<const float*>(buffers[0]);
    auto* y = static_cast<float*>(buffers[1]);
    const TransposedWindow &wy = win_[0], &wx = win_[1];
    int64_t planes = y_[0] * y_[1], h = y_[2], w = y_[3], bh = x_[2], bw = x_[3];
    int64_t taps = wy.kernel * wx.kernel;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      float* out = y + p * h * w;
      std::memset(out, 0, sizeof(float) * static_cast<size_t>(h * w));
      for (int64_t t = 0; t < taps; ++t) {
        const float* in = x + (p * taps + t) * bh * bw;
        int64_t dy = t / wx.kernel * wy.dilation - wy.pad_begin;
        int64_t dx = t % wx.kernel * wx.dilation - wx.pad_begin;
        for (int64_t by = 0; by < bh; ++by) {
          int64_t oy = by * wy.stride + dy;
          if (oy < 0 || oy >= h) continue;
          for (int64_t bx = 0; bx < bw; ++bx) {
            int64_t ox = bx * wx.stride + dx;
            if (ox >= 0 && ox < w) out[oy * w + ox] += in[by * bw + bx];
          }
        }
      }
    }
    return Status();
  }

  std::string describe() const override { return "Weft's Col2Im, a plane per channel"; }

private:
  std::vector<int64_t> x_, y_; // [N, C * taps, blocks...], [N, C, H, W]
  std::vector<TransposedWindow> win_;
};

} // namespace

std::optional<LibraryCall> col2im_call(const Node& node) {
  if (node.op_type != Op::kConvTranspose || node.inputs.size() != 2 || node.outputs.empty())
    return std::nullopt;
  const Value *x = node.inputs[0], *w = node.inputs[1], *y = node.outputs[0];
  if (x->type.dtype != DType::kF32 || y->type.dtype != DType::kF32 || !w->is_constant() ||
      !x->type.has_static_shape() || !y->type.has_static_shape() || x->type.shape->size() != 4)
    return std::nullopt;
  std::vector<int64_t> dx = shape_static_dims(*x->type.shape),
                       dy = shape_static_dims(*y->type.shape);
  const std::vector<int64_t>& dw = w->constant->dims();
  int64_t group = node.attrs_as<ConvTransposeAttrs>().group;
  if (dw.size() != 4 || dw[1] != 1 || dx[1] != group * dw[2] * dw[3] || dy[1] != group ||
      dy[0] != dx[0] || !one_hot(*w->constant, dw[2] * dw[3]))
    return std::nullopt;
  Result<std::vector<TransposedWindow>> win = conv_transpose_windows(node);
  if (!win.ok() || (*win)[0].out != dy[2] || (*win)[1].out != dy[3]) return std::nullopt;
  LibraryCall call;
  call.kernel = std::make_shared<Col2ImKernel>(dx, dy, *win);
  call.values = {x, y};
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
