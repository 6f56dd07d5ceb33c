// Which algorithm a oneDNN convolution takes (conv_choice.h): the thresholds measured for
// oneDNN's Winograd kernels and Weft's, and the tuning records of `weft tune`.
#include "weft/library/conv_choice.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <unistd.h>

#include "weft/library/dnnl_epilogue.h"
#include "weft/support/hash.h"
#include "weft/support/machine.h"

namespace weft::library {

namespace {

// $WEFT_WINOGRAD=0: 3x3 convolutions stay direct (for comparisons).
bool winograd_allowed() {
  static const bool on = knob_on("WEFT_WINOGRAD");
  return on;
}

// Both sides of a Winograd convolution carry at least this many channels: below it the
// transforms cost more than the multiplications they save (16 in, 16 out at 112x112: 0.14 ms
// against 0.12 direct; 3 in: 10x slower; 32 and up: 1.2-2.4x faster, AMD EPYC, 2 threads).
constexpr int64_t kWinogradMinChannels = 32;

// Weft's own Winograd kernel (winograd.cc, where oneDNN has none: AVX2) gains from 16:
// `weft tune` timed it at 0.12-0.30 against 0.21-0.45 ms direct for 16 -> 16 to 64 channels
// at 28x28 to 112x112, and within 10% of direct at 8 (AMD EPYC, 2 threads, 2026-11-30).
constexpr int64_t kOwnWinogradMinChannels = 16;

// At stride 2 (four phases, 81 points a tile of 4x4 against stride 1's 36) its transforms cost
// more a product saved: from 32 channels. 16 -> 32 at 112x112 ran 0.35-0.41 against 0.23-0.30
// ms direct; 32 -> 64 at 256x256 4.0-5.8 against 4.6-8.2, 64 -> 128 at 128x128 2.8-4.6 against
// 3.7-6.1, 128 -> 128 at 56x56 1.2-1.6 against 1.6-2.1 (alternating runs, AMD EPYC, AVX2, 2
// threads, 2026-12-01; the machine's speed varied 2x within minutes).
constexpr int64_t kOwnStridedWinogradMinChannels = 32;

// And each side of the image plane is at least 7: a plane a few points high fills few of the
// output tiles (2x2 or 4x4), whose transforms then cost more than the products save.
// ResNet-18 over lines of text [8, 3, 48, 128], whose later planes are 6x16, 3x8 and 2x4:
// 12.1-12.7 -> 8.0-8.3 ms ([1, 3, 48, 512]: 4.5 -> 3.7 ms); at 224x224 (7x7 and up) it stays
// as it was, 6.2-6.5 ms (alternating runs, AMD EPYC, 2 threads, 2026-11-28).
constexpr int64_t kWinogradMinSide = 7;

// With AVX-512 both oneDNN's Winograd kernel (F(2x2, 3x3), nChw16c) and Weft's (F(4x4, 3x3),
// its products and input transform on AVX-512 registers) run; Weft's takes convolutions of
// this many output tiles of 4x4 or more (planes of 48x48 and up at batch 1) whose transformed
// weights U fit in twice the L2 (each chunk of tiles reads all of U). Two convolutions each
// (alternating runs, Intel Xeon, 2 MB L2, 2 threads, 2026-12-01), Weft's against oneDNN's:
// 32 channels at 64x64 (256 tiles) 0.68-0.77 against 0.82-0.89 ms; 64 at 56x56 (196)
// 0.77-1.04 against 0.99-1.39; 128 at 56x56 (U 2.4 MB) 3.5-4.5 against 5.2-6.5; 64 at 112x112
// 3.1-4.2 against 4.3-4.6; but 256 at 56x56 (U 9.4 MB) 12.7-16.9 against 10.7-15.3, and on
// fewer tiles about even or slower (128 at 28x28, 49 tiles: 0.88-1.27 against 0.86-1.17; 256
// at 14x14, 16: 0.87-1.15 against 0.85-1.05). Before its input transform was AVX-512's
// (2026-12-01) this took 1,024 tiles.
constexpr int64_t kOwnWinogradManyTiles = 128;

// A 1-D convolution runs Weft's Winograd kernel from this many input steps (N x L), and where it
// saves this many multiply-adds an output for each float an output's transforms write and read
// (1.5 points an output of each chunk's C and of M): against oneDNN's direct kernel (Intel
// Xeon, AVX-512, 2 threads, 2026-12-01, two alternating runs each, lone Conv+ReLU), 32 -> 32
// channels and 3 taps (16 saved a float) took 0.18-0.20 ms against 0.11-0.12, 64 -> 64 and 5
// taps (28) 0.42-0.44 against 0.33, 128 -> 128 and 7 taps over 512 (53) 1.12-1.14 against
// 0.93-0.95; 128 -> 128 and 3 taps (64) 1.66-1.85 against 1.88-1.95, 80 -> 384 and 3 (66)
// 2.35-2.37 against 3.42-3.48, 128 -> 128 and 15 taps (107) 6.9-7.5 against 8.4-9.0, 384 ->
// 384 and 3 (192) 4.6-6.1 against 8.3.
constexpr int64_t kWinograd1dMinOutputs = 256;
constexpr double kWinograd1dSavedPerFloat = 60;

// The tuning record of a convolution geometry on this machine, at this thread count.
std::string record_path(const std::string& geometry) {
  std::string machine = fmt::format("{}\n{} threads\n", cpu_model_name(), omp_get_max_threads());
  return (std::filesystem::path(weft_cache_dir()) / "tuning" /
          fmt::format("conv-{}.json", hash_hex(machine + geometry)))
      .string();
}

// What `weft tune` measured for a geometry: Winograd or not; none without a readable record.
std::optional<bool> tuned_winograd(const std::string& geometry) {
  return recorded(geometry, "algorithm", "winograd", "direct");
}

} // namespace

int64_t channel_block() {
  static const int64_t block = [] {
    auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & core) == core ? 16 : 8;
  }();
  return block;
}

