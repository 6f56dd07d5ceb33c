// schedule_kernel: a kernel's loop nest, from isl.
//
// Builds the polyhedral model of the kernel — iteration domains with symbolic extents as
// isl parameters, access relations, and dependences from isl's flow analysis — then an isl
// schedule tree: statements in sequence, one band per iterator, each under a mark
// ("parallel" when no dependence is carried at that depth, "reduction" for a combining
// statement's reduced iterators), and turns it into loops with the isl AST generator. Bands
// follow each statement's domain order, but for the reductions that
// ScheduleOptions::outputs_innermost reorders.
//
// Requires: a verified kernel. Guarantees: the loop nest runs each statement instance once,
// in an order that respects every dependence; every "parallel" loop carries none.
#pragma once

#include <string>

#include "weft/kernel/kernel.h"
#include "weft/poly/loop_ast.h"
#include "weft/support/status.h"

namespace weft::poly {

struct ScheduledKernel {
  AstNode loops;
  std::string schedule_tree; // isl's text form, for `weft inspect` and debugging
  std::string dependences;   // isl's text form of flow, output and anti dependences
};

struct ScheduleOptions {
  // A reduction of a few terms per output (a depthwise convolution's taps) runs its
  // innermost output loop inside its reduced loops, where that keeps every dependence and
  // the output moves with stride 1 or 2 along the last dim of every access it appears in (the CPU,
  // whose vector loop is the innermost; schedule_kernel.cc).
  bool outputs_innermost = false;
  // Statements share outer loops of fewer points than this, or of symbolic extents, only when
  // one of them reduces, and never loops of a single point (0: no limit). CUDA gives a
  // thread to each point of a part's outer loops and runs the statements' own nests in it: a
  // Split and the Transposes of its pieces sharing a batch loop of 4 ran on 4 threads (8.9 ms
  // on an H200), and a batch of 1 left a Concat, a BatchNorm and a pooling on one thread (a
  // symbolic batch, at 1 in a run, the same).
  int64_t min_shared_points = 0;
  // Statements do not share their innermost loop when one indexes a read with a value loaded
  // from what an earlier one wrote (the CPU): in one loop each iteration's loads wait on the
  // ones before them, while in loops of their own a loop's loads all go out at once. A tree
  // walk's steps, one loop per level, took 1.9 instead of 5.4 ms for 1000 rows of 100 trees.
  bool chained_gathers_apart = false;
};

Result<ScheduledKernel> schedule_kernel(const kernel::Kernel& kernel,
                                        const ScheduleOptions& options = {});

} // namespace weft::poly
