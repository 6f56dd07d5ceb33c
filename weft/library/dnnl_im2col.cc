// 1-D convolutions on channels-last activations as oneDNN matrix products over im2col tiles
// (dnnl_epilogue.h: im2col_conv_call).
//
// Channels-last, the im2col row of an output position is its window's input rows side by side:
// with no dilation, one contiguous run of taps * C floats, copied in one go. A tile of such
// rows (kTileRows) stays in the core's L2 while oneDNN's matmul multiplies it by the weights,
// packed once, [taps * C, M]; the tiles run one per thread, each matmul on one. oneDNN 2.6's
// own convolution has no direct JIT kernel for 1-D on AVX2 and takes its gemm-based one (an
// im2col of its own), which reached 90-100 GFLOP/s on a byte-level classifier's
// [1, 64 or 128, 4096] -> 128 channels, 15 taps, where these tiles reach 170-177, the
// machine's sgemm peak (AMD EPYC, AVX2, 2 threads, 2026-11-30).
#include <algorithm>
#include <atomic>
#include <cstring>

#include <fmt/format.h>
#include <omp.h>

#include "weft/graph/shape_functions.h"
#include "weft/library/dnnl_epilogue.h"

namespace weft::library {

namespace {

// Rows of a tile: 256 x 1920 floats (taps x channels of the classifier's second
// convolution) is 2 MB, the L2 of both cores; 128-512 measured within noise of each other,
// 1024 and up 10-25% slower.
constexpr int64_t kTileRows = 256;

// A 1-D convolution's extents: x [N, L, C] -> y [N, out, M], windows of "taps".
struct Geometry {
  int64_t batch = 0, in_len = 0, out_len = 0, in_ch = 0, out_ch = 0, taps = 0;
  int64_t stride = 1, dilation = 1, pad = 0;
  int64_t row_floats() const { return taps * in_ch; }
};

// An argument of the matmul that is read per row of the output (a residual), or broadcast
// over them (a per-channel scale): a tile binds it at its first row times "row_stride".
struct TiledArg {
  int dnnl_arg = 0;
  int buffer = 0;
  int64_t row_stride = 0;
  memory::desc full, last; // for a full tile and for the last one
};

class Im2colConvKernel final : public runtime::LibraryKernel {
public:
  struct Tiles {
    int64_t rows = 0, count = 0; // rows a tile (the last may have fewer), tiles
    dnnl::matmul full, last;
    memory::desc src_full, src_last, dst_full, dst_last;
  };

  Im2colConvKernel(Geometry g, Tiles tiles, int x, int y, std::shared_ptr<const memory> weights,
                   std::vector<TiledArg> args, std::string impl)
      : g_(g), tiles_(std::move(tiles)), x_(x), y_(y), weights_(std::move(weights)),
        args_(std::move(args)), impl_(std::move(impl)) {}

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    const auto* x = static_cast<const float*>(buffers[x_]);
    auto* y = static_cast<float*>(buffers[y_]);
    const int64_t total = g_.batch * g_.out_len;
    std::atomic<bool> failed{false};
    std::string error;
    auto tile = [&](int64_t t, float* col, dnnl::stream& stream) {
      int64_t first = t * tiles_.rows, rows = std::min(tiles_.rows, total - first);
      for (int64_t r = 0; r < rows; ++r)
        im2col_row(x, first + r, col + r * g_.row_floats());
      bool last = rows != tiles_.rows;
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memory(last ? tiles_.src_last : tiles_.src_full, engine(), col)},
          {DNNL_ARG_WEIGHTS, *weights_},
          {DNNL_ARG_DST,
           memory(last ? tiles_.dst_last : tiles_.dst_full, engine(), y + first * g_.out_ch)}};
      for (const TiledArg& a : args_) {
        auto* base = static_cast<float*>(buffers[a.buffer]) + first * a.row_stride;
        args.emplace(a.dnnl_arg, memory(last ? a.last : a.full, engine(), base));
      }
      (last ? tiles_.last : tiles_.full).execute(stream, args);
      stream.wait();
    };
#pragma omp parallel
    {
      thread_local std::vector<float> col;
      if (col.size() < static_cast<size_t>(tiles_.rows * g_.row_floats()))
        col.resize(static_cast<size_t>(tiles_.rows * g_.row_floats()));
      dnnl::stream stream(engine());
#pragma omp for schedule(static)
      for (int64_t t = 0; t < tiles_.count; ++t) {
        try {
          if (!failed) tile(t, col.data(), stream);
        } catch (const dnnl::error& e) {
#pragma omp critical
          error = e.what();
          failed = true;
        }
      }
    }
    if (failed) return Status::error(fmt::format("oneDNN failed: {}", error));
    return {};
  }

  std::string describe() const override {
    return fmt::format("oneDNN matmul on im2col tiles ({}, {} rows a tile, channels-last in place)",
                       impl_, tiles_.rows);
  }

