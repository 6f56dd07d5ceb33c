#include "weft/fusion/fuse.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "weft/fusion/segments.h"
#include "weft/fusion/views.h"

namespace weft::fusion {

namespace {

using kernel::Access;
using kernel::AffineExpr;
using kernel::BufferRole;
using kernel::ExprNode;
using kernel::ExprOp;
using kernel::Kernel;
using kernel::Statement;

constexpr size_t kMaxStitchedStatements = 24;
constexpr int kCheapOps = 2; // a producer this cheap may be recomputed per broadcast element
constexpr int kMaxReadingStatements = 4;
// A producer whose expression is this large is not inlined again: chains are cut into
// kernels of bounded size (then stitched), which keeps planning linear.
constexpr size_t kMaxInlinedNodes = 64;
// The exact plan covers windows of this many kernels of a run (small clusters, so that
// planning stays linear); a window boundary is a cut.
constexpr size_t kMaxExactKernels = 64;
// The cost model counts a launch as this many bytes moved: an OpenMP fork and join, a few
// microseconds, at memory speed.
constexpr double kLaunchBytes = 64 * 1024;

bool is_library(const FusedKernel& k) {
  static const std::set<std::string> kLibrary = {
      "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "Einsum"};
  return std::any_of(k.nodes.begin(), k.nodes.end(),
                     [](const Node* n) { return kLibrary.contains(n->op_type); });
}

int64_t points(const std::vector<Dim>& domain) {
  int64_t n = 1;
  for (const Dim& d : domain) {
    if (!d.is_static()) return -1;
    n *= d.value();
  }
  return n;
}

// The number of points of "domain": a product of symbols when it has some.
Dim point_count(const std::vector<Dim>& domain) {
  Dim n = 1;
  for (const Dim& d : domain)
    n = dim_mul(n, d);
  return n;
}

int op_count(const Statement& s) {
  return static_cast<int>(std::count_if(s.expr.begin(), s.expr.end(), [](const ExprNode& e) {
    return e.op != ExprOp::kLoad && e.op != ExprOp::kConstant && e.op != ExprOp::kExtent;
  }));
}

// Does "s" compute exp, log, erf or another op that costs tens of instructions? Inlined into
// several readers, it would be computed once per reader (softmax's exp(x - max), read by
// the sum and by the normalization).
bool transcendental(const Statement& s) {
  static const std::set<ExprOp> kCostly = {
      ExprOp::kExp,     ExprOp::kShiftedExp, ExprOp::kLog,  ExprOp::kErf,  ExprOp::kTanh,
      ExprOp::kSigmoid, ExprOp::kPow,        ExprOp::kSin,  ExprOp::kCos,  ExprOp::kTan,
      ExprOp::kAsin,    ExprOp::kAcos,       ExprOp::kAtan, ExprOp::kSinh, ExprOp::kCosh,
      ExprOp::kAsinh,   ExprOp::kAcosh,      ExprOp::kAtanh};
  return std::any_of(s.expr.begin(), s.expr.end(),
                     [](const ExprNode& e) { return kCostly.contains(e.op); });
}

// The one statement of a kernel that writes each element of its one output once, from its
// inputs alone; or why the kernel is not one.
std::optional<std::string> not_elementwise(const Kernel& k) {
  if (k.statements.size() != 1) return "it has several statements";
  const Statement& s = k.statements[0];
  if (s.combine != kernel::Combine::kNone) return "it is a reduction";
  if (!s.guards.empty()) return "it has guards";
  for (const kernel::Buffer& b : k.buffers) {
    if (b.role == BufferRole::kTemp) return "it has temporaries";
  }
  const kernel::Buffer& out = k.buffers[static_cast<size_t>(s.write.buffer)];
  if (s.domain.size() != out.shape.size()) return "its write is not the identity";
  for (size_t d = 0; d < s.domain.size(); ++d) {
    if (!(s.write.index[d] == AffineExpr::iterator(static_cast<int>(d))) ||
        !(s.domain[d] == out.shape[d]))
      return "its write is not the identity";
  }
  return std::nullopt;
}

// Inlines producer "producer" (elementwise, writing "v") into every read of "v" in "c",
// through any of the buffers (views) "c" has for it; returns why not, leaving "c"
// unspecified, on failure.
std::optional<std::string> inline_into(const kernel::BoundKernel& producer, kernel::BoundKernel& c,
                                       const Value* v) {
  const Shape& produced =
      producer.kernel.buffers[static_cast<size_t>(producer.kernel.statements[0].write.buffer)]
          .shape;
  // The producer as each view needs it, and its buffers as buffers of "c".
  struct Version {
    kernel::BoundKernel p;
    std::vector<int> buffer_map;
  };
  std::map<std::string, Version> versions; // by the view's printed shape
  std::optional<std::string> failure;
  auto version_for = [&](const Shape& view) -> Version* {
    std::string key = shape_to_string(view);
    auto it = versions.find(key);
    if (it != versions.end()) return &it->second;
    std::optional<kernel::BoundKernel> p =
        view == produced ? std::optional<kernel::BoundKernel>(producer) : reviewed(producer, view);
    if (!p) {
      failure = "the consumer views it with another shape";
      return nullptr;
    }
    std::vector<int> map(p->kernel.buffers.size(), -1);
    Version& ver = versions[key] = Version{std::move(*p), std::move(map)};
    return &ver;
  };
  auto map_buffer = [&](Version& ver, int pb) {
    int& m = ver.buffer_map[static_cast<size_t>(pb)];
    if (m < 0) {
      const Value* pv = ver.p.values[static_cast<size_t>(pb)];
      const kernel::Buffer& buffer = ver.p.kernel.buffers[static_cast<size_t>(pb)];
      m = buffer_of(c, pv, &buffer.shape);
      if (m < 0) m = add_buffer(c, buffer, pv);
    }
    return m;
  };
  auto bound_to_v = [&](int buffer) { return c.values[static_cast<size_t>(buffer)] == v; };
  for (Statement& s : c.kernel.statements) {
    bool reads_v = std::any_of(s.reads.begin(), s.reads.end(),
                               [&](const Access& a) { return bound_to_v(a.buffer); });
    if (!reads_v) continue;
    Statement out = s;
    out.reads.clear();
    out.expr.clear();
    std::vector<int> node_map(s.expr.size(), -1), read_map(s.reads.size(), -1);
    for (size_t n = 0; n < s.expr.size(); ++n) {
      ExprNode e = s.expr[n];
      for (int& o : e.operands)
        o = node_map[static_cast<size_t>(o)];
      if (e.op != ExprOp::kLoad) {
        out.expr.push_back(e);
        node_map[n] = static_cast<int>(out.expr.size()) - 1;
        continue;
      }
      const Access& a = s.reads[static_cast<size_t>(e.access)];
      if (!bound_to_v(a.buffer)) {
        int& r = read_map[static_cast<size_t>(e.access)];
        if (r < 0) {
          Access kept = a;
          for (kernel::IndirectIndex& ind : kept.indirect)
            ind.node = node_map[static_cast<size_t>(ind.node)];
          out.reads.push_back(kept);
          r = static_cast<int>(out.reads.size()) - 1;
        }
        e.access = r;
        out.expr.push_back(e);
        node_map[n] = static_cast<int>(out.expr.size()) - 1;
        continue;
      }
      if (!a.indirect.empty()) return "the consumer reads it at a data-dependent index";
      Version* ver = version_for(c.kernel.buffers[static_cast<size_t>(a.buffer)].shape);
      if (!ver) return failure;
      const Statement& ps = ver->p.kernel.statements[0];
      // Splice the producer's expression, its iterators replaced by this read's index.
      std::vector<int> pmap(ps.expr.size(), -1);
      for (size_t q = 0; q < ps.expr.size(); ++q) {
        ExprNode pe = ps.expr[q];
        for (int& o : pe.operands)
          o = pmap[static_cast<size_t>(o)];
        if (pe.op == ExprOp::kLoad) {
          const Access& pr = ps.reads[static_cast<size_t>(pe.access)];
          Access r(map_buffer(*ver, pr.buffer), {}, pr.indirect);
          for (const AffineExpr& ix : pr.index)
            r.index.push_back(compose(ix, a.index));
          for (kernel::IndirectIndex& ind : r.indirect)
            ind.node = pmap[static_cast<size_t>(ind.node)];
          out.reads.push_back(std::move(r));
          pe.access = static_cast<int>(out.reads.size()) - 1;
        } else if (pe.op == ExprOp::kIterator) {
          const AffineExpr& ix = a.index[static_cast<size_t>(pe.access)];
          if (ix.terms.empty()) {
            pe.op = ExprOp::kConstant;
            pe.value = static_cast<double>(ix.constant);
          } else if (ix.terms.size() == 1 && ix.terms[0].second == 1 && ix.constant == 0) {
            pe.access = ix.terms[0].first;
          } else {
            return "the producer uses its index, which the consumer's read makes non-trivial";
          }
        }
        out.expr.push_back(pe);
        pmap[q] = static_cast<int>(out.expr.size()) - 1;
      }
      node_map[n] = pmap.back();
    }
    for (kernel::IndirectIndex& ind : out.write.indirect) // a scatter's target
      ind.node = node_map[static_cast<size_t>(ind.node)];
    s = std::move(out);
  }
  drop_unused_buffers(c);
  if (Status st = kernel::verify_kernel(c.kernel); !st.ok()) return st.message();
  return std::nullopt;
}

// Readers of each value: (step, kernel) positions.
std::map<const Value*, std::vector<size_t>> readers(const std::vector<Step>& steps) {
  std::map<const Value*, std::vector<size_t>> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const FusedKernel& k : steps[i].kernels) {
      for (size_t b = 0; b < k.bound.values.size(); ++b) {
        if (!k.bound.values[b] || k.bound.kernel.buffers[b].role != BufferRole::kInput) continue;
        std::vector<size_t>& r = out[k.bound.values[b]];
        if (r.empty() || r.back() != i) r.push_back(i); // once per step, in step order
      }
    }
  }
  return out;
}

// The value a kernel's single statement writes.
const Value* written_value(const FusedKernel& k) {
  return k.bound.values[static_cast<size_t>(k.bound.kernel.statements[0].write.buffer)];
}

void inline_producers(std::vector<Step>& steps, const std::set<const Value*>& pinned,
                      std::vector<Decision>& decisions) {
  // Kept up to date as producers are inlined, so that planning stays linear in the kernels.
  std::map<const Value*, std::vector<size_t>> reads = readers(steps);
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kernels.size() != 1) continue;
    const FusedKernel& p = steps[i].kernels[0];
    const Value* v = written_value(p);
    std::vector<size_t> consumers = reads[v];
    if (consumers.empty()) continue;
    auto decide = [&](const std::string& why) {
      for (size_t c : consumers)
        decisions.push_back({node_names(p), node_names(steps[c].kernels[0]), false, why});
    };
    if (auto why = not_elementwise(p.bound.kernel)) {
      decide("the producer is not elementwise: " + *why);
      continue;
    }
    if (pinned.contains(v)) {
      decide("its output is a graph output, aliased, or read by a library call");
      continue;
    }
    if (p.bound.kernel.statements[0].expr.size() > kMaxInlinedNodes) {
      decide(fmt::format("its expression has more than {} nodes", kMaxInlinedNodes));
      continue;
    }
    const Statement& ps = p.bound.kernel.statements[0];
    bool cheap = op_count(ps) <= kCheapOps;
    int reading = 0;
    std::optional<std::string> why;
    std::vector<FusedKernel> fused;
    for (size_t c : consumers) {
      FusedKernel k = steps[c].kernels[0];
      for (const Statement& s : k.bound.kernel.statements) {
        if (std::none_of(s.reads.begin(), s.reads.end(), [&](const Access& a) {
              return k.bound.values[static_cast<size_t>(a.buffer)] == v;
            }))
          continue;
        ++reading;
        if (!cheap && !(point_count(s.domain) == point_count(ps.domain)))
          why = "the consumer would recompute it (a broadcast read of a costly producer)";
      }
      if (reading > 1 && transcendental(ps))
        why = "several statements read it and it has transcendental ops (computed once, "
              "through memory)";
      if (reading > kMaxReadingStatements)
        why = fmt::format("more than {} statements read it", kMaxReadingStatements);
      if (!why) why = inline_into(p.bound, k.bound, v);
      if (why) break;
      k.nodes.insert(k.nodes.begin(), p.nodes.begin(), p.nodes.end());
      fused.push_back(std::move(k));
    }
    if (why) {
      decide(*why);
      continue;
    }
    for (size_t c = 0; c < consumers.size(); ++c) {
      decisions.push_back(
          {node_names(p), node_names(steps[consumers[c]].kernels[0]), true, "inlined"});
      steps[consumers[c]].kernels[0] = std::move(fused[c]);
    }
    // The consumers now read the producer's inputs instead of its output.
    reads.erase(v);
    for (size_t b = 0; b < p.bound.values.size(); ++b) {
      const Value* u = p.bound.values[b];
      if (!u || p.bound.kernel.buffers[b].role != BufferRole::kInput) continue;
      std::vector<size_t>& r = reads[u];
      std::erase(r, i);
      r.insert(r.end(), consumers.begin(), consumers.end());
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
    }
    steps[i].kernels.clear(); // no kernel left; the step is dropped below
  }
  std::erase_if(steps, [](const Step& s) { return s.kernels.empty() && !s.alias && !s.library; });
}

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

