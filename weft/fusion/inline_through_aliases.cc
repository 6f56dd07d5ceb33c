#include <algorithm>

#include <fmt/format.h>

#include "weft/fusion/rewrites.h"
#include "weft/fusion/views.h"

namespace weft::fusion {

namespace {

// Statement "s" of "c" reading "v" (of static shape "produced") wherever it reads "a", a
// Reshape of it, at an affine index: each dim of a's view that the Reshape splits must be
// indexed by a constant or by one iterator of the dim's extent, which is split likewise
// (the statement's domain refined, each split iterator a row-major combination of its
// parts). A Transpose of PyTorch's head split (a select of q, k or v, viewed as
// [S, B * H, D], read as [B * H, S, D]) so reads the projection's output directly. Returns
// why not, leaving "c" unspecified.
std::optional<std::string> read_through_reshape(kernel::BoundKernel& c, Statement& s,
                                                const Value* a, const Value* v,
                                                const Shape& produced) {
  for (size_t r = 0; r < s.reads.size(); ++r) {
    Access& x = s.reads[r];
    if (c.values[static_cast<size_t>(x.buffer)] != a) continue;
    const Shape& view = c.kernel.buffers[static_cast<size_t>(x.buffer)].shape;
    if (!x.indirect.empty()) return "the consumer reads the Reshape at a data-dependent index";
    std::optional<Shape> fine = common_refinement(view, produced);
    if (!fine) return "the Reshape's two shapes have no common refinement";
    std::vector<AffineExpr> parts = split_iterators(view, *fine); // each view dim over "fine"
    std::vector<std::vector<int64_t>> split(s.domain.size());     // per iterator, its parts
    std::vector<AffineExpr> coordinate(fine->size());             // per dim of "fine"
    std::vector<std::pair<int, size_t>> split_from(fine->size(), {-1, 0}); // (iterator, part)
    for (size_t d = 0; d < view.size(); ++d) {
      const AffineExpr& e = x.index[d];
      const auto& terms = parts[d].terms;
      if (terms.size() == 1) coordinate[static_cast<size_t>(terms[0].first)] = e;
      if (terms.size() <= 1) continue;
      if (e.terms.empty()) { // a constant: its digits
        for (auto [j, stride] : terms)
          coordinate[static_cast<size_t>(j)] = AffineExpr::constant_of(
              e.constant / stride % (*fine)[static_cast<size_t>(j)].value());
        continue;
      }
      int i = e.terms[0].first;
      const Dim& extent = s.domain[static_cast<size_t>(i)];
      if (e.terms.size() != 1 || e.terms[0].second != 1 || e.constant != 0 ||
          !(extent == view[d]) || !split[static_cast<size_t>(i)].empty())
        return "the consumer reads a dim the Reshape splits other than by one whole iterator";
      for (auto [j, stride] : terms) {
        split_from[static_cast<size_t>(j)] = {i, split[static_cast<size_t>(i)].size()};
        split[static_cast<size_t>(i)].push_back((*fine)[static_cast<size_t>(j)].value());
      }
    }
    bool splits = std::any_of(split.begin(), split.end(), [](const auto& p) { return !p.empty(); });
    if (splits && std::any_of(s.expr.begin(), s.expr.end(),
                              [](const ExprNode& e) { return e.op == ExprOp::kIterator; }))
      return "the consumer uses its index";
    // The refined domain, and each old iterator in terms of its iterators.
    std::vector<Dim> domain;
    std::vector<AffineExpr> sub(s.domain.size());
    std::vector<int> first(s.domain.size());
    for (size_t i = 0; i < s.domain.size(); ++i) {
      first[i] = static_cast<int>(domain.size());
      if (split[i].empty()) {
        sub[i] = AffineExpr::iterator(first[i]);
        domain.push_back(s.domain[i]);
        continue;
      }
      int64_t stride = 1;
      for (size_t q = split[i].size(); q-- > 0;) {
        sub[i].terms.insert(sub[i].terms.begin(), {first[i] + static_cast<int>(q), stride});
        stride *= split[i][q];
      }
      domain.insert(domain.end(), split[i].begin(), split[i].end());
    }
    for (size_t j = 0; j < fine->size(); ++j) {
      auto [i, q] = split_from[j];
      coordinate[j] =
          i >= 0 ? AffineExpr::iterator(first[static_cast<size_t>(i)] + static_cast<int>(q))
                 : compose(coordinate[j], sub);
    }
    compose_indices(s, sub);
    s.domain = std::move(domain);
    kernel::Buffer buffer = c.kernel.buffers[static_cast<size_t>(x.buffer)];
    buffer.shape = produced;
    int target = buffer_of(c, v, &produced);
    if (target < 0) target = add_buffer(c, std::move(buffer), v);
    Access& read = s.reads[r]; // add_buffer left the reads alone
    read.buffer = target;
    read.index.clear();
    for (const AffineExpr& g : split_iterators(produced, *fine))
      read.index.push_back(compose(g, coordinate));
  }
  drop_unused_buffers(c);
  return std::nullopt;
}

// "inline_through_alias" where "c" reads all of "a" as the identity over its domain.
std::optional<std::string> inline_over_refinement(const kernel::BoundKernel& p,
                                                  kernel::BoundKernel& c, const Value* a,
                                                  const Value* v) {
  const Statement& ps = p.kernel.statements[0];
  const Statement& cs = c.kernel.statements[0];
  std::optional<Shape> fine =
      common_refinement(c.kernel.buffers[static_cast<size_t>(cs.write.buffer)].shape,
                        p.kernel.buffers[static_cast<size_t>(ps.write.buffer)].shape);
  if (!fine) return "the Reshape's two shapes have no common refinement";
  std::optional<kernel::BoundKernel> r = reviewed(c, *fine);
  if (!r) return "the consumer uses its index";
  // Its reads of "a" must now be the identity over "fine": then they read "v" there.
  for (const Access& x : r->kernel.statements[0].reads) {
    if (r->values[static_cast<size_t>(x.buffer)] != a) continue;
    if (!is_identity(x, fine->size()) ||
        !(r->kernel.buffers[static_cast<size_t>(x.buffer)].shape == *fine))
      return "the consumer reads the Reshape with a broadcast";
    r->values[static_cast<size_t>(x.buffer)] = v;
  }
  if (auto why = inline_into(p, *r, v)) return why;
  c = std::move(*r);
  return std::nullopt;
}

// Elementwise kernel "c", which reads "a", a Reshape of "v", rewritten over the common
// refinement of its shape and that of "p", the elementwise kernel writing "v", with "p"
// inlined; or why not. Where "c" does not read all of "a" as the identity (a select, a
// Transpose), its reads of "a" become reads of "v" instead (read_through_reshape).
std::optional<std::string> inline_through_alias(const kernel::BoundKernel& p,
                                                kernel::BoundKernel& c, const Value* a,
                                                const Value* v) {
  if (auto why = not_elementwise(c.kernel)) return "the consumer is not elementwise: " + *why;
  if (a->type.dtype != v->type.dtype) return "a BitCast reads the bytes as another type";
  std::optional<std::string> why = inline_over_refinement(p, c, a, v);
  if (!why) return std::nullopt;
  const Shape& produced =
      p.kernel.buffers[static_cast<size_t>(p.kernel.statements[0].write.buffer)].shape;
  if (!shape_is_static(produced)) return why;
  kernel::BoundKernel r = c;
  if (read_through_reshape(r, r.kernel.statements[0], a, v, produced) || inline_into(p, r, v))
    return why;
  c = std::move(r);
  return std::nullopt;
}

} // namespace

// Producers seen through a Reshape: an elementwise kernel writes "v", a Reshape views it as
// "a", and elementwise kernels read "a" (GroupNorm's per-channel scale and shift after its
// per-group normalization). Each reader is rewritten over the common refinement of the two
// shapes, where both sides index affinely ([32, 8, 25088] and [32, 64, 56, 56] meet in
// [32, 8, 8, 56, 56]), and the producer is inlined into it; the producer and the alias go.
// "kept": the values pinned other than by aliases (graph outputs, library nodes).
void inline_through_aliases(std::vector<Step>& steps, const std::set<const Value*>& kept,
                            std::vector<Decision>& decisions) {
  std::map<const Value*, std::vector<size_t>> reads = readers(steps);
  std::map<const Value*, int> aliases; // how many aliases each value has
  for (const Step& s : steps) {
    if (s.alias) ++aliases[s.alias_of];
  }
  std::map<const Value*, size_t> writer; // the step of the elementwise kernel writing a value
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kernels.size() == 1 && !not_elementwise(steps[i].kernels[0].bound.kernel))
      writer[written_value(steps[i].kernels[0])] = i;
  }
  for (Step& step : steps) {
    const Value *a = step.alias, *v = step.alias_of;
    auto w = writer.find(v);
    if (!a || w == writer.end() || kept.contains(a) || kept.contains(v) || !reads[v].empty() ||
        aliases[v] != 1 || aliases[a] != 0 || reads[a].empty())
      continue;
    const FusedKernel& p = steps[w->second].kernels[0];
    // (a reader rewritten by read_through_reshape above writes through a refined domain)
    if (not_elementwise(p.bound.kernel) ||
        p.bound.kernel.statements[0].expr.size() > kMaxInlinedNodes)
      continue;
    std::optional<std::string> why;
    std::vector<FusedKernel> fused;
    for (size_t c : reads[a]) {
      if (steps[c].kernels.size() != 1) {
        why = "the consumer is not one kernel";
        break;
      }
      FusedKernel k = steps[c].kernels[0];
      if ((why = inline_through_alias(p.bound, k.bound, a, v))) break;
      k.nodes.insert(k.nodes.begin(), p.nodes.begin(), p.nodes.end());
      fused.push_back(std::move(k));
    }
    for (size_t c : reads[a])
      decisions.push_back({node_names(p), node_names(steps[c].kernels[0]), !why,
                           why ? *why : "inlined through the Reshape (common refinement)"});
    if (why) continue;
    for (size_t c = 0; c < fused.size(); ++c)
      steps[reads[a][c]].kernels[0] = std::move(fused[c]);
    for (size_t b = 0; b < p.bound.values.size(); ++b) { // its readers now read its inputs
      const Value* u = p.bound.values[b];
      if (u && p.bound.kernel.buffers[b].role == BufferRole::kInput)
        reads[u].insert(reads[u].end(), reads[a].begin(), reads[a].end());
    }
    steps[w->second].kernels.clear();
    writer.erase(w);
    step.alias = step.alias_of = nullptr; // nobody reads the alias now: the step is dropped
  }
  std::erase_if(steps, [](const Step& s) { return s.kernels.empty() && !s.alias && !s.library; });
}

} // namespace weft::fusion