// Channels-last, oneDNN 2.6's AVX2 build has only its im2col kernel for these (128 channels at
// 56x56: 3.7-4.3 ms, 8 GFLOP/s), and generated code reads each group's channels strided
// (7.5 ms); on the plain layout the generated kernel runs along rows (1.1 ms, and 1.0 ms for the
// two Transposes around it). With a 1x1 convolution on each side: 7.1 -> 3.4 ms; 2 channels a
// group 6.4 -> 3.0; 96 channels at 112x112 16.6 -> 7.7; 256 at 28x28 4.3 -> 3.6; but 512 at
// 14x14 2.3 -> 2.8, so smaller planes stay oneDNN's. ResNeXt-50 66.7 -> 56.7 ms (alternating
// runs, AMD EPYC, AVX2, 2 threads, 2026-12-01). With AVX-512, oneDNN's JIT kernel runs ResNeXt's
// 128 channels at 56x56 channels-last in 0.79-0.91 ms against the generated 1.59-1.68, without
// the Transposes (Intel Xeon, 2026-12-01).
//
// In 1-D, oneDNN 2.6 runs a depthwise convolution slowest of all: a Conformer's 256 channels of
// 1,024 steps with 31 taps took 5.0 ms on its gemm-based kernel (3 GFLOP/s), and a short causal
// one (LFM2's, Mamba's: 1,024 channels of 2,048 steps, 4 taps) 22 ms on its JIT kernel (0.8
// GFLOP/s), against generated code's 0.27 and 0.69 ms on the plain layout, each channel's row
// contiguous (Intel Xeon, AVX-512, 2 threads, 2026-12-01). So 1-D ones of up to 7 channels a
// group, depthwise included, run generated on every CPU, at any length.
bool few_channels_a_group(const Node& n) {
  if (n.op_type != Op::kConv) return false;
  int64_t group = n.attrs_as<ConvAttrs>().group;
  const Value *w = n.inputs[1], *y = n.outputs[0];
  if (group < 2 || !w->type.has_static_shape()) return false;
  int64_t per_group = (*w->type.shape)[1].value();
  if (w->type.shape->size() == 3) return per_group < 8;
  if (channel_block() == 16 || w->type.shape->size() != 4 || !y->type.has_static_shape())
    return false;
  int64_t plane = (*y->type.shape)[2].value() * (*y->type.shape)[3].value();
  return per_group > 1 && per_group < 8 && plane >= 28 * 28;
}