private:
  // Row "r" of the im2col matrix (output position r of all the batch's): its window's
  // inputs, tap after tap, zeros for the padding.
  void im2col_row(const float* x, int64_t r, float* to) const {
    int64_t n = r / g_.out_len, start = (r % g_.out_len) * g_.stride - g_.pad;
    const float* from = x + n * g_.in_len * g_.in_ch;
    size_t channel_bytes = static_cast<size_t>(g_.in_ch) * sizeof(float);
    if (g_.dilation == 1) { // taps [k0, k1) lie inside: one copy
      int64_t k0 = std::clamp<int64_t>(-start, 0, g_.taps);
      int64_t k1 = std::clamp<int64_t>(g_.in_len - start, k0, g_.taps);
      std::memset(to, 0, static_cast<size_t>(k0) * channel_bytes);
      std::memcpy(to + k0 * g_.in_ch, from + (start + k0) * g_.in_ch,
                  static_cast<size_t>(k1 - k0) * channel_bytes);
      std::memset(to + k1 * g_.in_ch, 0, static_cast<size_t>(g_.taps - k1) * channel_bytes);
      return;
    }
    for (int64_t k = 0; k < g_.taps; ++k) {
      int64_t p = start + k * g_.dilation;
      if (p >= 0 && p < g_.in_len)
        std::memcpy(to + k * g_.in_ch, from + p * g_.in_ch, channel_bytes);
      else
        std::memset(to + k * g_.in_ch, 0, channel_bytes);
    }
  }

  Geometry g_;
  Tiles tiles_;
  int x_, y_;
  std::shared_ptr<const memory> weights_;
  std::vector<TiledArg> args_;
  std::string impl_;
};

// Tiles of at most kTileRows, as many as a multiple of the threads (each thread as many).
std::pair<int64_t, int64_t> tiling(int64_t total) {
  int64_t threads = std::max(1, omp_get_max_threads());
  int64_t count = (total + kTileRows - 1) / kTileRows;
  count = std::min(total, (count + threads - 1) / threads * threads);
  int64_t rows = (total + count - 1) / count;
  return {rows, (total + rows - 1) / rows};
}

} // namespace

