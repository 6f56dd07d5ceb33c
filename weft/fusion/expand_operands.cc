#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "weft/fusion/rewrites.h"
#include "weft/fusion/views.h"

namespace weft::fusion {

namespace {

// An innermost dim this short or shorter, broadcast by a per-group operand, is merged with the
// dim outside it: a loop of 4 or 6 lanes vectorizes poorly.
constexpr int64_t kShortInner = 16;

// How an access uses iterators d and e = d + 1 of its statement.
enum class Use {
  kNeither, // neither
  kJoint,   // only as one row-major position D_e * i_d + i_e (times a coefficient)
  kGroup,   // i_d but not i_e: a per-group operand, the same along e
  kOther,   // otherwise
};

// Index dims of "a" that mention iterator "it".
std::vector<size_t> dims_mentioning(const std::vector<AffineExpr>& index, int it) {
  std::vector<size_t> out;
  for (size_t p = 0; p < index.size(); ++p) {
    if (index[p].coefficient(it) != 0) out.push_back(p);
  }
  return out;
}

// How "index" uses d and e = d + 1 of extent de: "shape" is its buffer's, when a view of it
// can merge two of its dims (none for a guard or a temporary).
Use use_of(const std::vector<AffineExpr>& index, const Shape* shape, int d, int64_t de) {
  std::vector<size_t> pd = dims_mentioning(index, d), pe = dims_mentioning(index, d + 1);
  if (pd.empty() && pe.empty()) return Use::kNeither;
  if (pe.empty()) return pd.size() == 1 ? Use::kGroup : Use::kOther;
  if (pd.size() != 1 || pe.size() != 1) return Use::kOther;
  size_t p = pd[0], q = pe[0];
  int64_t cd = index[p].coefficient(d), ce = index[q].coefficient(d + 1);
  if (p == q) return cd == de * ce ? Use::kJoint : Use::kOther;
  // Neighbouring dims of a static buffer: one position once they are merged.
  if (!shape || q != p + 1 || !(*shape)[q].is_static()) return Use::kOther;
  return (*shape)[q].value() * cd == de * ce ? Use::kJoint : Use::kOther;
}

// "e" with iterators renumbered for d and d + 1 merged into d: the merged iterator stands
// for D_e * i_d + i_e, so a joint use c * (D_e * i_d + i_e) becomes c * i_d.
AffineExpr merged_expr(const AffineExpr& e, int d, int64_t de) {
  AffineExpr out = AffineExpr::constant_of(e.constant);
  int64_t ce = e.coefficient(d + 1), cd = e.coefficient(d);
  for (auto [it, c] : e.terms) {
    if (it == d || it == d + 1) continue;
    out.terms.emplace_back(it > d + 1 ? it - 1 : it, c);
  }
  if (ce != 0 || cd != 0) out.terms.emplace_back(d, ce != 0 ? ce : cd / de);
  std::sort(out.terms.begin(), out.terms.end());
  return out;
}

// "a * k + b".
AffineExpr scaled_sum(const AffineExpr& a, int64_t k, const AffineExpr& b) {
  AffineExpr out = AffineExpr::constant_of(a.constant * k + b.constant);
  for (auto [it, c] : a.terms)
    out.terms.emplace_back(it, c * k);
  for (auto [it, c] : b.terms) {
    auto t = std::find_if(out.terms.begin(), out.terms.end(),
                          [&](const auto& x) { return x.first == it; });
    if (t != out.terms.end())
      t->second += c;
    else
      out.terms.emplace_back(it, c);
  }
  std::erase_if(out.terms, [](const auto& x) { return x.second == 0; });
  std::sort(out.terms.begin(), out.terms.end());
  return out;
}

// A buffer of "k" bound to the value of buffer "b" with "shape" (a view of the same memory).
int view_with_shape(kernel::BoundKernel& k, int b, const Shape& shape) {
  const Value* v = k.values[static_cast<size_t>(b)];
  int found = buffer_of(k, v, &shape);
  if (found >= 0) return found;
  kernel::Buffer buffer = k.kernel.buffers[static_cast<size_t>(b)];
  buffer.shape = shape;
  buffer.view_group = -1;
  return add_buffer(k, std::move(buffer), v);
}

// Unused buffers dropped; the views of a value that the kernel writes marked as sharing its
// memory (a view the rewrite made, read beside the written one).
void tidy(kernel::BoundKernel& k) {
  drop_unused_buffers(k);
  std::set<const Value*> written;
  for (const Statement& s : k.kernel.statements)
    written.insert(k.values[static_cast<size_t>(s.write.buffer)]);
  for (size_t i = 0; i < k.kernel.buffers.size(); ++i) {
    const Value* v = k.values[i];
    if (!v || !written.contains(v) || k.kernel.buffers[i].aliased()) continue;
    for (size_t j = 0; j < k.kernel.buffers.size(); ++j) {
      if (j == i || k.values[j] != v) continue;
      k.kernel.buffers[i].view_group = static_cast<int>(std::min(i, j));
      k.kernel.buffers[j].view_group = static_cast<int>(std::min(i, j));
    }
  }
  group_views(k);
}

// Access "a" of a statement whose iterators d and d + 1 (extent de) merge: joint uses in
// neighbouring buffer dims read a view of the buffer with those dims merged.
Access merged_access(kernel::BoundKernel& k, const Access& a, int d, int64_t de) {
  std::vector<size_t> pd = dims_mentioning(a.index, d), pe = dims_mentioning(a.index, d + 1);
  Access out = a;
  if (!pd.empty() && !pe.empty() && pd[0] != pe[0]) {
    size_t p = pd[0];
    const Shape& shape = k.kernel.buffers[static_cast<size_t>(a.buffer)].shape;
    int64_t inner = shape[p + 1].value();
    Shape merged(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(p));
    merged.push_back(dim_mul(shape[p], shape[p + 1]));
    merged.insert(merged.end(), shape.begin() + static_cast<std::ptrdiff_t>(p + 2), shape.end());
    out.index.erase(out.index.begin() + static_cast<std::ptrdiff_t>(p + 1));
    out.index[p] = scaled_sum(a.index[p], inner, a.index[p + 1]);
    out.buffer = view_with_shape(k, a.buffer, merged);
  }
  for (AffineExpr& ix : out.index)
    ix = merged_expr(ix, d, de);
  return out;
}

// What an expression node of a statement depends on, for merging d and e = d + 1.
enum class Moves {
  kFixed, // nothing: constants, loads at constant indices
  kGroup, // per-group operands (and fixed ones): the same along e
  kAll,   // anything else
};

// A number per expression node, the same for structurally equal subexpressions (value
// numbering: the first such node's index).
std::vector<int> value_numbers(const Statement& s) {
  std::vector<int> number(s.expr.size());
  std::map<std::string, int> seen;
  for (size_t n = 0; n < s.expr.size(); ++n) {
    const ExprNode& e = s.expr[n];
    std::string key = fmt::format("{} {} {} {}", static_cast<int>(e.op), static_cast<int>(e.dtype),
                                  e.value, e.extent.to_string());
    if (e.op == ExprOp::kLoad) {
      const Access& a = s.reads[static_cast<size_t>(e.access)];
      key += fmt::format(" b{}", a.buffer);
      for (const AffineExpr& x : a.index)
        key += " " + kernel::print_affine(x);
    }
    for (int o : e.operands)
      key += fmt::format(" #{}", number[static_cast<size_t>(o)]);
    number[n] = seen.emplace(key, static_cast<int>(n)).first->second;
  }
  return number;
}

// Statement "si" of "k" over its innermost dim e (at most kShortInner) and the dim d outside
// it, which every access uses jointly (or not) but some small operands use through d alone:
// each largest subexpression of such operands (and constants) is computed once per point of
// those operands' dims and e, into a temporary, by a statement before "si" (GroupNorm's
// sqrt(var + eps), once a channel instead of once an element), and "si" runs over d and e
// merged. Returns how many statements were inserted before "si", or none when it does not
// apply.
std::optional<size_t> merge_short_inner(kernel::BoundKernel& k, size_t si) {
  const Statement& s = k.kernel.statements[si];
  size_t rank = s.domain.size();
  if (rank < 2 || !shape_is_static(Shape(s.domain.begin(), s.domain.end())) ||
      !s.write.indirect.empty() || std::any_of(s.expr.begin(), s.expr.end(), [](const ExprNode& e) {
        return e.op == ExprOp::kIterator;
      }))
    return std::nullopt;
  int d = static_cast<int>(rank) - 2;
  int64_t dd = s.domain[rank - 2].value(), de = s.domain[rank - 1].value();
  if (de > kShortInner || dd * de < kShortInner) return std::nullopt;
  int64_t points = 1;
  for (const Dim& x : s.domain)
    points *= x.value();
  // The shape of an access's buffer, when another view of its value can be taken (not a
  // temporary's, which has no value to share).
  auto shape_of = [&](const Access& a) -> const Shape* {
    size_t b = static_cast<size_t>(a.buffer);
    return k.values[b] ? &k.kernel.buffers[b].shape : nullptr;
  };
  // The target and the guards must move with d and e alike (a write through d alone reduces e).
  auto joint = [](Use u) { return u == Use::kNeither || u == Use::kJoint; };
  if (!joint(use_of(s.write.index, shape_of(s.write), d, de))) return std::nullopt;
  for (const AffineExpr& g : s.guards) {
    if (!joint(use_of({g}, nullptr, d, de))) return std::nullopt;
  }
  // The copies run over the dims the per-group operands use, with e after d.
  std::vector<Use> uses;
  std::set<int> used = {d + 1};
  for (const Access& a : s.reads) {
    Use u = a.indirect.empty() ? use_of(a.index, shape_of(a), d, de) : Use::kOther;
    if (u == Use::kOther) return std::nullopt;
    uses.push_back(u);
    for (const AffineExpr& x : a.index) {
      for (auto [it, c] : x.terms)
        if (u == Use::kGroup) used.insert(it);
    }
  }
  std::vector<Moves> moves(s.expr.size(), Moves::kFixed);
  for (size_t n = 0; n < s.expr.size(); ++n) {
    const ExprNode& e = s.expr[n];
    if (e.op == ExprOp::kLoad) {
      const Access& a = s.reads[static_cast<size_t>(e.access)];
      bool fixed = std::all_of(a.index.begin(), a.index.end(),
                               [](const AffineExpr& x) { return x.terms.empty(); });
      moves[n] = uses[static_cast<size_t>(e.access)] == Use::kGroup ? Moves::kGroup
                 : fixed                                            ? Moves::kFixed
                                                                    : Moves::kAll;
    }
    for (int o : e.operands)
      moves[n] = std::max(moves[n], moves[static_cast<size_t>(o)]);
  }
  // The largest per-group subexpressions: kGroup nodes that the stored value or a node that
  // moves with more reads.
  std::vector<bool> root(s.expr.size(), false);
  root.back() = moves.back() == Moves::kGroup;
  for (size_t n = 0; n < s.expr.size(); ++n) {
    for (int o : s.expr[n].operands) {
      if (moves[n] == Moves::kAll && moves[static_cast<size_t>(o)] == Moves::kGroup)
        root[static_cast<size_t>(o)] = true;
    }
  }
  if (std::none_of(root.begin(), root.end(), [](bool r) { return r; })) return std::nullopt;
  std::vector<int> dims(used.begin(), used.end());
  std::vector<Dim> copy_domain;
  int64_t elements = 1;
  for (int it : dims) {
    copy_domain.push_back(s.domain[static_cast<size_t>(it)]);
    elements *= s.domain[static_cast<size_t>(it)].value();
  }
  if (points < kShortInner * elements) return std::nullopt;
  // Row-major over the copy's dims: the temporary's one index, in "si" and in the copy.
  AffineExpr flat, own;
  int64_t stride = 1;
  for (size_t m = dims.size(); m-- > 0;) {
    flat.terms.insert(flat.terms.begin(), {dims[m], stride});
    own.terms.insert(own.terms.begin(), {static_cast<int>(m), stride});
    stride *= copy_domain[m].value();
  }
  std::vector<AffineExpr> sub(rank);
  for (size_t m = 0; m < dims.size(); ++m)
    sub[static_cast<size_t>(dims[m])] = AffineExpr::iterator(static_cast<int>(m));
  // One copy per distinct subexpression; "temp_of" its temporary, by root.
  std::vector<Statement> copies;
  std::map<int, int> temps; // by value number
  std::vector<int> temp_of(s.expr.size(), -1);
  const std::vector<int> number = value_numbers(s);
  for (size_t r = 0; r < s.expr.size(); ++r) {
    if (!root[r]) continue;
    int key = number[r];
    if (auto t = temps.find(key); t != temps.end()) {
      temp_of[r] = t->second;
      continue;
    }
    Statement copy;
    copy.name = "expand";
    copy.domain = copy_domain;
    std::vector<int> map(s.expr.size(), -1);
    std::vector<bool> in(s.expr.size(), false);
    in[r] = true;
    for (size_t n = r + 1; n-- > 0;) {
      if (!in[n]) continue;
      for (int o : s.expr[n].operands)
        in[static_cast<size_t>(o)] = true;
    }
    for (size_t n = 0; n <= r; ++n) {
      if (!in[n]) continue;
      ExprNode e = s.expr[n];
      for (int& o : e.operands)
        o = map[static_cast<size_t>(o)];
      if (e.op == ExprOp::kLoad) {
        Access a = s.reads[static_cast<size_t>(e.access)];
        for (AffineExpr& x : a.index)
          x = compose(x, sub);
        copy.reads.push_back(std::move(a));
        e.access = static_cast<int>(copy.reads.size()) - 1;
      }
      copy.expr.push_back(std::move(e));
      map[n] = static_cast<int>(copy.expr.size()) - 1;
    }
    const DType dtype = s.expr[r].dtype;
    int temp = add_buffer(k, {"expanded", dtype, {elements}, BufferRole::kTemp}, nullptr);
    copy.write = Access(temp, {own});
    copies.push_back(std::move(copy));
    temps[key] = temp_of[r] = temp;
  }
  // "si" reads the temporaries in place of the subexpressions, which it no longer computes.
  const Statement& t = k.kernel.statements[si];
  std::vector<bool> live(t.expr.size(), false);
  live.back() = true;
  for (size_t n = t.expr.size(); n-- > 0;) {
    if (!live[n] || temp_of[n] >= 0) continue;
    for (int o : t.expr[n].operands)
      live[static_cast<size_t>(o)] = true;
  }
  Statement merged = t;
  merged.reads.clear();
  merged.expr.clear();
  std::vector<int> map(t.expr.size(), -1), read_map(t.reads.size(), -1);
  for (size_t n = 0; n < t.expr.size(); ++n) {
    if (!live[n]) continue;
    ExprNode e = t.expr[n];
    if (temp_of[n] >= 0) {
      e = ExprNode{};
      e.op = ExprOp::kLoad;
      e.dtype = t.expr[n].dtype;
      merged.reads.push_back(Access(temp_of[n], {flat}));
      e.access = static_cast<int>(merged.reads.size()) - 1;
    } else {
      for (int& o : e.operands)
        o = map[static_cast<size_t>(o)];
      if (e.op == ExprOp::kLoad) {
        int& r = read_map[static_cast<size_t>(e.access)];
        if (r < 0) {
          merged.reads.push_back(t.reads[static_cast<size_t>(e.access)]);
          r = static_cast<int>(merged.reads.size()) - 1;
        }
        e.access = r;
      }
    }
    merged.expr.push_back(std::move(e));
    map[n] = static_cast<int>(merged.expr.size()) - 1;
  }
  // Over d and e merged.
  merged.domain.erase(merged.domain.begin() + d + 1);
  merged.domain[static_cast<size_t>(d)] = Dim(dd * de);
  merged.write = merged_access(k, merged.write, d, de);
  for (Access& a : merged.reads)
    a = merged_access(k, a, d, de);
  for (AffineExpr& g : merged.guards)
    g = merged_expr(g, d, de);
  k.kernel.statements[si] = std::move(merged);
  k.kernel.statements.insert(k.kernel.statements.begin() + static_cast<std::ptrdiff_t>(si),
                             copies.begin(), copies.end());
  return copies.size();
}

} // namespace

bool merge_short_inner_dims(kernel::BoundKernel& k, size_t& si) {
  std::optional<size_t> inserted = merge_short_inner(k, si);
  if (!inserted) return false;
  si += *inserted;
  tidy(k);
  return true;
}

void merge_short_inner_dims(kernel::BoundKernel& k) {
  bool changed = false;
  for (size_t si = 0; si < k.kernel.statements.size(); ++si) {
    if (std::optional<size_t> inserted = merge_short_inner(k, si)) {
      si += *inserted;
      changed = true;
    }
  }
  if (changed) tidy(k);
}

} // namespace weft::fusion