// Whether a knob of docs/knobs.md is on: unset, or anything but "0".
bool knob_on(const char* name) {
  const char* env = std::getenv(name);
  return !env || std::string(env) != "0";
}

// Whether the Winograd kernels (oneDNN's F(2x2, 3x3) or F(4x4, 3x3), or Weft's) can run a
// convolution: 2-D, 3x3, stride 1 or 2, no dilation, one group (oneDNN's: stride 1 only).
// Their fp32 results lie as close to an fp64 reference as the direct kernel's
// (docs/library.md).
bool winograd_shaped(const Dims& dx, int64_t group, const std::vector<Window>& win) {
  return dx.size() == 4 && group == 1 && std::all_of(win.begin(), win.end(), [&](const Window& d) {
           return d.kernel == 3 && d.stride <= 2 && d.stride == win[0].stride && d.dilation == 1;
         });
}

// Whether Weft's Winograd kernel goes before oneDNN's (which AVX2 lacks): on AVX-512, for
// convolutions of kOwnWinogradManyTiles tiles of 4x4 or more whose U (36 points of C x M
// floats) fits in twice the L2.
bool own_winograd_first(const Dims& dx, const Dims& dw, const std::vector<Window>& win) {
  if (channel_block() == 8) return true;
  auto tiles = [&](int64_t side, const Window& d) {
    return (side + 4 * d.stride - 1) / (4 * d.stride);
  };
  int64_t u_bytes = 36 * dx[1] * dw[0] * 4;
  return dx[0] * tiles(dx[2], win[0]) * tiles(dx[3], win[1]) >= kOwnWinogradManyTiles &&
         u_bytes <= 2 * std::max<int64_t>(l2_cache_bytes(), 512 << 10);
}

// A convolution's shape, as its tuning record's key says it: dims [N, C, H, W] and the pads.
std::string geometry(const Dims& dx, const Dims& dw, const std::vector<Window>& win) {
  std::vector<int64_t> pads;
  for (const Window& d : win)
    pads.insert(pads.end(), {d.pad_begin, d.pad_end});
  return fmt::format("x [{}] w [{}] pads [{}]", fmt::join(dx, ","), fmt::join(dw, ","),
                     fmt::join(pads, ","));
}

// The key of the Winograd-or-direct record: the geometry, and the stride where it is 2
// (stride 1's records predate strided Winograd calls, and keep their keys).
std::string winograd_geometry(const Dims& dx, const Dims& dw, const std::vector<Window>& win) {
  std::string key = geometry(dx, dw, win);
  if (win[0].stride != 1) key += fmt::format(" stride {}", win[0].stride);
  return key;
}

// The string "field" of the record of "geometry": whether it is "yes" (or else "no"); none
// without a readable record holding one of the two.
std::optional<bool> recorded(const std::string& geometry, const std::string& field,
                             const std::string& yes, const std::string& no) {
  std::ifstream in(record_path(geometry));
  if (!in) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(field) || !j[field].is_string()) return std::nullopt;
  std::string value = j[field].get<std::string>();
  if (value != yes && value != no) return std::nullopt;
  return value == yes;
}

