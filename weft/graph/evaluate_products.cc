// MatMul and Softmax of constants (evaluate_ops.h), in double. Models build tables from
// constants in forward: ConViT's positional attention scores are a constant table of relative
// positions through a Linear and a Softmax, which ran in every block at every run (a
// 38416x3x4 product through oneDNN, 0.25 ms, and its softmax pass) until they folded.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "weft/graph/evaluate_ops.h"
#include "weft/graph/shape_functions.h"

namespace weft::evaluate_ops {

namespace {

// Products of more multiply-adds are left to the kernels: their compile-time cost grows
// while what folding saves at run time does not.
constexpr int64_t kMaxFoldedProducts = int64_t{1} << 24;

int64_t product(const std::vector<int64_t>& dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
}

} // namespace

// numpy's matmul: 1-D operands promoted (a row, a column) and their unit dim dropped again,
// batch dims broadcast; floats only.
Outputs eval_matmul(const Node& node) {
  const Tensor &a = arg(node, 0), &b = arg(node, 1);
  if (!dtype_is_float(a.dtype()) || a.dtype() != b.dtype() || a.rank() == 0 || b.rank() == 0)
    return std::vector<Tensor>{};
  std::vector<int64_t> da = a.dims(), db = b.dims();
  bool a_vector = da.size() == 1, b_vector = db.size() == 1;
  if (a_vector) da.insert(da.begin(), 1);
  if (b_vector) db.push_back(1);
  size_t rank = std::max(da.size(), db.size());
  da.insert(da.begin(), rank - da.size(), 1);
  db.insert(db.begin(), rank - db.size(), 1);
  int64_t m = da[rank - 2], k = da[rank - 1], n = db[rank - 1];
  if (db[rank - 2] != k)
    return Status::error(fmt::format("MatMul: inner dims {} and {} differ", k, db[rank - 2]));
  std::vector<int64_t> batch(rank - 2), a_batch(da.begin(), da.end() - 2),
      b_batch(db.begin(), db.end() - 2);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1)
      return Status::error(
          fmt::format("MatMul: batch dims {} and {} do not broadcast", da[i], db[i]));
    batch[i] = std::max(da[i], db[i]);
  }
  int64_t batches = product(batch);
  if (batches * m * n * k > kMaxFoldedProducts) return std::vector<Tensor>{};
  std::vector<int64_t> out_dims = batch;
  if (!a_vector) out_dims.push_back(m);
  if (!b_vector) out_dims.push_back(n);
  Tensor y(a.dtype(), out_dims);
  std::vector<double> row(static_cast<size_t>(k));
  for (int64_t p = 0; p < batches; ++p) {
    int64_t a0 = broadcast_index(p, batch, a_batch) * m * k;
    int64_t b0 = broadcast_index(p, batch, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t t = 0; t < k; ++t)
        row[static_cast<size_t>(t)] = a.get_double(a0 + i * k + t);
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t t = 0; t < k; ++t)
          sum += row[static_cast<size_t>(t)] * b.get_double(b0 + t * n + j);
        y.set_double((p * m + i) * n + j, sum);
      }
    }
  }
  return single(std::move(y));
}

// Softmax over the last axis, where opset 13's form (one axis) and the earlier ones (the
// input flattened at the axis) agree; other axes are left to the kernels.
Outputs eval_softmax(const Node& node) {
  const Tensor& x = arg(node, 0);
  if (!dtype_is_float(x.dtype()) || x.rank() == 0) return std::vector<Tensor>{};
  WEFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attrs_as<SoftmaxAttrs>().axis, x.rank()));
  if (axis != x.rank() - 1) return std::vector<Tensor>{};
  int64_t n = x.dims().back(), rows = n == 0 ? 0 : x.num_elements() / n;
  Tensor y(x.dtype(), x.dims());
  for (int64_t r = 0; r < rows; ++r) {
    double top = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < n; ++j)
      top = std::max(top, x.get_double(r * n + j));
    for (int64_t j = 0; j < n; ++j)
      sum += std::exp(x.get_double(r * n + j) - top);
    for (int64_t j = 0; j < n; ++j)
      y.set_double(r * n + j, std::exp(x.get_double(r * n + j) - top) / sum);
  }
  return single(std::move(y));
}

} // namespace weft::evaluate_ops
