#include <algorithm>

#include <fmt/format.h>

#include "weft/fusion/rewrites.h"
#include "weft/fusion/views.h"

namespace weft::fusion {

namespace {

// Elementwise kernel "c", which reads "a", a Reshape of "v", rewritten over the common
// refinement of its shape and that of "p", the elementwise kernel writing "v", with "p"
// inlined; or why not.
std::optional<std::string> inline_through_alias(const kernel::BoundKernel& p,
                                                kernel::BoundKernel& c, const Value* a,
                                                const Value* v) {
  if (auto why = not_elementwise(c.kernel)) return "the consumer is not elementwise: " + *why;
  if (a->type.dtype != v->type.dtype) return "a BitCast reads the bytes as another type";
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
    if (p.bound.kernel.statements[0].expr.size() > kMaxInlinedNodes) continue;
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