// Appends "k"'s statements and buffers to "g". A value "k" views with another shape than
// "g" gets a second buffer; when one of them is written, both are marked aliased.
void stitch_into(FusedKernel& g, FusedKernel k) {
  std::vector<int> map(k.bound.kernel.buffers.size());
  for (size_t b = 0; b < map.size(); ++b) {
    const Value* v = k.bound.values[b];
    int existing = buffer_of(g.bound, v, &k.bound.kernel.buffers[b].shape);
    if (existing >= 0) {
      map[b] = existing;
      continue;
    }
    int other_view = buffer_of(g.bound, v);
    map[b] = add_buffer(g.bound, k.bound.kernel.buffers[b], v);
    // Two read-only views may keep __restrict__: nothing is written through either.
    if (other_view >= 0 &&
        (k.bound.kernel.buffers[b].role == BufferRole::kOutput ||
         g.bound.kernel.buffers[static_cast<size_t>(other_view)].role == BufferRole::kOutput)) {
      g.bound.kernel.buffers[static_cast<size_t>(other_view)].aliased = true;
      g.bound.kernel.buffers[static_cast<size_t>(map[b])].aliased = true;
    }
  }
  for (Statement& s : k.bound.kernel.statements) {
    s.write.buffer = map[static_cast<size_t>(s.write.buffer)];
    for (Access& a : s.reads)
      a.buffer = map[static_cast<size_t>(a.buffer)];
    g.bound.kernel.statements.push_back(std::move(s));
  }
  g.nodes.insert(g.nodes.end(), k.nodes.begin(), k.nodes.end());
}

