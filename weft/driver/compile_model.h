// compile_model: from an ONNX file and concrete input types to an executable.
//
// The graph pipeline runs; then the graph is specialized to the input types (shapes known
// at the first call are specialized, as the CLI contract says) and the graph passes run
// again so that shape computations fold. Each node is lowered to kernels, each kernel is
// scheduled on isl and emitted; all kernels of the model form one translation unit, built
// once by the system compiler and cached by content.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "weft/codegen/cuda_strategy.h"
#include "weft/driver/pipeline.h"
#include "weft/fusion/fuse.h"
#include "weft/graph/graph.h"
#include "weft/runtime/cuda/launch.h"
#include "weft/runtime/executable.h"
#include "weft/support/device_kind.h"
#include "weft/support/status.h"

namespace weft {

// How far a compile goes.
enum class CompileGoal : uint8_t {
  kPlan,       // kernels, fusion and buffers: no source, no executable
  kSource,     // the generated source too: no compiler runs
  kPtx,        // CUDA: PTX for each of CompileSettings::cuda_archs, not run (no device needed)
  kExecutable, // an executable, loaded and ready to run
};

struct CompileSettings {
  // Write the graph after each pass, the kernels, the generated source and a build.sh that
  // rebuilds it here. Empty: $WEFT_DUMP_DIR/<model>-<hash of the input types>, if set.
  std::string dump_dir;
  // Only an executable (the default) can run; the other goals leave "executable" empty.
  CompileGoal goal = CompileGoal::kExecutable;
  // The CPU, or CUDA: CUDA C++ (codegen/emit_c.h) loaded on the device (NVRTC for its
  // architecture, or the emulator), or for CompileGoal::kPtx built for "cuda_archs".
  DeviceKind device = DeviceKind::kCpu;
  std::vector<std::string> cuda_archs; // e.g. {"sm_80", "sm_90"}
  // CUDA: strategies whose results are bitwise the same from run to run (no atomics).
  bool deterministic = false;
  // CUDA: cuBLAS and cuDNN may use TF32 tensor cores for f32 (about 1e-3 relative error);
  // off, they compute in fp32 as the CPU does (docs/cuda.md).
  bool allow_tf32 = false;
  // CPU: f32 Conv and MatMul multiply operands rounded to bf16 where the CPU does so natively
  // (graph/passes/products_in_bf16.h); off, fp32.
  bool allow_bf16 = false;
  bool fusion = true; // fusion/fuse.h; off for comparisons (--no-fusion)
  // Input dims that are symbolic in the model stay symbols: the executable runs on every
  // extent of them (docs/dynamic-shapes.md). An error where some part of the model needs a
  // static dim (the caller then compiles per shape): staged models, CUDA, library calls.
  bool dynamic_shapes = false;
  // MatMul, Gemm and Conv through oneDNN where it takes them (library/dnnl.h); off, they
  // are generated code. $WEFT_ONEDNN=0 turns it off too.
  bool library = true;
  // Read the tuning cache (driver/tuning_cache.h) for each kernel's CPU schedule or CUDA
  // options (the device's records: a CUDA compile without one takes none); off, or without a
  // record, the cost model's choice applies.
  bool tuning = true;
};

// How long one phase of compile_model took.
struct PhaseTime {
  std::string phase; // "graph passes", "specialize", "lower", "schedule", "emit", "build", "load"
  double ms = 0;
};

// A kernel of the plan, for inspection.
struct KernelSummary {
  std::string name;
  runtime::LaunchInfo info;
  std::string ir;                               // kernel::print_kernel
  bool library = false;                         // a library call (oneDNN), not a generated kernel
  std::shared_ptr<const kernel::Kernel> kernel; // the generated kernel; null for a library call
  codegen::CpuSchedule schedule;                // its CPU schedule...
  codegen::CudaOptions cuda;                    // ...or CUDA options
  bool tuned = false;                           // from the tuning cache, not the cost model
};

class Stages;

struct CompiledModel {
  Graph graph; // after specialization
  // The model's kernels; with data-dependent ops (docs/data-dependent-shapes.md), those of
  // its first stage, which computes what the host ops read.
  std::unique_ptr<runtime::Executable> executable;
  std::shared_ptr<const Stages> rest;    // the later stages, if any
  std::vector<std::string> host_ops;     // the data-dependent nodes after the first stage
  std::vector<std::string> output_names; // the model's outputs
  std::string source;                    // the generated translation unit
  // CUDA: each __global__ function of "source" with its block size, in launch order.
  std::vector<runtime::cuda::LaunchShape> cuda_launches;
  bool cache_hit = false;
  std::vector<PhaseTime> phases;
  std::string dump_dir;                                 // where the dump went, if anywhere
  std::vector<std::pair<std::string, std::string>> ptx; // device CUDA: (arch, PTX)
  std::vector<fusion::Decision> fusion_decisions;
  std::vector<KernelSummary> kernels; // in launch order

  bool staged() const { return rest != nullptr; }
  // Runs the model: the executable, then for a staged model the host ops and the later
  // stages, compiled on first sight of what the host ops produce.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs,
                                  const runtime::RunOptions& options = {}) const;
  // The same, taking the inputs: a staged model's later stages take them over, not copies.
  Result<std::vector<Tensor>> run(std::vector<Tensor>&& inputs,
                                  const runtime::RunOptions& options = {}) const;
};

// The declared inputs of a model: names and types, symbolic dims included.
Result<std::vector<runtime::TensorInfo>> model_inputs(const ModelSource& model);

// Compiles for "inputs": their types, and the values of small integer inputs that only
// determine shapes (freeze_shape_operands); later runs must pass the same values for those.
Result<CompiledModel> compile_model(const ModelSource& model, const std::vector<Tensor>& inputs,
                                    const CompileSettings& settings = {});

// The same from "pipeline", the graph run_graph_pipeline made of "model", which each compile
// clones (its constants shared) instead of importing the model and running the graph passes
// again. With a dump, the passes do run again where "model" can still be read (its bytes kept,
// for one in memory), so that the dump shows each of them.
Result<CompiledModel> compile_model(const ModelSource& model, const Graph& pipeline,
                                    const std::vector<Tensor>& inputs,
                                    const CompileSettings& settings = {});

} // namespace weft
