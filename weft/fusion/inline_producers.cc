#include <algorithm>

#include <fmt/format.h>

#include "weft/fusion/rewrites.h"
#include "weft/fusion/views.h"
#include "weft/graph/dtype.h"

namespace weft::fusion {

namespace {

constexpr int kCheapOps = 2; // a producer this cheap may be recomputed per broadcast element
constexpr int kMaxReadingStatements = 4;

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

// Whether "s" reads an input of its domain's size in another order than it writes (a
// Transpose): inlined into a statement that reads each point several times (a convolution's
// taps), each of those reads would go strided. ResNeXt's grouped convolution on the plain
// layout read its channels-last source so: 8.1 ms, against 1.2 ms from a plain copy.
bool permutes(const kernel::BoundKernel& k, const Statement& s) {
  Dim points = point_count(s.domain);
  return std::any_of(s.reads.begin(), s.reads.end(), [&](const Access& a) {
    if (a.index.size() != s.write.index.size() ||
        !(point_count(k.kernel.buffers[static_cast<size_t>(a.buffer)].shape) == points))
      return false; // a broadcast operand, which stays in cache
    for (size_t d = 0; d < a.index.size(); ++d) {
      if (!(a.index[d] == s.write.index[d])) return true;
    }
    return false;
  });
}

// The reads of "s" that stream an array as large as its domain (not a broadcast operand,
// which stays in cache): what each statement it is inlined into reads again. Their number,
// and their bytes a point.
struct Streamed {
  int reads = 0;
  int64_t bytes = 0;
};
Streamed streamed_reads(const kernel::BoundKernel& k, const Statement& s) {
  Dim points = point_count(s.domain);
  Streamed r;
  for (const Access& a : s.reads) {
    const kernel::Buffer& b = k.kernel.buffers[static_cast<size_t>(a.buffer)];
    if (!(point_count(b.shape) == points)) continue;
    ++r.reads;
    r.bytes += dtype_size(b.dtype);
  }
  return r;
}

} // namespace

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

// Statement "s" of "c", which reads "v" as the identity over its own domain, a view that
// merges dims of "producer"'s output that the producer cannot be computed over (a
// per-group operand of [S, G, C/G] read by a reduction over [S, G * C/G]: a channels-last
// GroupNorm's squared deviations): "s" rewritten over the common refinement of the two, its
// iterators split (each merged one a row-major combination of the new ones, so every index
// stays affine), reading "v" through a buffer of that shape, over which the producer can be
// computed. Returns whether it was; otherwise "s" is left as it is.
bool refine_for_producer(const kernel::BoundKernel& producer, kernel::BoundKernel& c, Statement& s,
                         const Value* v) {
  const Shape& produced =
      producer.kernel.buffers[static_cast<size_t>(producer.kernel.statements[0].write.buffer)]
          .shape;
  const Shape domain(s.domain.begin(), s.domain.end());
  const Access* read = nullptr;
  for (const Access& a : s.reads) {
    if (c.values[static_cast<size_t>(a.buffer)] != v) continue;
    const Shape& view = c.kernel.buffers[static_cast<size_t>(a.buffer)].shape;
    if (read || !is_identity(a, domain.size()) || !(view == domain) || view == produced)
      return false;
    read = &a;
  }
  if (!read || !shape_is_static(domain) || reviewed(producer, domain)) return false;
  std::optional<Shape> fine = common_refinement(domain, produced);
  if (!fine || !reviewed(producer, *fine)) return false;
  bool plain = s.write.indirect.empty() &&
               std::all_of(s.reads.begin(), s.reads.end(),
                           [](const Access& a) { return a.indirect.empty(); }) &&
               std::none_of(s.expr.begin(), s.expr.end(),
                            [](const ExprNode& e) { return e.op == ExprOp::kIterator; });
  if (!plain) return false;
  kernel::Buffer buffer = c.kernel.buffers[static_cast<size_t>(read->buffer)];
  buffer.shape = *fine;
  int fine_buffer = buffer_of(c, v, &*fine);
  if (fine_buffer < 0) fine_buffer = add_buffer(c, std::move(buffer), v);
  std::vector<AffineExpr> sub = split_iterators(domain, *fine), identity;
  for (size_t d = 0; d < fine->size(); ++d)
    identity.push_back(AffineExpr::iterator(static_cast<int>(d)));
  compose_indices(s, sub);
  for (Access& a : s.reads) {
    if (c.values[static_cast<size_t>(a.buffer)] == v) a = Access(fine_buffer, identity);
  }
  s.domain.assign(fine->begin(), fine->end());
  return true;
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
  std::vector<size_t> refined; // statements split for the producer, to merge again after
  for (size_t si = 0; si < c.kernel.statements.size(); ++si) {
    Statement& s = c.kernel.statements[si];
    bool reads_v = std::any_of(s.reads.begin(), s.reads.end(),
                               [&](const Access& a) { return bound_to_v(a.buffer); });
    if (!reads_v) continue;
    if (refine_for_producer(producer, c, s, v)) refined.push_back(si);
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
  // A split statement runs over its own dims again, its per-group operands expanded; where it
  // cannot, its loops would be short and strided: not inlined.
  for (size_t i = 0, shift = 0; i < refined.size(); ++i) {
    size_t si = refined[i] + shift, before = si;
    if (!merge_short_inner_dims(c, si)) return "the consumer views it with another shape";
    shift += si - before;
  }
  if (Status st = kernel::verify_kernel(c.kernel); !st.ok()) return st.message();
  return std::nullopt;
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
    // An indirect read (a GatherND's) costs its index loads and bounds checks at every point.
    bool cheap = op_count(ps) <= kCheapOps && !transcendental(ps) &&
                 std::none_of(ps.reads.begin(), ps.reads.end(),
                              [](const Access& a) { return !a.indirect.empty(); });
    Streamed streamed = streamed_reads(p.bound, ps);
    const int64_t written =
        dtype_size(p.bound.kernel.buffers[static_cast<size_t>(ps.write.buffer)].dtype);
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
        Dim points = point_count(s.domain), produced = point_count(ps.domain);
        if (!cheap && !(points == produced))
          why = "the consumer would recompute it (a broadcast read of a costly producer)";
        bool rereads =
            points.is_static() && produced.is_static() && points.value() > produced.value();
        if (rereads && permutes(p.bound, ps))
          why = "the consumer reads it several times (a reduction's taps) and it permutes its "
                "input (strided reads each time)";
      }
      if (reading > 1 && transcendental(ps))
        why = "several statements read it and it has transcendental ops (computed once, "
              "through memory)";
      // Inlined, each reading statement streams the producer's inputs; materialized, the
      // producer streams them once and writes its output, which each statement reads (in
      // bytes: an f16 value between f32 ones costs half). A residual stream (x + a, then
      // + b, ...) that every layer's normalization reads would otherwise be recomputed from
      // all its terms in every layer; an f16 model's, between its f32 convolutions, too.
      if (reading * streamed.bytes > streamed.bytes + (reading + 1) * written)
        why = fmt::format("{} statements read it and it streams {} inputs (computed once, "
                          "through memory)",
                          reading, streamed.reads);
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

} // namespace weft::fusion
