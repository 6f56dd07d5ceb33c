// Which algorithm a oneDNN convolution takes on this CPU (direct, oneDNN's Winograd kernel or
// Weft's own, winograd.cc), and the tuning records `weft tune` keeps per convolution geometry
// (dnnl.h: time_conv_algorithms, record_conv_placement). Internal to library/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_kernel.h"
#include "weft/support/status.h"

namespace weft::library {

// Whether a knob of docs/knobs.md is on: unset, or anything but "0".
bool knob_on(const char* name);

// Whether the Winograd kernels can run a convolution of activation dims "dx" ([N, C, H, W]):
// 3x3, stride 1 or 2, no dilation, one group.
bool winograd_shaped(const Dims& dx, int64_t group, const std::vector<Window>& win);
// Whether Weft's Winograd kernel goes before oneDNN's: always on AVX2 (oneDNN has none there),
// on AVX-512 for planes of many tiles and weights whose transform fits in twice the L2.
bool own_winograd_first(const Dims& dx, const Dims& dw, const std::vector<Window>& win);
// Whether a Winograd-shaped convolution takes the Winograd kernels without a tuning record:
// by its channels, plane and stride.
bool winograd_by_default(const Dims& dx, const Dims& dw, const std::vector<Window>& win);
// Whether a convolution takes the Winograd kernels when nothing forces a choice: as `weft
// tune` recorded, else by its channels and plane ($WEFT_WINOGRAD=0: never).
bool winograd_fits(const Dims& dx, const Dims& dw, int64_t group, const std::vector<Window>& win);

// Whether Weft's 1-D Winograd kernel (winograd_1d.cc) can run a convolution of activation dims
// "dx" ([N, C, L]): stride 1 (any dilation), one group, at least 3 taps.
bool winograd_1d_shaped(const Dims& dx, int64_t group, const std::vector<Window>& win);
// Whether it runs there without a record: by its taps, channels and length.
bool winograd_1d_by_default(const Dims& dx, const Dims& dw, const std::vector<Window>& win);
// Whether it runs there: as `weft tune` recorded, else by default ($WEFT_WINOGRAD=0: never).
bool winograd_1d_fits(const Dims& dx, const Dims& dw, int64_t group,
                      const std::vector<Window>& win);

// A convolution's shape as its tuning records' keys say it: dims and pads; the Winograd
// record's adds the stride where it is 2.
std::string geometry(const Dims& dx, const Dims& dw, const std::vector<Window>& win);
std::string winograd_geometry(const Dims& dx, const Dims& dw, const std::vector<Window>& win);

// The string "field" of the record of "geometry" (this machine, this thread count): whether it
// is "yes" (or else "no"); none without a readable record holding one of the two.
std::optional<bool> recorded(const std::string& geometry, const std::string& field,
                             const std::string& yes, const std::string& no);
// Writes the record of "geometry" whole (a rename), for processes reading it meanwhile.
Status write_record(const std::string& geometry, const nlohmann::json& j);

} // namespace weft::library
