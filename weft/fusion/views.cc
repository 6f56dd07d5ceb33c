#include "weft/fusion/views.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace weft::fusion {

using kernel::Access;
using kernel::AffineExpr;
using kernel::BufferRole;
using kernel::ExprNode;
using kernel::ExprOp;
using kernel::Statement;

namespace {

// Elementwise kernel "p" computed over "domain", a view of its output: a read that is the
// identity over the output's shape becomes the identity over a "domain" view of its
// buffer, and every other index goes through "index" (none: not expressible). None when
// an expression uses an iterator.
template <typename IndexFn>
std::optional<kernel::BoundKernel> redomained(const kernel::BoundKernel& p, const Shape& domain,
                                              IndexFn index) {
  kernel::BoundKernel out = p;
  Statement& s = out.kernel.statements[0];
  const Shape shape = out.kernel.buffers[static_cast<size_t>(s.write.buffer)].shape;
  for (const ExprNode& e : s.expr) {
    if (e.op == ExprOp::kIterator) return std::nullopt;
  }
  std::vector<AffineExpr> identity;
  for (size_t d = 0; d < domain.size(); ++d)
    identity.push_back(AffineExpr::iterator(static_cast<int>(d)));
  for (Access& a : s.reads) {
    const kernel::Buffer& buffer = out.kernel.buffers[static_cast<size_t>(a.buffer)];
    if (is_identity(a, shape.size()) && buffer.shape == shape) {
      a.buffer = add_buffer(out, {buffer.name, buffer.dtype, domain, BufferRole::kInput},
                            out.values[static_cast<size_t>(a.buffer)]);
      a.index = identity;
      continue;
    }
    for (AffineExpr& ix : a.index) {
      std::optional<AffineExpr> e = index(ix);
      if (!e) return std::nullopt;
      ix = *e;
    }
  }
  out.kernel.buffers[static_cast<size_t>(s.write.buffer)].shape = domain;
  s.domain = domain;
  s.write.index = identity;
  drop_unused_buffers(out);
  return out;
}

// "shape" without its dims of extent 1.
Shape without_units(const Shape& shape) {
  Shape out;
  for (const Dim& d : shape) {
    if (!(d == Dim(1))) out.push_back(d);
  }
  return out;
}

// For each dim of "shape" without its unit dims, the dim of "view" it is merged into, when
// "view" merges consecutive dims of it and nothing else (symbolic products compare as
// canonical products: [N, T, 64] into [N*T, 64]); none otherwise.
std::optional<std::vector<int>> merged_into(const Shape& shape, const Shape& view) {
  Shape dims = without_units(shape), target = without_units(view);
  std::vector<int> group(dims.size());
  size_t d = 0;
  for (size_t g = 0; g < target.size(); ++g) {
    Dim product = 1;
    while (d < dims.size() && !(product == target[g])) {
      product = dim_mul(product, dims[d]);
      group[d++] = static_cast<int>(g);
    }
    if (!(product == target[g])) return std::nullopt;
  }
  if (d != dims.size()) return std::nullopt;
  return group;
}

// reviewed() for shapes with symbols: "view" may only merge dims (without units). A merged
// group's iterators have symbolic strides within it, so an index may use only dims that stay
// alone (a per-channel operand); identity reads become identity reads of a view.
std::optional<kernel::BoundKernel> merged(const kernel::BoundKernel& p, const Shape& view) {
  const Shape shape =
      p.kernel.buffers[static_cast<size_t>(p.kernel.statements[0].write.buffer)].shape;
  std::optional<std::vector<int>> group = merged_into(shape, view);
  if (!group) return std::nullopt;
  // The view dim of each non-unit iterator of "shape" that stays alone; -1 when merged.
  std::vector<int> alone(shape.size(), -1), members(view.size(), 0);
  for (int g : *group)
    ++members[static_cast<size_t>(g)];
  std::vector<int> view_dim; // without units, the view's own dim indices
  for (size_t g = 0; g < view.size(); ++g) {
    if (!(view[g] == Dim(1))) view_dim.push_back(static_cast<int>(g));
  }
  for (size_t d = 0, f = 0; d < shape.size(); ++d) {
    if (shape[d] == Dim(1)) continue;
    int g = (*group)[f++];
    if (members[static_cast<size_t>(g)] == 1) alone[d] = view_dim[static_cast<size_t>(g)];
  }
  return redomained(p, view, [&](const AffineExpr& e) -> std::optional<AffineExpr> {
    AffineExpr out = AffineExpr::constant_of(e.constant);
    for (auto [i, c] : e.terms) {
      if (shape[static_cast<size_t>(i)] == Dim(1)) continue; // a unit iterator is always 0
      if (alone[static_cast<size_t>(i)] < 0) return std::nullopt;
      out.terms.emplace_back(alone[static_cast<size_t>(i)], c);
    }
    return out;
  });
}

} // namespace

