#include "weft/library/roi_align_call.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "weft/library/shape_call.h"

namespace weft::library {

namespace {

// One axis of a region: for each bin and sample along it, two taps (a row or column of the
// input, and its bilinear weight; 0 for a point more than a pixel outside).
struct Tap {
  int64_t at;
  double weight;
};

std::vector<Tap> taps_of(double begin, double end, int64_t bins, int64_t samples, int64_t extent,
                         bool half_pixel) {
  double size = end - begin;
  if (!half_pixel) size = std::max(size, 1.0);
  double bin = size / static_cast<double>(bins);
  std::vector<Tap> taps;
  taps.reserve(static_cast<size_t>(bins * samples * 2));
  double last = static_cast<double>(extent - 1);
  for (int64_t b = 0; b < bins; ++b) {
    for (int64_t s = 0; s < samples; ++s) {
      double pos = begin + static_cast<double>(b) * bin +
                   (static_cast<double>(s) + 0.5) * bin / static_cast<double>(samples);
      bool outside = pos < -1 || pos > static_cast<double>(extent);
      pos = std::max(pos, 0.0);
      double low = std::floor(pos);
      bool at_end = low >= last; // both taps on the last row
      if (at_end) low = pos = last;
      double high = at_end ? low : low + 1;
      double r = pos - low;
      taps.push_back({static_cast<int64_t>(low), outside ? 0.0 : 1 - r});
      taps.push_back({static_cast<int64_t>(high), outside ? 0.0 : r});
    }
  }
  return taps;
}

template <typename T>
void roi_align(const T* x, const T* rois, const int64_t* batch, T* y, int64_t n, int64_t c,
               int64_t h, int64_t w, int64_t regions, const RoiAlignAttrs& a) {
  int64_t ph = a.output_height, pw = a.output_width, s = a.sampling_ratio;
  double offset = a.half_pixel ? 0.5 : 0, scale = a.spatial_scale;
  double none = a.max ? -std::numeric_limits<double>::infinity() : 0;
  double per_point = static_cast<double>(s * s);
#pragma omp parallel for schedule(dynamic, 1) if (regions * c > 1)
  for (int64_t r = 0; r < regions; ++r) {
    const T* roi = rois + r * 4; // x1, y1, x2, y2
    std::vector<Tap> ty =
        taps_of(static_cast<double>(roi[1]) * scale - offset,
                static_cast<double>(roi[3]) * scale - offset, ph, s, h, a.half_pixel);
    std::vector<Tap> tx =
        taps_of(static_cast<double>(roi[0]) * scale - offset,
                static_cast<double>(roi[2]) * scale - offset, pw, s, w, a.half_pixel);
    int64_t b = std::clamp<int64_t>(batch[r], 0, n - 1);
    for (int64_t ch = 0; ch < c; ++ch) {
      const T* plane = x + (b * c + ch) * h * w;
      T* out = y + (r * c + ch) * ph * pw;
      for (int64_t oy = 0; oy < ph; ++oy) {
        for (int64_t ox = 0; ox < pw; ++ox) {
          double acc = none;
          for (int64_t i = oy * s * 2; i < (oy + 1) * s * 2; ++i) {
            const Tap& u = ty[static_cast<size_t>(i)];
            const T* row = plane + std::clamp<int64_t>(u.at, 0, h - 1) * w;
            for (int64_t j = ox * s * 2; j < (ox + 1) * s * 2; ++j) {
              const Tap& v = tx[static_cast<size_t>(j)];
              double term = u.weight * v.weight *
                            static_cast<double>(row[std::clamp<int64_t>(v.at, 0, w - 1)]);
              acc = a.max ? std::max(acc, term) : acc + term / per_point;
            }
          }
          out[oy * pw + ox] = static_cast<T>(acc);
        }
      }
    }
  }
}

class RoiAlignKernel final : public runtime::LibraryKernel {
public:
  RoiAlignKernel(DType dtype, std::vector<CallExtent> dims, CallExtent regions, RoiAlignAttrs a)
      : dtype_(dtype), dims_(std::move(dims)), regions_(regions), attrs_(a) {}

  Status run(void* const* buffers, const int64_t* extents) const override {
    int64_t n = dims_[0].at(extents), c = dims_[1].at(extents), h = dims_[2].at(extents),
            w = dims_[3].at(extents), regions = regions_.at(extents);
    if (regions == 0) return Status();
    if (n == 0 || h == 0 || w == 0) return Status::error("RoiAlign: the input is empty");
    const auto* batch = static_cast<const int64_t*>(buffers[2]);
    if (dtype_ == DType::kF32) {
      roi_align(static_cast<const float*>(buffers[0]), static_cast<const float*>(buffers[1]), batch,
                static_cast<float*>(buffers[3]), n, c, h, w, regions, attrs_);
    } else {
      roi_align(static_cast<const double*>(buffers[0]), static_cast<const double*>(buffers[1]),
                batch, static_cast<double*>(buffers[3]), n, c, h, w, regions, attrs_);
    }
    return Status();
  }

  std::string describe() const override { return "taps per region, then channels"; }

private:
  DType dtype_;
  std::vector<CallExtent> dims_; // N, C, H, W
  CallExtent regions_;
  RoiAlignAttrs attrs_;
};

} // namespace

std::optional<LibraryCall> roi_align_call(const Node& node) {
  if (node.op_type != Op::kRoiAlign || node.inputs.size() != 3 || node.outputs.empty())
    return std::nullopt;
  const Value* x = node.inputs[0];
  const Value* rois = node.inputs[1];
  const Value* batch = node.inputs[2];
  const Value* y = node.outputs[0];
  const auto& a = node.attrs_as<RoiAlignAttrs>();
  bool types = (x->type.dtype == DType::kF32 || x->type.dtype == DType::kF64) &&
               rois->type.dtype == x->type.dtype && batch->type.dtype == DType::kI64 &&
               y->type.dtype == x->type.dtype;
  if (!types || a.sampling_ratio <= 0 || !x->type.shape || x->type.shape->size() != 4 ||
      !y->type.shape || y->type.shape->empty())
    return std::nullopt;
  LibraryCall call;
  std::vector<CallExtent> dims;
  for (const Dim& d : *x->type.shape) {
    if (d.is_unknown()) return std::nullopt;
    dims.push_back(call_extent(d, call.symbols));
  }
  const Dim& regions = (*y->type.shape)[0];
  if (regions.is_unknown()) return std::nullopt;
  CallExtent r = call_extent(regions, call.symbols);
  call.kernel = std::make_shared<RoiAlignKernel>(x->type.dtype, std::move(dims), r, a);
  call.values = {x, rois, batch, y};
  call.nodes = {&node};
  return call;
}

} // namespace weft::library