bool writes(const FusedKernel& g, const Value* v) {
  int b = buffer_of(g.bound, v);
  return b >= 0 && g.bound.kernel.buffers[static_cast<size_t>(b)].role == BufferRole::kOutput;
}

// Does "k" read a value "g" reads too (not a constant): sibling kernels over one input?
bool shares_input(const FusedKernel& g, const FusedKernel& k) {
  for (size_t b = 0; b < k.bound.values.size(); ++b) {
    const Value* v = k.bound.values[b];
    if (v && !v->is_constant() && k.bound.kernel.buffers[b].role == BufferRole::kInput &&
        buffer_of(g.bound, v) >= 0)
      return true;
  }
  return false;
}

size_t value_bytes(const Value* v) {
  if (!v->type.has_static_shape()) return 0;
  return static_cast<size_t>(shape_num_elements(*v->type.shape).value_or(0)) *
         static_cast<size_t>(dtype_size(v->type.dtype));
}

// Bytes a kernel reads and writes (its temporaries excluded), each value counted once.
size_t moved_bytes(const FusedKernel& k) {
  std::set<const Value*> values(k.bound.values.begin(), k.bound.values.end());
  size_t bytes = 0;
  for (const Value* v : values) {
    if (v) bytes += value_bytes(v);
  }
  return bytes;
}

