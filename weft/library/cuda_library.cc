#include "weft/library/cuda_library.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "weft/graph/attrs.h"
#include "weft/graph/shape_functions.h"
#include "weft/library/dynamic_call.h"

namespace weft::library {

namespace {

using runtime::cuda::ConvShape;
using runtime::cuda::Device;
using runtime::cuda::GemmShape;

// What a call runs on: the device, or none in a compile-only build.
std::string on(const std::shared_ptr<Device>& device) {
  return device ? device->describe() : "no device (compile only)";
}

// Binds A, B, [C0,] Y in that order.
class GemmKernel : public runtime::LibraryKernel {
public:
  // "what": the product's name in describe() (a MatMul's "GEMM", a 1x1 convolution's).
  GemmKernel(std::shared_ptr<Device> device, GemmShape shape, std::string what = "GEMM")
      : device_(std::move(device)), shape_(shape), what_(std::move(what)) {}

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    if (!device_) return Status::error("built without a device (compile only)");
    bool c0 = shape_.c_rows > 0;
    return device_->gemm(shape_, static_cast<const float*>(buffers[0]),
                         static_cast<const float*>(buffers[1]),
                         c0 ? static_cast<const float*>(buffers[2]) : nullptr,
                         static_cast<float*>(buffers[c0 ? 3 : 2]));
  }
  std::string describe() const override {
    const GemmShape& g = shape_;
    return fmt::format("{} {}x{}x{}{}{}{}{} on {}", what_, g.m, g.n, g.k,
                       g.batch > 1 ? fmt::format(" x{} batches", g.batch) : "",
                       g.trans_a ? " A^T" : "", g.trans_b ? " B^T" : "", g.tf32 ? " (TF32)" : "",
                       on(device_));
  }

private:
  std::shared_ptr<Device> device_;
  GemmShape shape_;
  std::string what_;
};

// Binds X, W, [B,] Y in that order.
class ConvKernel : public runtime::LibraryKernel {
public:
  ConvKernel(std::shared_ptr<Device> device, ConvShape shape, bool bias)
      : device_(std::move(device)), shape_(shape), bias_(bias) {}

  Status run(void* const* buffers, const int64_t* /*extents*/) const override {
    if (!device_) return Status::error("built without a device (compile only)");
    return device_->conv(shape_, static_cast<const float*>(buffers[0]),
                         static_cast<const float*>(buffers[1]),
                         bias_ ? static_cast<const float*>(buffers[2]) : nullptr,
                         static_cast<float*>(buffers[bias_ ? 3 : 2]));
  }
  std::string describe() const override {
    const ConvShape& s = shape_;
    return fmt::format("convolution {}x{}x{}x{} * {}x{}x{}{}{} on {}", s.n, s.c, s.h, s.w, s.k,
                       s.kh, s.kw, s.groups > 1 ? fmt::format(" ({} groups)", s.groups) : "",
                       s.tf32 ? " (TF32)" : "", on(device_));
  }

private:
  std::shared_ptr<Device> device_;
  ConvShape shape_;
  bool bias_;
};

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= dims[i];
  return p;
}

std::optional<GemmShape> matmul_shape(const Node& n, std::string* why_not) {
  std::vector<int64_t> a = shape_static_dims(*n.inputs[0]->type.shape);
  std::vector<int64_t> b = shape_static_dims(*n.inputs[1]->type.shape);
  if (a.size() < 2 || b.size() < 2) {
    *why_not = "a 1-D operand";
    return std::nullopt;
  }
  GemmShape g;
  g.k = a.back();
  g.n = b.back();
  if (b.size() == 2) { // A's batch folds into M
    g.m = product(a, 0, a.size() - 1);
    return g;
  }
  std::vector<int64_t> batch_b(b.begin(), b.end() - 2);
  g.m = a[a.size() - 2];
  g.batch = product(b, 0, b.size() - 2);
  g.stride_b = g.k * g.n;
  if (a.size() == 2) return g; // one A for every batch entry
  if (std::vector<int64_t>(a.begin(), a.end() - 2) != batch_b) {
    *why_not = "batch dims that broadcast";
    return std::nullopt;
  }
  g.stride_a = g.m * g.k;
  return g;
}