// Writes the record of "geometry" whole (a rename), for processes reading it meanwhile.
Status write_record(const std::string& geometry, const nlohmann::json& j) {
  std::string path = record_path(geometry);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Status::error(fmt::format("cannot create {}: {}", path, ec.message()));
  std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) return Status::error(fmt::format("cannot write the tuning record {}", tmp));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status::error(fmt::format("cannot write the tuning record {}", path));
  }
  return Status();
}

namespace {

// The channels both sides of a Winograd convolution carry at least, by default: Weft's where
// its kernel goes first (AVX2; with AVX-512, many tiles), else oneDNN's. With AVX-512 on 196
// tiles and more, Weft's kernel ran 16 -> 32 channels at 56x56 in 0.078 ms against direct
// brgconv's 0.132, 16 -> 64 at 55x55 (SqueezeNet's) 0.18 against 0.25, 16 -> 16 at 112x112
// 0.16 against 0.26, 24 -> 24 at 56x56 0.10-0.15 against 0.19-0.22, and 16 -> 16 at 56x56
// 0.061 against 0.066 (AMD EPYC, 2 threads, 2026-12-04, alternating runs).
int64_t winograd_min_channels(const Dims& dx, const Dims& dw, const std::vector<Window>& win) {
  if (channel_block() == 16 && !own_winograd_first(dx, dw, win)) return kWinogradMinChannels;
  return win[0].stride == 2 ? kOwnStridedWinogradMinChannels : kOwnWinogradMinChannels;
}

} // namespace

// By its channels and plane; stride 2 only on AVX2: with AVX-512 oneDNN's direct kernel
// (brgconv) ran the U-Net's 32 -> 64 channels from 256x256 in 2.3-2.4 ms, Weft's Winograd in
// 4.6-5.4 (Intel Xeon, 2 threads, 2026-12-01).
bool winograd_by_default(const Dims& dx, const Dims& dw, const std::vector<Window>& win) {
  if (win[0].stride == 2 && channel_block() != 8) return false;
  return std::min(dx[1], dw[0]) >= winograd_min_channels(dx, dw, win) &&
         std::min(dx[2], dx[3]) >= kWinogradMinSide;
}

// Whether a convolution takes the Winograd kernels when nothing forces a choice: as `weft
// tune` recorded, else by default.
bool winograd_fits(const Dims& dx, const Dims& dw, int64_t group, const std::vector<Window>& win) {
  if (!winograd_allowed() || !winograd_shaped(dx, group, win)) return false;
  if (std::optional<bool> tuned = tuned_winograd(winograd_geometry(dx, dw, win))) return *tuned;
  return winograd_by_default(dx, dw, win);
}

bool winograd_1d_shaped(const Dims& dx, int64_t group, const std::vector<Window>& win) {
  return dx.size() == 3 && group == 1 && win.size() == 1 && win[0].stride == 1 &&
         win[0].kernel >= 3;
}

// By default: from kWinograd1dMinOutputs steps, where the products saved outweigh the
// transforms' traffic (kWinograd1dSavedPerFloat).
bool winograd_1d_by_default(const Dims& dx, const Dims& dw, const std::vector<Window>& win) {
  if (dx[0] * dx[2] < kWinograd1dMinOutputs) return false;
  const double c = static_cast<double>(dx[1]), m = static_cast<double>(dw[0]);
  const double taps = static_cast<double>(win[0].kernel), chunks = std::ceil(taps / 3);
  double saved = (taps - 1.5 * chunks) * c * m;
  double traffic = 1.5 * (chunks * c + m);
  return saved >= kWinograd1dSavedPerFloat * traffic;
}

bool winograd_1d_fits(const Dims& dx, const Dims& dw, int64_t group,
                      const std::vector<Window>& win) {
  if (!winograd_allowed() || !winograd_1d_shaped(dx, group, win)) return false;
  if (std::optional<bool> tuned = tuned_winograd(winograd_geometry(dx, dw, win))) return *tuned;
  return winograd_1d_by_default(dx, dw, win);
}

} // namespace weft::library