std::optional<LibraryCall> im2col_conv_call(const Node& n, const Absorbed& absorbed) {
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *b = n.input(2);
  const Dims dx = dims_of(x), dw = dims_of(w);
  if (n.op_type != Op::kConvChannelsLast || dx.size() != 3 || at.group != 1 || !w->is_constant() ||
      n.input(3))
    return std::nullopt;
  const Value* y = final_output(n, absorbed.epilogue);
  const Dims dy = dims_of(y);
  Ints kernel = at.kernel_shape.empty() ? Ints{dw[2]} : at.kernel_shape;
  std::vector<Window> win =
      window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad,
                  shape_from_dims(channels_first(dx)), shape_from_dims(channels_first(dy)));
  Geometry g{dx[0],         dx[1],         dy[1],           dx[2],           dy[2],
             win[0].kernel, win[0].stride, win[0].dilation, win[0].pad_begin};
  if (g.batch * g.out_len == 0 || g.row_floats() == 0) return std::nullopt;
  auto [tile_rows, count] = tiling(g.batch * g.out_len);
  int64_t last_rows = g.batch * g.out_len - (count - 1) * tile_rows;

  LibraryCall call;
  int xb = position(call.values, x);
  position(call.values, w); // bound though packed, for the profile
  std::vector<TiledArg> args;
  if (b)
    args.push_back(
        {DNNL_ARG_BIAS, position(call.values, b), 0, plain({1, g.out_ch}), plain({1, g.out_ch})});
  // The epilogue as post-ops over a tile's [rows, M]: a src1 ([N, out, M], each 1 or the
  // output's) broadcast over all rows, or one of a row per output position.
  auto per_row = [&](const PostOp& p) {
    return p.src1_dims[0] == g.batch && p.src1_dims[1] == g.out_len;
  };
  for (const PostOp& p : absorbed.epilogue) {
    if (p.binary && !per_row(p) && (p.src1_dims[0] != 1 || p.src1_dims[1] != 1))
      return std::nullopt;
  }
  auto src1 = [&](const PostOp& p, int64_t rows) {
    return plain({per_row(p) ? rows : 1, p.src1_dims[2]});
  };
  auto matmul = [&](int64_t rows) {
    dnnl::post_ops po;
    for (const PostOp& p : absorbed.epilogue) {
      if (p.binary)
        po.append_binary(p.algorithm, src1(p, rows));
      else
        po.append_eltwise(1.0f, p.algorithm, p.alpha, p.beta);
    }
    dnnl::primitive_attr attr = own_scratchpad(); // to see the size it would take
    attr.set_post_ops(po);
    memory::desc any_weights({g.row_floats(), g.out_ch}, memory::data_type::f32,
                             memory::format_tag::any);
    dnnl::matmul::desc d(plain({rows, g.row_floats()}), any_weights,
                         b ? plain({1, g.out_ch}) : memory::desc(), plain({rows, g.out_ch}));
    return dnnl::matmul::primitive_desc(d, attr, engine());
  };
  for (size_t i = 0; i < absorbed.epilogue.size(); ++i) {
    const PostOp& p = absorbed.epilogue[i];
    if (!p.binary) continue;
    args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                    position(call.values, p.src1), per_row(p) ? p.src1_dims[2] : 0,
                    src1(p, tile_rows), src1(p, last_rows)});
  }
  dnnl::matmul::primitive_desc full = matmul(tile_rows), last = matmul(last_rows);
  std::string impl = full.impl_info_str();
  // The tiles run concurrently, on the threads of one run and in concurrent runs, with no
  // scratchpad bound: a matmul that would take one is not used.
  if (impl.starts_with("ref") || std::string(last.impl_info_str()).starts_with("ref") ||
      full.weights_desc() != last.weights_desc() || full.scratchpad_desc().get_size() != 0 ||
      last.scratchpad_desc().get_size() != 0)
    return std::nullopt;
  // Weights [M, C, taps] read as [taps, C, M]: row k * C + c of the matrix.
  memory::desc given({g.taps, g.in_ch, g.out_ch}, memory::data_type::f32,
                     Dims{1, g.taps, g.in_ch * g.taps});
  std::shared_ptr<const memory> weights = reordered_constant(w, given, full.weights_desc());
  Im2colConvKernel::Tiles tiles{tile_rows,
                                count,
                                dnnl::matmul(full),
                                dnnl::matmul(last),
                                plain({tile_rows, g.row_floats()}),
                                plain({last_rows, g.row_floats()}),
                                plain({tile_rows, g.out_ch}),
                                plain({last_rows, g.out_ch})};
  int yb = position(call.values, y);
  call.kernel = std::make_shared<Im2colConvKernel>(g, std::move(tiles), xb, yb, std::move(weights),
                                                   std::move(args), impl);
  return call;
}

} // namespace weft::library
