// The compile pipeline's stages after the graph passes (pipeline.h), in the order that
// compile_model.cc runs them. Each is implemented in the file its heading names.
//
//   graph passes -> specialize -> quantized forms -> layout -> library selection -> lowering
//     -> fusion -> buffer planning -> scheduling -> generation -> build -> executable
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weft/codegen/cpu_strategy.h"
#include "weft/driver/compile_model.h"
#include "weft/fusion/fuse.h"
#include "weft/graph/graph.h"
#include "weft/kernel/kernel.h"
#include "weft/library/dnnl.h"
#include "weft/runtime/cuda/launch.h"
#include "weft/runtime/executable.h"
#include "weft/support/status.h"

namespace weft::runtime::cuda {
class Device;
}

namespace weft::stages {

// Input positions whose values the compile bound (freeze_shape_operands), with the values.
using Frozen = std::vector<std::pair<int, Tensor>>;

class Dumper;
class PhaseTimer;

// ---- compile_model.cc: the stages below, in order, for a specialized graph (the stage
// list; later_stages.cc compiles the stages after a model's host ops with it too).
Status compile_graph(Graph graph, const Frozen& frozen, const CompileSettings& settings,
                     Dumper& dump, PhaseTimer& timer, CompiledModel& out);
std::vector<std::string> output_names_of(const Graph& graph);

// ---- specialize.cc: the graph for the inputs at hand.

// Binds input types (and shape-operand values; their positions go to "frozen"), then folds
// what they determine. With "dynamic_shapes", the inputs' symbolic dims stay symbols.
Status specialize(Graph& graph, const std::vector<Tensor>& inputs, bool dynamic_shapes,
                  std::vector<int>* frozen);
// Runs the data-dependent nodes whose inputs are all constant on the host, replacing their
// outputs with constants, then refolds; repeats while any ran.
Status run_host_ops(Graph& graph);
// The values the host ops of "graph" need from a first stage: the non-constant inputs of
// the data-dependent nodes that no other data-dependent node feeds. Notes those nodes. With
// "shape_values" (compiles for static shapes), a node whose output dims wait for a shape
// operand computed from data is such a node too, needing that operand.
std::vector<std::string> host_op_inputs(const Graph& graph, bool shape_values,
                                        std::vector<std::string>* host_ops);
// Does "n" wait for the value of a shape operand computed from data (Mask R-CNN resizes each
// mask to its box's size, then slices and pads it into the image)? Its output dims are
// unknown until then (not static: in a compile for static shapes, a dim no shape function
// could tell); once the operands are constants, folding gives them.
bool waits_for_shape_values(const Node& n);
// One message listing every node that cannot run yet, grouped by op.
Status check_lowerable(const Graph& graph);

// ---- select_library.cc: which nodes run as library calls (oneDNN, cuBLAS/cuDNN).

// Will the CPU's library calls (oneDNN) run this compile's convolutions? (The layout stage,
// graph/passes/channels_last, runs only then.)
bool onednn_calls(const CompileSettings& settings);
// Will this compile for CUDA take cuBLAS and cuDNN calls where it has a device? (f16 and bf16
// Conv, MatMul and Gemm then become f32 ones between Casts: graph/passes/narrow_in_f32.)
bool cuda_library_calls(const CompileSettings& settings);

// Quantized models' forms for the device: the convolutions and products that oneDNN runs
// in int8 (graph/passes/quantized_products.h, library::int8_conv_unfit and
// int8_matmul_unfit), the rest of the quantized arithmetic in f32
// (graph/passes/quantized_in_float.h); whether the graph changed.
Result<bool> quantized_forms(Graph& graph, const CompileSettings& settings);

// weft.MoE in the form for the device: kept for the CPU's call where it takes the node
// (library/moe_call.h), expanded into primitives elsewhere (graph/passes/expand_moe.h);
// whether the graph changed.
Result<bool> moe_forms(Graph& graph, const CompileSettings& settings);

// RNN, GRU and LSTM in the form for the device: kept for the CPU's recurrent call where it
// takes the node (library/recurrent_call.h), unrolled elsewhere
// (graph/passes/expand_recurrent.h); whether the graph changed.
Result<bool> recurrent_forms(Graph& graph, const CompileSettings& settings);

struct LibrarySelection {
  std::map<const Node*, library::LibraryCall> calls; // by the node that heads each call
  std::set<const Node*> absorbed;                    // nodes the calls took besides their own
  std::map<const Node*, const Node*> run_at;         // last node of a call -> its node
  std::vector<fusion::Decision> decisions;           // the absorbed nodes, for the report
};

// "device": the CUDA device the compile builds for, if any (CUDA calls need one, except over
// symbolic dims, where only a library call can run a GEMM).
LibrarySelection select_library_calls(const Graph& graph, const CompileSettings& settings,
                                      const std::shared_ptr<runtime::cuda::Device>& device);

// ---- lower_graph.cc: nodes into kernels, then fusion.

// Each node not taken by a library call, lowered into kernels (kernel/lower_node.h), in
// graph order, with the library calls in the places they run.
Result<std::vector<fusion::Step>> lower_graph(const Graph& graph, const LibrarySelection& library);
// fusion::fuse over "steps", keeping what the graph outputs and the library calls read.
std::vector<fusion::Step> fuse_steps(const Graph& graph, std::vector<fusion::Step> steps,
                                     const LibrarySelection& library,
                                     std::vector<fusion::Decision>* decisions);

// ---- plan.cc: buffers and launches.

struct Plan {
  std::vector<runtime::Slot> slots;
  std::vector<runtime::Launch> launches; // functions are looked up once the library loads
  std::vector<int> output_slots;
  size_t arena = 0;
  std::vector<kernel::Kernel> kernels; // the generated ones
  std::vector<size_t> kernel_launch;   // the launch of each
  std::vector<Location> sites;         // the node of each
};

// The slots of every value and temporary, the arena placed over their lifetimes, and one
// launch per kernel and library call. Checks that the inputs' dims determine every
// symbolic size.
Result<Plan> plan_buffers(const Graph& graph, std::vector<fusion::Step> steps,
                          LibrarySelection& library, bool cuda);

// ---- schedule.cc: each generated kernel's CPU schedule or CUDA options.

// How a kernel's code is generated: its CPU schedule, or its CUDA options.
struct KernelChoice {
  codegen::CpuSchedule schedule;
  codegen::CudaOptions cuda;
};

// The cost model's choice for each of plan.kernels (CUDA: with the environment's knobs), or
// the tuning cache's record when "settings.tuning" and there is one: the CPU's, or on CUDA
// the record of "cuda_device" (Device::describe(); empty: no device, no records). Fills
// "summaries" (in launch order) and the printed kernels ("kernels_text", the dump's
// kernels.txt).
std::vector<KernelChoice> schedule_kernels(const Plan& plan, const CompileSettings& settings,
                                           const std::string& cuda_device,
                                           std::vector<KernelSummary>* summaries,
                                           std::string* kernels_text);

// ---- generate_source.cc: the translation unit.

struct GeneratedSource {
  std::string source;                 // the prelude, then each kernel's function
  std::string prelude;                // the dialect's helpers
  std::vector<std::string> functions; // each kernel's function, as in the source
  std::vector<std::vector<runtime::cuda::LaunchShape>> launches; // CUDA: each kernel's
  // The kernel whose function runs each: itself, or an earlier one it is the same as.
  std::vector<size_t> same_as;
  int cache_hits = 0;      // kernels whose function (or that of the kernel they are the same
                           // as) was read from the function cache
  int same_as_another = 0; // kernels that run another's function (the kernel is the same)
};

// Each kernel's function, from the function cache or scheduled on isl and emitted (on all
// cores), after the dialect's prelude.
Result<GeneratedSource> generate_source(const Plan& plan, const std::vector<KernelChoice>& choices,
                                        const CompileSettings& settings);

// ---- build.cc: the executable.

// NVRTC builds of "source" for each of "archs" (a CUDA compile without a device).
Status build_ptx(const std::string& model, const std::string& source,
                 const std::vector<std::string>& archs,
                 std::vector<std::pair<std::string, std::string>>* ptx);
class PhaseTimer;
// The module loaded on "device", and the executable that launches it there; "timer" ends
// the phases "build" and "load".
Result<std::unique_ptr<runtime::Executable>>
build_cuda(const Graph& graph, Plan plan, const GeneratedSource& generated,
           const std::shared_ptr<runtime::cuda::Device>& device, const Frozen& frozen,
           PhaseTimer& timer);
// The source built by $CXX (or found in the cache; a damaged entry is rebuilt once) and
// loaded, and the executable over it. "cache_hit": the build came from the cache.
Result<std::unique_ptr<runtime::Executable>> build_cpu(const Graph& graph, Plan plan,
                                                       const GeneratedSource& generated,
                                                       const Frozen& frozen, PhaseTimer& timer,
                                                       bool* cache_hit);

// ---- dump.cc: what a compile reports.

// The dump directory: explicit, or one per model and input types under $WEFT_DUMP_DIR.
std::string dump_dir_for(const ModelSource& model, const std::vector<Tensor>& inputs,
                         const CompileSettings& settings);

// The dump's build.sh: rebuilds kernels.so from kernels.cc as $CXX builds it now.
std::string rebuild_script();

// Writes files into a directory, if there is one; remembers the first failure.
class Dumper {
public:
  explicit Dumper(std::string dir);
  void write(const std::string& name, const std::string& text);
  const std::string& dir() const { return dir_; }
  const Status& status() const { return status_; }

private:
  std::string dir_;
  Status status_;
};

// Appends one PhaseTime per end(), timing from the previous end().
class PhaseTimer {
public:
  explicit PhaseTimer(std::vector<PhaseTime>* phases);
  void end(std::string phase);

private:
  std::vector<PhaseTime>* phases_;
  double start_ms_;
};

void log_phases(const std::string& model, const std::vector<PhaseTime>& phases);

} // namespace weft::stages