// What one kernel of a run reads and writes, for the cost model.
struct Footprint {
  size_t statements = 0;
  std::set<const Value*> reads, writes;
};

Footprint footprint(const FusedKernel& k) {
  Footprint f;
  f.statements = k.bound.kernel.statements.size();
  for (size_t b = 0; b < k.bound.values.size(); ++b) {
    const Value* v = k.bound.values[b];
    if (!v) continue;
    (k.bound.kernel.buffers[b].role == BufferRole::kInput ? f.reads : f.writes).insert(v);
  }
  return f;
}

// The steps at which stitching starts a new kernel though the next one could join: the cuts
// of the exact plan of each run of consecutive kernels that exceeds the statement budget
// (without the budget, joining whenever legal is optimal, and greedy does that). Among the
// legal splits of the run (each kernel joins one that it reads from or shares an input
// with, within the budget), the plan minimizes bytes moved plus launches: the values a
// group reads from outside, the values it writes that others read or that are pinned, and
// kLaunchBytes per group.
std::map<size_t, std::string> exact_cuts(const std::vector<Step>& steps,
                                         const std::set<const Value*>& pinned) {
  std::map<size_t, std::string> cuts;
  std::map<const Value*, std::vector<size_t>> reads = readers(steps);
  auto stitchable = [&](size_t i) {
    return steps[i].kernels.size() == 1 && !is_library(steps[i].kernels[0]);
  };
  for (size_t start = 0; start < steps.size();) {
    size_t end = start;
    size_t statements = 0;
    while (end < steps.size() && stitchable(end))
      statements += steps[end++].kernels[0].bound.kernel.statements.size();
    if (end - start < 2 || statements <= kMaxStitchedStatements) {
      start = std::max(end, start + 1);
      continue;
    }
    end = std::min(end, start + kMaxExactKernels);
    size_t n = end - start;
    std::vector<Footprint> run;
    for (size_t i = start; i < end; ++i)
      run.push_back(footprint(steps[i].kernels[0]));
    auto connected = [&](size_t i, size_t j) { // may kernel j join a group with kernel i?
      for (const Value* v : run[j].reads) {
        if (run[i].writes.contains(v) || (!v->is_constant() && run[i].reads.contains(v)))
          return true;
      }
      return false;
    };
    // Segment costs, growing each segment [a, b) one kernel at a time; none once illegal.
    std::vector<std::vector<double>> costs(n); // costs[a][b - a - 1]
    for (size_t a = 0; a < n; ++a) {
      size_t count = 0;
      double in_bytes = 0;
      std::set<const Value*> in, out;
      for (size_t j = a; j < n && j - a < kMaxStitchedStatements; ++j) {
        count += run[j].statements;
        bool joins = j == a;
        for (size_t i = a; i < j && !joins; ++i)
          joins = connected(i, j);
        if (!joins || (j > a && count > kMaxStitchedStatements)) break;
        for (const Value* v : run[j].reads) {
          if (!out.contains(v) && in.insert(v).second)
            in_bytes += static_cast<double>(value_bytes(v));
        }
        out.insert(run[j].writes.begin(), run[j].writes.end());
        double out_bytes = 0; // written values read after the segment, or pinned
        for (const Value* v : out) {
          const std::vector<size_t>& r = reads[v];
          if (pinned.contains(v) || (!r.empty() && r.back() > start + j))
            out_bytes += static_cast<double>(value_bytes(v));
        }
        costs[a].push_back(kLaunchBytes + in_bytes + out_bytes);
      }
    }
    SegmentCost cost = [&](size_t a, size_t b) -> std::optional<double> {
      if (b - a > costs[a].size()) return std::nullopt;
      return costs[a][b - a - 1];
    };
    Result<std::vector<size_t>> starts = best_segments(n, kMaxStitchedStatements, cost);
    if (starts.ok()) {
      for (size_t a : *starts) {
        if (a > 0)
          cuts[start + a] = fmt::format("the exact plan of {} kernels (an ILP, GLPK) starts a "
                                        "kernel here: fewer bytes cross",
                                        n);
      }
      if (end < steps.size() && stitchable(end))
        cuts[end] = fmt::format("the exact plan covers {} kernels at a time", kMaxExactKernels);
    }
    start = end;
  }
  return cuts;
}

