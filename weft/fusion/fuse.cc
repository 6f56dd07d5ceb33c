#include "weft/fusion/fuse.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "weft/fusion/rewrites.h"

namespace weft::fusion {

int64_t points(const std::vector<Dim>& domain) {
  int64_t n = 1;
  for (const Dim& d : domain) {
    if (!d.is_static()) return -1;
    n *= d.value();
  }
  return n;
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
    for (FusedKernel& k : s.kernels) {
      merge_short_inner_dims(k.bound);
      accumulate_in_outputs(k.bound);
    }
  }
  result.steps = std::move(steps);
  return result;
}

} // namespace weft::fusion
