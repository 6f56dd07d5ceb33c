// oneDNN as the vendor baseline for the memory-bound benchmark cases: times one oneDNN
// primitive (reduction, softmax, layer or batch normalization) on f32 data of the given shape, called
// directly through the C++ API (Debian's libdnnl-dev), on all OpenMP threads.
//
// Usage: dnnl_peer OP DIMS AXES ITERS
//   OP    sum | max        dnnl::reduction (reduction_sum / reduction_max) over AXES; the output
//                          keeps the reduced dimensions as 1 (oneDNN's form; same bytes as
//                          keepdims=0)
//         softmax          dnnl::softmax_v2_forward (softmax_accurate) along AXES (one axis)
//         layernorm        dnnl::layer_normalization_forward over the last axis (AXES must name
//                          it), epsilon 1e-5, with scale and shift (the ONNX model's g and b)
//         batchnorm        dnnl::batch_normalization_forward in training (forward_training:
//                          statistics of this batch over every axis but 1, biased variance),
//                          epsilon 1e-5, with scale and shift; AXES must be 0,2,3,... (those axes)
//   DIMS  e.g. 64x30000;  AXES e.g. 1 or 0,1,2;  ITERS timed runs after 2 warm-up runs (fewer
//   when the timed runs pass 10 s, but at least 3).
// Prints one JSON object: {"op", "dims", "axes", "median_ms", "iters" (timed runs made),
// "threads", "impl", "onednn"}; impl is the implementation oneDNN picked (e.g. jit:avx512_core,
// or ref:any, its unoptimized reference code). The data are standard normal, the scale and shift
// ones and zeros. Run time excludes creating the primitive. Batch normalization also writes
// the batch mean and variance (per channel, small) as oneDNN's training forward pass does.
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::vector<long> parse_list(const std::string& s, char sep) {
  std::vector<long> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(std::stol(item));
  return out;
}

float* data(const dnnl::memory& m, size_t* n) {
  *n = m.get_desc().get_size() / sizeof(float);
  return static_cast<float*>(m.get_data_handle());
}

void fill_normal(const dnnl::memory& m) {  // standard normal, fixed seed
  size_t n;
  float* p = data(m, &n);
  std::mt19937 gen(0);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (size_t i = 0; i < n; ++i) p[i] = dist(gen);
}

void fill_const(const dnnl::memory& m, float value) {
  size_t n;
  float* p = data(m, &n);
  std::fill(p, p + n, value);
}

// f32, dense, row-major: the layout of the ONNX tensors.
dnnl::memory::desc dense(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size());
  dnnl::memory::dim s = 1;
  for (size_t i = dims.size(); i-- > 0;) strides[i] = s, s *= dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