void stitch(std::vector<Step>& steps, const std::set<const Value*>& pinned,
            std::vector<Decision>& decisions) {
  std::map<size_t, std::string> cuts = exact_cuts(steps, pinned);
  size_t index = 0; // of "step" in "steps"
  std::vector<Step> out;
  int open = -1;                // the step of "out" that may take the next kernel
  std::set<const Value*> after; // aliases of its outputs, bound after it
  for (Step& step : steps) {
    size_t here = index++;
    if (step.library) { // a barrier: nothing stitches across a library call
      out.push_back(std::move(step));
      open = -1;
      after.clear();
      continue;
    }
    if (step.kernels.empty()) {
      // An alias of a value the open kernel writes stays after it, and a kernel that reads
      // the alias cannot join it. Any other alias moves before the open kernel.
      if (open >= 0 && !writes(out[static_cast<size_t>(open)].kernels[0], step.alias_of) &&
          !after.contains(step.alias_of)) { // (an alias of such an alias stays after too)
        out.insert(out.begin() + open, std::move(step));
        ++open;
      } else {
        if (open >= 0) after.insert(step.alias);
        out.push_back(std::move(step));
      }
      continue;
    }
    FusedKernel& k = step.kernels[0];
    bool depends = false, sibling = false, horizontal = false;
    bool reads_after = std::any_of(k.bound.values.begin(), k.bound.values.end(),
                                   [&](const Value* v) { return after.contains(v); });
    if (open >= 0 && !reads_after) {
      const FusedKernel& g = out[static_cast<size_t>(open)].kernels[0];
      for (size_t b = 0; b < k.bound.values.size(); ++b)
        depends |=
            k.bound.kernel.buffers[b].role == BufferRole::kInput && writes(g, k.bound.values[b]);
      sibling = !depends && shares_input(g, k);
      // Independent kernels that move less than a launch costs share one launch.
      horizontal = !depends && !sibling && !is_library(g) && !is_library(k) &&
                   static_cast<double>(moved_bytes(g) + moved_bytes(k)) < kLaunchBytes;
    }
    if (open >= 0 && (depends || sibling || horizontal)) {
      FusedKernel& g = out[static_cast<size_t>(open)].kernels[0];
      std::string why;
      if (is_library(k) || is_library(g))
        why = "a library-class kernel (MatMul, Conv, pooling)";
      else if (auto cut = cuts.find(here); cut != cuts.end())
        why = cut->second;
      else if (g.bound.kernel.statements.size() + k.bound.kernel.statements.size() >
               kMaxStitchedStatements)
        why = fmt::format("more than {} statements in one kernel", kMaxStitchedStatements);
      const char* how = depends   ? "stitched"
                        : sibling ? "stitched (siblings)"
                                  : "stitched (horizontal: small and independent)";
      decisions.push_back({node_names(g), node_names(k), why.empty(), why.empty() ? how : why});
      if (why.empty()) {
        stitch_into(g, std::move(k));
        continue;
      }
    }
    out.push_back(std::move(step));
    open = is_library(out.back().kernels[0]) ? -1 : static_cast<int>(out.size()) - 1;
    after.clear();
  }
  // Intermediates of a stitched kernel that no other step reads become its temporaries.
  std::map<const Value*, std::vector<size_t>> reads = readers(out);
  for (size_t i = 0; i < out.size(); ++i) {
    for (FusedKernel& k : out[i].kernels) {
      for (size_t b = 0; b < k.bound.values.size(); ++b) {
        const Value* v = k.bound.values[b];
        if (!v || k.bound.kernel.buffers[b].role != BufferRole::kOutput || pinned.contains(v))
          continue;
        const std::vector<size_t>& r = reads[v];
        bool one_view = std::count(k.bound.values.begin(), k.bound.values.end(), v) == 1;
        if (one_view && std::all_of(r.begin(), r.end(), [&](size_t s) { return s == i; })) {
          k.bound.kernel.buffers[b].role = BufferRole::kTemp;
          k.bound.values[b] = nullptr;
        }
      }
    }
  }
  steps = std::move(out);
}