std::optional<GemmShape> gemm_shape(const Node& n, std::string* why_not) {
  const auto& at = n.attrs_as<GemmAttrs>();
  std::vector<int64_t> a = shape_static_dims(*n.inputs[0]->type.shape);
  std::vector<int64_t> b = shape_static_dims(*n.inputs[1]->type.shape);
  GemmShape g;
  g.trans_a = at.trans_a;
  g.trans_b = at.trans_b;
  g.m = at.trans_a ? a[1] : a[0];
  g.k = at.trans_a ? a[0] : a[1];
  g.n = at.trans_b ? b[0] : b[1];
  g.alpha = at.alpha;
  g.beta = at.beta;
  if (const Value* c = n.input(2)) {
    std::vector<int64_t> dc = shape_static_dims(*c->type.shape);
    dc.insert(dc.begin(), 2 - std::min<size_t>(dc.size(), 2), 1);
    if (dc.size() != 2 || (dc[0] != 1 && dc[0] != g.m) || (dc[1] != 1 && dc[1] != g.n)) {
      *why_not = "C does not broadcast to the output";
      return std::nullopt;
    }
    g.c_rows = dc[0];
    g.c_cols = dc[1];
  }
  return g;
}

std::optional<ConvShape> conv_shape(const Node& n, std::string* why_not) {
  const auto& at = n.attrs_as<ConvAttrs>();
  const Value *x = n.inputs[0], *w = n.inputs[1], *y = n.outputs[0];
  std::vector<int64_t> dx = shape_static_dims(*x->type.shape);
  std::vector<int64_t> dw = shape_static_dims(*w->type.shape);
  std::vector<int64_t> dy = shape_static_dims(*y->type.shape);
  if (dx.size() != 3 && dx.size() != 4) {
    *why_not = fmt::format("{} spatial dims (cuDNN is called for 1 or 2)", dx.size() - 2);
    return std::nullopt;
  }
  Ints kernel = at.kernel_shape;
  if (kernel.empty()) kernel.assign(dw.begin() + 2, dw.end());
  std::vector<Window> win = window_dims(kernel, at.strides, at.dilations, at.pads, at.auto_pad,
                                        *x->type.shape, *y->type.shape);
  for (const Window& d : win) {
    if (d.pad_begin != d.pad_end) {
      *why_not = "asymmetric pads";
      return std::nullopt;
    }
  }
  // A 1-D convolution is a 2-D one of height 1.
  if (win.size() == 1) win.insert(win.begin(), Window{1, 1, 1, 0, 0, 1, 1});
  ConvShape s;
  s.n = dx[0];
  s.c = dx[1];
  s.k = dw[0];
  s.groups = at.group;
  s.h = win[0].in;
  s.w = win[1].in;
  s.kh = win[0].kernel;
  s.kw = win[1].kernel;
  s.pad_h = win[0].pad_begin;
  s.pad_w = win[1].pad_begin;
  s.stride_h = win[0].stride;
  s.stride_w = win[1].stride;
  s.dilation_h = win[0].dilation;
  s.dilation_w = win[1].dilation;
  s.out_h = win[0].out;
  s.out_w = win[1].out;
  return s;
}

// A 1x1 convolution of stride 1, unpadded and of one group, over NCHW: for each image n,
// Y[n] (K x HW) = W (K x C) X[n] (C x HW), a GEMM batched over the images with one W, the bias
// broadcast along each output channel's row. On an H200 (2026-12-04, `weft bench --kernels`,
// batch 1) cuDNN's legacy cudnnConvolutionForward took 0.11-0.33 ms per 1x1 convolution of
// MixNet-S and ConvNeXt-V2-Atto (7x7 to 56x56, 12 to 1280 channels) where cuBLAS took
// 0.006-0.018 ms for a GPT block's GEMMs of that size and larger, and cuDNN's depthwise and 3x3
// calls 0.015-0.025 ms. WEFT_CUDA_CONV1X1=cudnn keeps them cuDNN's (docs/knobs.md).
std::optional<GemmShape> conv1x1_gemm(const ConvShape& s, bool bias) {
  static const bool cudnn = [] {
    const char* env = std::getenv("WEFT_CUDA_CONV1X1");
    return env && std::string(env) == "cudnn";
  }();
  if (cudnn || s.kh != 1 || s.kw != 1 || s.groups != 1 || s.stride_h != 1 || s.stride_w != 1 ||
      s.pad_h != 0 || s.pad_w != 0 || s.out_h != s.h || s.out_w != s.w)
    return std::nullopt;
  GemmShape g;
  g.batch = s.n;
  g.m = s.k;
  g.n = s.h * s.w;
  g.k = s.c;
  g.stride_b = s.c * s.h * s.w;
  if (bias) {
    g.beta = 1;
    g.c_rows = s.k;
    g.c_cols = 1;
  }
  g.tf32 = s.tf32;
  return g;
}

