// Fusion: fewer kernels and fewer bytes moved, by two rewrites of the lowered kernel list.
//
// 1. Producer inlining (input fusion, through registers). A kernel that computes each
//    element of its one output from its inputs alone (one statement: no combine, no guard,
//    an identity write over the output) is substituted into the expressions of the kernels
//    that read that output; its output is never written. Legal when the producer's output
//    is read only by kernels (not a graph output, not aliased) and every read has an affine
//    index. Profitable when it recomputes nothing: each reading statement's domain has as
//    many points as the output has elements (a reduction over it, an elementwise consumer),
//    or the producer is a few cheap ops (a broadcast scalar affine map).
// 2. Stitching (through memory, with the kernel's statement order as the barrier). A
//    memory-bound kernel that reads an output of the kernel just before it joins that
//    kernel (as do siblings sharing an input, and small independent kernels, which then
//    share a launch): its statements are appended, and an intermediate no one else reads becomes a
//    temporary of the joint kernel. Library-class kernels (MatMul, Gemm, Conv, pooling)
//    are not stitched. Where the statement budget forces cuts in a run of kernels, an
//    exact plan (segments.h: an ILP over bytes moved plus launches) places them.
//
// Every pair not fused gets a reason, for `weft inspect`. Each rewrite has a file of its own
// (rewrites.h: inline_producers.cc, inline_through_aliases.cc, stitch.cc, and
// accumulate_in_outputs.cc, which makes reductions accumulate in their outputs), and tests
// of its own (rewrites_test.cc, each with a case where it has nothing to do).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "weft/graph/graph.h"
#include "weft/kernel/lower_node.h"

namespace weft::fusion {

// One kernel of the launch list, with the nodes it computes (in order).
struct FusedKernel {
  kernel::BoundKernel bound;
  std::vector<const Node*> nodes;
};

// A step of the launch list: a kernel, an alias (a value that is another's bytes), or a
// node a library runs (oneDNN): opaque to fusion, which keeps that node's values in memory.
struct Step {
  std::vector<FusedKernel> kernels; // empty for an alias or a library node
  const Value* alias = nullptr;     // the aliasing value ...
  const Value* alias_of = nullptr;  // ... and the value it aliases
  const Node* library = nullptr;
};

struct Decision {
  std::string producer; // node names
  std::string consumer;
  bool fused = false;
  std::string how; // "inlined", "stitched", or why not
};

struct FusionResult {
  std::vector<Step> steps;
  std::vector<Decision> decisions;
};

// "pinned": values that must stay in memory (graph outputs). Aliased values and the values
// of library nodes are pinned here.
FusionResult fuse(std::vector<Step> steps, const std::set<const Value*>& pinned);

// "a, b" for the nodes of a kernel.
std::string node_names(const FusedKernel& k);

} // namespace weft::fusion