// Is "index" over "domain" a one-to-one map onto the elements of "shape": the identity, or
// the row-major position of the iterators in a rank-1 "shape"?
bool covers_once(const std::vector<AffineExpr>& index, const std::vector<Dim>& domain,
                 const Shape& shape) {
  if (index.size() == domain.size() && shape == Shape(domain.begin(), domain.end())) {
    for (size_t d = 0; d < index.size(); ++d) {
      if (!(index[d] == AffineExpr::iterator(static_cast<int>(d)))) return false;
    }
    return true;
  }
  if (index.size() != 1 || shape.size() != 1 || points(domain) != shape_num_elements(shape))
    return false;
  AffineExpr linear;
  int64_t stride = 1;
  for (size_t i = domain.size(); i-- > 0;) {
    if (domain[i].value() != 1)
      linear.terms.insert(linear.terms.begin(), {static_cast<int>(i), stride});
    stride *= domain[i].value();
  }
  return index[0] == linear;
}

// Reductions accumulate into the output itself where lowering accumulated into a temporary
// and then copied it out ("finish: y[i] = acc[i]"): the copy pass and the temporary go (a
// MIDDLE's result is written once instead of three times). Only for an output that no other
// statement writes and that has one view in the kernel, and a temporary that nothing writes
// after the copy; the output's storage is the kernel's own while it runs.
void accumulate_in_outputs(kernel::BoundKernel& k) {
  std::vector<Statement>& ss = k.kernel.statements;
  for (size_t f = 0; f < ss.size(); ++f) {
    const Statement& copy = ss[f];
    if (copy.combine != kernel::Combine::kNone || !copy.guards.empty() ||
        !copy.write.indirect.empty() || copy.reads.size() != 1 || copy.expr.size() != 1 ||
        !copy.reads[0].indirect.empty())
      continue;
    int t = copy.reads[0].buffer, o = copy.write.buffer;
    const kernel::Buffer& temp = k.kernel.buffers[static_cast<size_t>(t)];
    const kernel::Buffer& out = k.kernel.buffers[static_cast<size_t>(o)];
    if (temp.role != BufferRole::kTemp || out.role != BufferRole::kOutput || temp.aliased ||
        out.aliased || temp.dtype != out.dtype || !(temp.shape == out.shape) ||
        !(copy.reads[0].index == copy.write.index) ||
        !covers_once(copy.write.index, copy.domain, out.shape))
      continue;
    bool other_writer = false;
    for (size_t j = 0; j < ss.size(); ++j) {
      other_writer |= j != f && ss[j].write.buffer == o;
      other_writer |= j > f && ss[j].write.buffer == t;
    }
    if (other_writer) continue;
    for (Statement& s : ss) {
      if (s.write.buffer == t) s.write.buffer = o;
      for (Access& a : s.reads) {
        if (a.buffer == t) a.buffer = o;
      }
    }
    ss.erase(ss.begin() + static_cast<std::ptrdiff_t>(f--));
  }
  drop_unused_buffers(k);
}

} // namespace

std::string node_names(const FusedKernel& k) {
  std::vector<std::string> names;
  for (const Node* n : k.nodes)
    names.push_back(n->name);
  return fmt::format("{}", fmt::join(names, ", "));
}

FusionResult fuse(std::vector<Step> steps, const std::set<const Value*>& pinned_values) {
  std::set<const Value*> kept = pinned_values; // in memory for a reason other than an alias
  for (const Step& s : steps) {
    if (s.library) {
      kept.insert(s.library->inputs.begin(), s.library->inputs.end());
      kept.insert(s.library->outputs.begin(), s.library->outputs.end());
    }
  }
  std::set<const Value*> pinned = kept;
  for (const Step& s : steps) {
    if (s.alias) {
      pinned.insert(s.alias);
      pinned.insert(s.alias_of);
    }
  }
  FusionResult result;
  inline_producers(steps, pinned, result.decisions);
  inline_through_aliases(steps, kept, result.decisions);
  stitch(steps, pinned, result.decisions);
  for (Step& s : steps) {
    for (FusedKernel& k : s.kernels)
      accumulate_in_outputs(k.bound);
  }
  result.steps = std::move(steps);
  return result;
}

} // namespace weft::fusion
