#include "weft/fusion/segments.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <glpk.h>

namespace weft::fusion {

namespace {

struct ProblemDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

} // namespace

Result<std::vector<size_t>> best_segments(size_t n, size_t max_length, const SegmentCost& cost) {
  if (n == 0) return std::vector<size_t>{};
  struct Column {
    size_t a, b;
  };
  std::vector<Column> columns;
  std::vector<double> costs;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b <= n && b - a <= max_length; ++b) {
      std::optional<double> c = cost(a, b);
      if (b == a + 1 && !c)
        return Status::error(fmt::format("item {} is not allowed on its own", a));
      if (!c) continue;
      columns.push_back({a, b});
      costs.push_back(*c);
    }
  }
  static std::mutex glpk; // one solve at a time: compiles may run on several threads
  std::lock_guard<std::mutex> lock(glpk);
  glp_term_out(GLP_OFF);
  std::unique_ptr<glp_prob, ProblemDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MIN);
  glp_add_rows(lp.get(), static_cast<int>(n));
  for (size_t i = 0; i < n; ++i)
    glp_set_row_bnds(lp.get(), static_cast<int>(i) + 1, GLP_FX, 1.0, 1.0); // covered once
  glp_add_cols(lp.get(), static_cast<int>(columns.size()));
  // GLPK's sparse matrix: 1-based (row, column, value) triples, index 0 unused.
  std::vector<int> rows(1), cols(1);
  std::vector<double> values(1);
  for (size_t c = 0; c < columns.size(); ++c) {
    int col = static_cast<int>(c) + 1;
    glp_set_col_kind(lp.get(), col, GLP_BV);
    glp_set_obj_coef(lp.get(), col, costs[c]);
    for (size_t i = columns[c].a; i < columns[c].b; ++i) {
      rows.push_back(static_cast<int>(i) + 1);
      cols.push_back(col);
      values.push_back(1.0);
    }
  }
  glp_load_matrix(lp.get(), static_cast<int>(rows.size()) - 1, rows.data(), cols.data(),
                  values.data());
  glp_iocp params;
  glp_init_iocp(&params);
  params.presolve = GLP_ON;
  params.msg_lev = GLP_MSG_OFF;
  int error = glp_intopt(lp.get(), &params);
  int status = glp_mip_status(lp.get());
  if (error != 0 || status != GLP_OPT)
    return Status::error(
        fmt::format("GLPK found no optimal split (error {}, status {})", error, status));
  std::vector<size_t> starts;
  for (size_t c = 0; c < columns.size(); ++c) {
    if (glp_mip_col_val(lp.get(), static_cast<int>(c) + 1) > 0.5) starts.push_back(columns[c].a);
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

} // namespace weft::fusion
