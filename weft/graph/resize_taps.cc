#include "weft/graph/resize_taps.h"

#include <algorithm>
#include <cmath>

namespace weft {

bool resize_taps_cover(const ResizeAttrs& a) {
  return !a.antialias && a.coordinate_transformation_mode != ResizeCoordinates::kTfCropAndResize;
}

AxisTaps resize_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale) {
  double extent = static_cast<double>(in), out_width = scale * extent;
  AxisTaps taps(static_cast<size_t>(out));
  for (int64_t j = 0; j < out; ++j) {
    double o = static_cast<double>(j), half_pixel = (o + 0.5) / scale - 0.5, x = 0;
    switch (a.coordinate_transformation_mode) {
      case ResizeCoordinates::kHalfPixel: x = half_pixel; break;
      case ResizeCoordinates::kPytorchHalfPixel: x = out_width == 1 ? -0.5 : half_pixel; break;
      case ResizeCoordinates::kAlignCorners:
        x = out_width == 1 ? 0 : o * (extent - 1) / (out_width - 1);
        break;
      case ResizeCoordinates::kAsymmetric: x = o / scale; break;
      case ResizeCoordinates::kTfHalfPixelForNn: x = (o + 0.5) / scale; break;
      case ResizeCoordinates::kHalfPixelSymmetric:
        x = extent / 2 * (1 - static_cast<double>(out) / out_width) + half_pixel;
        break;
      case ResizeCoordinates::kTfCropAndResize: break; // not covered (resize_taps_cover)
    }
    double base = std::ceil(x) - 1, r = x - base;
    auto clamp = [&](double p) { return std::clamp<int64_t>(static_cast<int64_t>(p), 0, in - 1); };
    auto& t = taps[static_cast<size_t>(j)];
    if (a.mode == ResizeMode::kNearest) {
      bool up = a.nearest_mode == NearestMode::kRoundPreferFloor  ? r > 0.5
                : a.nearest_mode == NearestMode::kRoundPreferCeil ? r >= 0.5
                : a.nearest_mode == NearestMode::kFloor           ? r == 1
                                                                  : true;
      t.emplace_back(clamp(base + (up ? 1 : 0)), 1.0);
      continue;
    }
    std::vector<double> weights;
    double first = a.mode == ResizeMode::kLinear ? 0 : -1;
    if (a.mode == ResizeMode::kLinear) {
      weights = {1 - r, r};
    } else { // the cubic convolution kernel at distances r + 1, r, 1 - r and 2 - r
      double c = a.cubic_coeff_a;
      auto outer = [&](double d) { return ((c * d - 5 * c) * d + 8 * c) * d - 4 * c; };
      auto inner = [&](double d) { return ((c + 2) * d - (c + 3)) * d * d + 1; };
      weights = {outer(r + 1), inner(r), inner(1 - r), outer(2 - r)};
    }
    double sum = 0;
    for (size_t k = 0; k < weights.size(); ++k) {
      double p = base + first + static_cast<double>(k);
      if (a.exclude_outside && (p < 0 || p > extent - 1)) weights[k] = 0;
      sum += weights[k];
      t.emplace_back(clamp(p), weights[k]);
    }
    if (a.exclude_outside && sum != 0) {
      for (auto& tap : t)
        tap.second /= sum;
    }
  }
  return taps;
}

} // namespace weft