AffineExpr compose(const AffineExpr& e, const std::vector<AffineExpr>& sub) {
  AffineExpr out = AffineExpr::constant_of(e.constant);
  std::map<int, int64_t> terms;
  for (auto [j, c] : e.terms) {
    const AffineExpr& s = sub[static_cast<size_t>(j)];
    out.constant += c * s.constant;
    for (auto [i, ci] : s.terms)
      terms[i] += c * ci;
  }
  for (auto [i, c] : terms) {
    if (c != 0) out.terms.emplace_back(i, c);
  }
  return out;
}

void compose_indices(kernel::Statement& s, const std::vector<AffineExpr>& sub) {
  for (kernel::Access& a : s.reads) {
    for (AffineExpr& ix : a.index)
      ix = compose(ix, sub);
  }
  for (AffineExpr& ix : s.write.index)
    ix = compose(ix, sub);
  for (AffineExpr& g : s.guards)
    g = compose(g, sub);
}

int buffer_of(const kernel::BoundKernel& k, const Value* v, const Shape* shape) {
  for (size_t i = 0; i < k.values.size(); ++i) {
    if (v && k.values[i] == v && (!shape || k.kernel.buffers[i].shape == *shape))
      return static_cast<int>(i);
  }
  return -1;
}

int add_buffer(kernel::BoundKernel& k, kernel::Buffer b, const Value* v) {
  std::string name = b.name;
  for (int n = 1; std::any_of(k.kernel.buffers.begin(), k.kernel.buffers.end(),
                              [&](const kernel::Buffer& x) { return x.name == name; });
       ++n)
    name = fmt::format("{}_{}", b.name, n);
  b.name = name;
  k.kernel.buffers.push_back(std::move(b));
  k.values.push_back(v);
  return static_cast<int>(k.kernel.buffers.size()) - 1;
}

void drop_unused_buffers(kernel::BoundKernel& k) {
  std::vector<bool> used(k.kernel.buffers.size(), false);
  for (const Statement& s : k.kernel.statements) {
    used[static_cast<size_t>(s.write.buffer)] = true;
    for (const Access& a : s.reads)
      used[static_cast<size_t>(a.buffer)] = true;
  }
  std::vector<int> renumber(used.size(), -1);
  kernel::BoundKernel out{{k.kernel.name, {}, {}}, {}};
  for (size_t b = 0; b < used.size(); ++b) {
    if (!used[b]) continue;
    renumber[b] = static_cast<int>(out.kernel.buffers.size());
    out.kernel.buffers.push_back(k.kernel.buffers[b]);
    out.values.push_back(k.values[b]);
  }
  for (Statement& s : k.kernel.statements) {
    s.write.buffer = renumber[static_cast<size_t>(s.write.buffer)];
    for (Access& a : s.reads)
      a.buffer = renumber[static_cast<size_t>(a.buffer)];
  }
  out.kernel.statements = std::move(k.kernel.statements);
  k = std::move(out);
  group_views(k);
}

void group_views(kernel::BoundKernel& k) {
  std::vector<kernel::Buffer>& buffers = k.kernel.buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].aliased()) continue;
    size_t first = 0;
    while (!buffers[first].aliased() || k.values[first] != k.values[i])
      ++first;
    buffers[i].view_group = static_cast<int>(first);
  }
}

bool is_identity(const Access& a, size_t rank) {
  if (a.index.size() != rank || !a.indirect.empty()) return false;
  for (size_t d = 0; d < rank; ++d) {
    if (!(a.index[d] == AffineExpr::iterator(static_cast<int>(d)))) return false;
  }
  return true;
}

