// tune_model: `weft tune`. Each generated kernel of a compiled model is a task; its
// candidates are those of a fixed grid that generate distinct code, the cost model's choice
// first: CPU schedules (codegen::CpuSchedule) on the CPU, CUDA options (codegen::CudaOptions)
// on a CUDA device. All candidates are built at once (one library per task on the CPU, one
// module on the device); the model then runs once on the caller's inputs, and before each
// task's launch its buffers are saved, every candidate runs on them (its results must match
// the cost model's choice's within float tolerance, else it is dropped), and each is timed
// from the saved state (on the device: between events on its stream). The fastest is stored
// in the tuning cache (tuning_cache.h), which later compiles read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weft/driver/compile_model.h"
#include "weft/support/status.h"

namespace weft {

struct TuneResult {
  std::string kernel; // name, node and op, for the report
  std::string node, op_type, strategy;
  size_t bytes = 0;
  int candidates = 0; // distinct ones; 1: nothing to tune (the schedule changes no code)
  int rejected = 0;   // candidates whose results differed
  double default_ms = 0, best_ms = 0;
  codegen::CpuSchedule best;      // the winner on the CPU...
  codegen::CudaOptions best_cuda; // ...or on a CUDA device
  std::string choice;             // the winner, as its record writes it
  // A library call timed with each of its algorithms (a oneDNN convolution: "direct" or
  // "winograd"), or as the call and as generated code ("library" or "generated"): the faster;
  // empty for a generated kernel. default_ms is then the time of what compiles take without
  // a record.
  std::string algorithm;
};

struct TuneProgress {
  int task = 0, tasks = 0; // 1-based task, of all tasks
  int measured = 0, candidates = 0;
  const TuneResult* result = nullptr; // best so far
};

struct TuneOptions {
  double seconds_per_candidate = 0.2; // timing budget of one candidate (at least 3 runs)
  int max_runs = 50;
  std::function<void(const TuneProgress&)> progress; // after each candidate
};

// Tunes the kernels of "model" (compiled for "inputs", on the CPU or a CUDA device, not
// staged, without reading the tuning cache) and stores the winners in the tuning cache.
// Returns one result per generated kernel, in launch order, then on the CPU one per oneDNN
// convolution geometry with two algorithms (library::time_conv_algorithms), and one per
// memory-bound or far-off convolution call timed against generated code, whose faster are
// recorded too.
Result<std::vector<TuneResult>> tune_model(const CompiledModel& model,
                                           const std::vector<Tensor>& inputs,
                                           const TuneOptions& options = {});

// The grid of schedules a task's candidates come from; the cost model's is first.
std::vector<codegen::CpuSchedule> candidate_schedules();
// The CUDA options a task's candidates come from: "base" (what compiles take without a
// record) first, then each knob varied alone (docs/cuda-strategies.md, "Tuning").
std::vector<codegen::CudaOptions> candidate_cuda_options(const codegen::CudaOptions& base);
// After a CUDA task's candidates ran: "candidates"[0] (the base) with the value each knob took
// in its fastest candidate among those that changed that knob alone and beat the base by 3%
// or more, when two or more knobs did (then it is built and measured too: knobs measured one
// at a time, combined); nothing otherwise. "medians": per candidate, negative when dropped.
std::optional<codegen::CudaOptions>
combine_winners(const std::vector<codegen::CudaOptions>& candidates,
                const std::vector<double>& medians);

} // namespace weft
