#include <algorithm>

#include <fmt/format.h>

#include "weft/fusion/rewrites.h"
#include "weft/fusion/segments.h"
#include "weft/fusion/views.h"

namespace weft::fusion {

namespace {

constexpr size_t kMaxStitchedStatements = 24;
// The exact plan covers windows of this many kernels of a run (small clusters, so that
// planning stays linear); a window boundary is a cut.
constexpr size_t kMaxExactKernels = 64;
// The cost model counts a launch as this many bytes moved: an OpenMP fork and join, a few
// microseconds, at memory speed.
constexpr double kLaunchBytes = 64 * 1024;

bool is_library(const FusedKernel& k) {
  static const std::set<Op> kLibrary = {Op::kMatMul,        Op::kGemm,    Op::kConv,
                                        Op::kConvTranspose, Op::kMaxPool, Op::kAveragePool,
                                        Op::kLpPool,        Op::kEinsum};
  return std::any_of(k.nodes.begin(), k.nodes.end(),
                     [](const Node* n) { return kLibrary.contains(n->op_type); });
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
      g.bound.kernel.buffers[static_cast<size_t>(other_view)].view_group = other_view;
      g.bound.kernel.buffers[static_cast<size_t>(map[b])].view_group = other_view;
    }
  }
  group_views(g.bound);
  for (Statement& s : k.bound.kernel.statements) {
    s.write.buffer = map[static_cast<size_t>(s.write.buffer)];
    for (Access& a : s.reads)
      a.buffer = map[static_cast<size_t>(a.buffer)];
    g.bound.kernel.statements.push_back(std::move(s));
  }
  for (const Node* n : k.nodes) { // a producer inlined into several of them is named once
    if (std::find(g.nodes.begin(), g.nodes.end(), n) == g.nodes.end()) g.nodes.push_back(n);
  }
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

} // namespace

void stitch(std::vector<Step>& steps, const std::set<const Value*>& pinned,
            std::vector<Decision>& decisions) {
  std::map<size_t, std::string> cuts = exact_cuts(steps, pinned);
  size_t index = 0; // of "step" in "steps"
  std::vector<Step> out;
  int open = -1; // the step of "out" that may take the next kernel
  // Aliases of its outputs, bound after it, each with the output it views.
  std::map<const Value*, const Value*> after;
  for (Step& step : steps) {
    size_t here = index++;
    if (step.library) { // a barrier: nothing stitches across a library call
      out.push_back(std::move(step));
      open = -1;
      after.clear();
      continue;
    }
    if (step.kernels.empty()) {
      // An alias of a value the open kernel writes stays after it (its slot is bound
      // then); a kernel that reads the alias joins it reading the value itself, in the
      // alias's shape. Any other alias moves before the open kernel.
      bool written = open >= 0 && writes(out[static_cast<size_t>(open)].kernels[0], step.alias_of);
      auto viewed = after.find(step.alias_of); // (an alias of such an alias stays after too)
      if (open >= 0 && !written && viewed == after.end()) {
        out.insert(out.begin() + open, std::move(step));
        ++open;
      } else {
        if (open >= 0) after[step.alias] = written ? step.alias_of : viewed->second;
        out.push_back(std::move(step));
      }
      continue;
    }
    FusedKernel& k = step.kernels[0];
    FusedKernel joining = k;  // with the open kernel's outputs in place of their aliases
    bool reads_after = false; // an alias of another dtype (a bitcast): not the value itself
    for (const Value*& v : joining.bound.values) {
      auto it = after.find(v);
      if (it == after.end()) continue;
      if (v->type.dtype == it->second->type.dtype)
        v = it->second;
      else
        reads_after = true;
    }
    bool depends = false, sibling = false, horizontal = false;
    if (open >= 0 && !reads_after) {
      const FusedKernel& g = out[static_cast<size_t>(open)].kernels[0];
      for (size_t b = 0; b < k.bound.values.size(); ++b)
        depends |= k.bound.kernel.buffers[b].role == BufferRole::kInput &&
                   writes(g, joining.bound.values[b]);
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
        stitch_into(g, std::move(joining));
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

} // namespace weft::fusion