std::optional<Shape> common_refinement(const Shape& a, const Shape& b) {
  if (!shape_is_static(a) || !shape_is_static(b)) return std::nullopt;
  std::optional<int64_t> n = shape_num_elements(a);
  if (!n || *n == 0 || n != shape_num_elements(b)) return std::nullopt;
  // The strides at which a dim ends, innermost first, of both shapes together.
  std::set<int64_t> bounds;
  for (const Shape* s : {&a, &b}) {
    int64_t stride = 1;
    for (auto d = s->rbegin(); d != s->rend(); ++d)
      bounds.insert(stride *= d->value());
  }
  Shape fine;
  int64_t inner = 1;
  for (int64_t bound : bounds) {
    if (bound == 1) continue;
    if (bound % inner != 0) return std::nullopt;
    fine.insert(fine.begin(), bound / inner);
    inner = bound;
  }
  return fine;
}

std::vector<AffineExpr> split_iterators(const Shape& shape, const Shape& fine) {
  std::vector<AffineExpr> sub(shape.size());
  int j = static_cast<int>(fine.size()) - 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    int64_t stride = 1;
    for (; stride < shape[static_cast<size_t>(d)].value(); --j) {
      sub[static_cast<size_t>(d)].terms.insert(sub[static_cast<size_t>(d)].terms.begin(),
                                               {j, stride});
      stride *= fine[static_cast<size_t>(j)].value();
    }
  }
  return sub;
}

std::optional<kernel::BoundKernel> reviewed(const kernel::BoundKernel& p, const Shape& view) {
  const Statement& ps = p.kernel.statements[0];
  const Shape shape = p.kernel.buffers[static_cast<size_t>(ps.write.buffer)].shape;
  if (!shape_is_static(shape) || !shape_is_static(view)) return merged(p, view);
  std::optional<Shape> fine = common_refinement(shape, view);
  if (!fine) return std::nullopt;
  std::vector<AffineExpr> sub = split_iterators(shape, *fine);
  std::optional<kernel::BoundKernel> split =
      *fine == without_units(shape)
          ? std::optional<kernel::BoundKernel>(p)
          : redomained(p, *fine, [&](const AffineExpr& e) { return compose(e, sub); });
  if (!split) return std::nullopt;
  // Each dim of "fine" is part of one dim of "view", at a row-major stride within it.
  std::vector<AffineExpr> group = split_iterators(view, *fine);
  std::vector<std::pair<int, int64_t>> part(fine->size()); // (view dim, stride)
  for (size_t g = 0; g < group.size(); ++g) {
    for (auto [j, stride] : group[g].terms)
      part[static_cast<size_t>(j)] = {static_cast<int>(g), stride};
  }
  const Shape domain =
      split->kernel.buffers[static_cast<size_t>(split->kernel.statements[0].write.buffer)]
          .shape;                               // "fine", with unit dims when no split was needed
  std::vector<int> fine_dim(domain.size(), -1); // the dim of "fine" each iterator is
  for (size_t d = 0, f = 0; d < domain.size(); ++d) {
    if (!(domain[d] == Dim(1))) fine_dim[d] = static_cast<int>(f++);
  }
  return redomained(*split, view, [&](const AffineExpr& e) -> std::optional<AffineExpr> {
    std::map<int, int64_t> coefficient; // per view dim
    std::map<int, int64_t> seen;        // per view dim: the sum of its members' strides seen
    for (auto [i, c] : e.terms) {
      int f = fine_dim[static_cast<size_t>(i)];
      if (f < 0) continue; // a unit iterator is always 0
      auto [g, stride] = part[static_cast<size_t>(f)];
      if (stride == 1) coefficient[g] = c;
      seen[g] += stride;
    }
    AffineExpr out = AffineExpr::constant_of(e.constant);
    for (auto [i, c] : e.terms) {
      int f = fine_dim[static_cast<size_t>(i)];
      if (f < 0) continue;
      auto [g, stride] = part[static_cast<size_t>(f)];
      if (!coefficient.contains(g) || c != coefficient[g] * stride) return std::nullopt;
    }
    for (auto [g, c] : coefficient) {
      int64_t members = 0; // every member of the group must appear
      for (auto [j, stride] : group[static_cast<size_t>(g)].terms)
        members += stride;
      if (seen[g] != members) return std::nullopt;
      out.terms.emplace_back(g, c);
    }
    return out;
  });
}

} // namespace weft::fusion