int usage() {
  std::fprintf(stderr, "usage: dnnl_peer sum|max|softmax|layernorm|batchnorm DIMS AXES ITERS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return usage();
  std::string op = argv[1];
  std::vector<long> dims_l = parse_list(argv[2], 'x');
  std::vector<long> axes = parse_list(argv[3], ',');
  int iters = std::atoi(argv[4]);
  if (dims_l.empty() || axes.empty() || iters < 1) return usage();
  const int rank = static_cast<int>(dims_l.size());
  for (long a : axes)
    if (a < 0 || a >= rank) return usage();

  dnnl::memory::dims dims(dims_l.begin(), dims_l.end());
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  auto md = dense(dims);
  dnnl::memory src(md, eng);
  fill_normal(src);

  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}};
  std::string impl;
  try {
    if (op == "sum" || op == "max") {
      dnnl::memory::dims out_dims = dims;
      for (long a : axes) out_dims[a] = 1;
      auto dst_md = dense(out_dims);
      auto alg = op == "sum" ? dnnl::algorithm::reduction_sum : dnnl::algorithm::reduction_max;
      dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, md, dst_md, 0.f, 0.f), eng);
      impl = pd.impl_info_str();
      prim = dnnl::reduction(pd);
      args[DNNL_ARG_DST] = dnnl::memory(dst_md, eng);
    } else if (op == "softmax") {
      if (axes.size() != 1) return usage();
      dnnl::softmax_v2_forward::primitive_desc pd(
          dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::softmax_accurate, md, md,
                                         static_cast<int>(axes[0])),
          eng);
      impl = pd.impl_info_str();
      prim = dnnl::softmax_v2_forward(pd);
      args[DNNL_ARG_DST] = dnnl::memory(md, eng);
    } else if (op == "layernorm") {
      if (axes.size() != 1 || axes[0] != rank - 1) return usage();  // oneDNN normalizes the last axis
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      dnnl::layer_normalization_forward::primitive_desc pd(
          dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, 1e-5f,
                                                  flags),
          eng);
      impl = pd.impl_info_str();
      prim = dnnl::layer_normalization_forward(pd);
      args[DNNL_ARG_DST] = dnnl::memory(md, eng);
      auto wmd = dense({dims[rank - 1]});
      dnnl::memory scale(wmd, eng), shift(wmd, eng);
      fill_const(scale, 1.f);  // the ONNX model's g = ones, b = zeros
      fill_const(shift, 0.f);
      args[DNNL_ARG_SCALE] = scale;
      args[DNNL_ARG_SHIFT] = shift;
      // Statistics are outputs only in training; pass them if this implementation wants them.
      if (pd.mean_desc().get_size() > 0) args[DNNL_ARG_MEAN] = dnnl::memory(pd.mean_desc(), eng);
      if (pd.variance_desc().get_size() > 0)
        args[DNNL_ARG_VARIANCE] = dnnl::memory(pd.variance_desc(), eng);
    } else if (op == "batchnorm") {
      std::vector<long> stat_axes{0};  // every axis but the channel axis, 1
      for (long a = 2; a < rank; ++a) stat_axes.push_back(a);
      if (rank < 2 || axes != stat_axes) return usage();
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      dnnl::batch_normalization_forward::primitive_desc pd(
          dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, md, 1e-5f,
                                                  flags),
          eng);
      impl = pd.impl_info_str();
      prim = dnnl::batch_normalization_forward(pd);
      args[DNNL_ARG_DST] = dnnl::memory(md, eng);
      auto wmd = dense({dims[1]});
      dnnl::memory scale(wmd, eng), shift(wmd, eng);
      fill_const(scale, 1.f);
      fill_const(shift, 0.f);
      args[DNNL_ARG_SCALE] = scale;
      args[DNNL_ARG_SHIFT] = shift;
      args[DNNL_ARG_MEAN] = dnnl::memory(pd.mean_desc(), eng);  // outputs in training
      args[DNNL_ARG_VARIANCE] = dnnl::memory(pd.variance_desc(), eng);
      if (pd.workspace_desc().get_size() > 0)
        args[DNNL_ARG_WORKSPACE] = dnnl::memory(pd.workspace_desc(), eng);
    } else {
      return usage();
    }
  } catch (const dnnl::error& e) {
    std::printf("{\"op\": \"%s\", \"error\": \"%s\"}\n", op.c_str(), e.what());
    return 1;
  }

  for (int i = 0; i < 2; ++i) {
    prim.execute(strm, args);
    strm.wait();
  }
  // oneDNN 2.6 has no JIT kernel for some reductions (over the outer axis it falls back to
  // ref:any, seconds per run): stop after kTimeBudgetMs of timed runs once there are 3 samples.
  constexpr double kTimeBudgetMs = 10000;
  std::vector<double> ms;
  double total_ms = 0;
  for (int i = 0; i < iters && !(ms.size() >= 3 && total_ms > kTimeBudgetMs); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    prim.execute(strm, args);
    strm.wait();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
    total_ms += ms.back();
  }
  std::sort(ms.begin(), ms.end());
  double median = ms.size() % 2 ? ms[ms.size() / 2]
                                : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  const dnnl_version_t* v = dnnl_version();
  std::printf(
      "{\"op\": \"%s\", \"dims\": \"%s\", \"axes\": \"%s\", \"median_ms\": %.6f, \"iters\": %d, "
      "\"threads\": %d, \"impl\": \"%s\", \"onednn\": \"%d.%d.%d\"}\n",
      op.c_str(), argv[2], argv[3], median, static_cast<int>(ms.size()), omp_get_max_threads(), impl.c_str(), v->major,
      v->minor, v->patch);
  return 0;
}