// Whether TF32 represents every value of "v" exactly (10 mantissa bits: the low 13 of an f32
// are zero): a Cast from f16 or bf16 (an f16 model's activation after narrow_in_f32), or a
// constant holding such values (its weights, the Casts folded).
bool tf32_exact(const Value* v) {
  if (v->producer && v->producer->op_type == Op::kCast) {
    DType from = v->producer->inputs[0]->type.dtype;
    return from == DType::kF16 || from == DType::kBF16;
  }
  if (!v->is_constant() || v->type.dtype != DType::kF32) return false;
  const auto* bits = reinterpret_cast<const uint32_t*>(v->constant->data());
  return std::all_of(bits, bits + v->constant->num_elements(),
                     [](uint32_t b) { return (b & 0x1fffu) == 0; });
}

// Whether the products of "node"'s two operands are exact on tensor cores in TF32, so that
// TF32 gives the fp32 result up to the order of the sums: an f16 or bf16 model's.
bool exact_in_tf32(const Node& node) {
  return tf32_exact(node.inputs[0]) && tf32_exact(node.inputs[1]);
}

} // namespace

std::optional<LibraryCall> cuda_library_call(const Node& node, std::shared_ptr<Device> device,
                                             bool allow_tf32, std::string* why_not) {
  if (node.op_type != Op::kMatMul && node.op_type != Op::kGemm && node.op_type != Op::kConv)
    return std::nullopt;
  if (has_symbolic_shapes(node)) { // no epilogues: the node alone, per set of extents
    return dynamic_call(
        node, [](const Value*) -> const Node* { return nullptr; },
        [](const Node* n) { return n->op_type != Op::kTranspose; }, why_not,
        [device, allow_tf32](const Node& n, const SoleReader&,
                             const std::function<bool(const Node*)>&, std::string* why,
                             bool) { return cuda_library_call(n, device, allow_tf32, why); });
  }
  for (const Value* v : node.inputs) {
    if (v && (v->type.dtype != DType::kF32 || !v->type.has_static_shape())) {
      *why_not = "f32 operands of static shape only";
      return std::nullopt;
    }
  }
  LibraryCall call;
  call.nodes = {&node};
  if (node.op_type == Op::kConv) {
    std::optional<ConvShape> shape = conv_shape(node, why_not);
    if (!shape) return std::nullopt;
    if (shape->n * shape->c * shape->h * shape->w * shape->k * shape->out_h * shape->out_w == 0) {
      *why_not = "an empty tensor";
      return std::nullopt;
    }
    shape->tf32 = allow_tf32 || exact_in_tf32(node);
    const Value* bias = node.input(2);
    call.values = {node.inputs[0], node.inputs[1]};
    if (bias) call.values.push_back(bias);
    call.values.push_back(node.outputs[0]);
    if (std::optional<GemmShape> g = conv1x1_gemm(*shape, bias != nullptr)) {
      std::swap(call.values[0], call.values[1]); // A: the weights, B: the images
      call.kernel = std::make_shared<GemmKernel>(std::move(device), *g, "1x1 convolution as GEMM");
      return call;
    }
    call.kernel = std::make_shared<ConvKernel>(std::move(device), *shape, bias != nullptr);
    return call;
  }
  std::optional<GemmShape> shape =
      node.op_type == Op::kMatMul ? matmul_shape(node, why_not) : gemm_shape(node, why_not);
  if (!shape) return std::nullopt;
  if (shape->m * shape->n * shape->k * shape->batch == 0) {
    *why_not = "an empty operand";
    return std::nullopt;
  }
  shape->tf32 = allow_tf32 || exact_in_tf32(node);
  call.values = {node.inputs[0], node.inputs[1]};
  if (shape->c_rows > 0) call.values.push_back(node.inputs[2]);
  call.values.push_back(node.outputs[0]);
  call.kernel = std::make_shared<GemmKernel>(std::move(device), *shape);
  return call;
}

} // namespace weft::library
