#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "weft/driver/stages.h"
#include "weft/graph/op_table.h"
#include "weft/graph/passes/expand_moe.h"
#include "weft/graph/passes/expand_recurrent.h"
#include "weft/graph/passes/quantized_in_float.h"
#include "weft/graph/passes/quantized_products.h"
#include "weft/kernel/lower_node.h"
#include "weft/library/attention_call.h"
#include "weft/library/col2im_call.h"
#include "weft/library/cuda_library.h"
#include "weft/library/cuda_top_k.h"
#include "weft/library/dnnl.h"
#include "weft/library/moe_call.h"
#include "weft/library/random_call.h"
#include "weft/library/recurrent_call.h"
#include "weft/library/resize_taps_call.h"
#include "weft/library/roi_align_call.h"
#include "weft/library/shape_call.h"
#include "weft/library/top_k_call.h"
#include "weft/library/weight_only_matmul.h"
#include "weft/support/log.h"

namespace weft::stages {

namespace {

// WEFT_ONEDNN=0: no library calls (docs/knobs.md).
bool library_off() {
  const char* onednn = std::getenv("WEFT_ONEDNN");
  return onednn && std::string(onednn) == "0";
}

} // namespace

bool onednn_calls(const CompileSettings& settings) {
  return settings.device == DeviceKind::kCpu && settings.library && !library_off();
}

bool cuda_library_calls(const CompileSettings& settings) {
  return settings.device == DeviceKind::kCuda && settings.library && !library_off();
}

Result<bool> quantized_forms(Graph& graph, const CompileSettings& settings) {
  bool onednn = onednn_calls(settings);
  WEFT_ASSIGN_OR_RETURN(bool int8, quantized_products(graph, [&](const Node& n) {
                          return onednn &&
                                 !(n.op_type == Op::kQLinearConv ? library::int8_conv_unfit(n)
                                                                 : library::int8_matmul_unfit(n));
                        }));
  WEFT_ASSIGN_OR_RETURN(bool floated, quantized_in_float(graph, [&](const Node& n) {
                          return onednn && !library::int8_matmul_unfit(n);
                        }));
  return int8 || floated;
}

Result<bool> moe_forms(Graph& graph, const CompileSettings& settings) {
  bool cpu_call = onednn_calls(settings) && settings.fusion;
  std::unordered_map<const Value*, int> readers;
  for (const auto& node : graph.nodes()) {
    for (const Value* v : node->inputs)
      ++readers[v];
  }
  library::SoleReader sole_reader = [&](const Value* v) -> const Node* {
    if (readers[v] != 1 || graph.is_graph_output(v)) return nullptr;
    for (const auto& node : graph.nodes()) {
      if (std::find(node->inputs.begin(), node->inputs.end(), v) != node->inputs.end())
        return node.get();
    }
    return nullptr;
  };
  return expand_moe(graph, [&](const Node& moe) {
    return cpu_call && library::moe_call_takes(moe, sole_reader);
  });
}

Result<bool> recurrent_forms(Graph& graph, const CompileSettings& settings) {
  bool cpu_call = onednn_calls(settings);
  return unroll_recurrent(graph,
                          [&](const Node& n) { return cpu_call && library::runs_recurrent(n); });
}

namespace {

// Whether "conv" writes one pixel in all (batch 1, each spatial dim 1: a squeeze-and-excitation
// block's two convolutions, a head after global pooling) with constant weights of fewer than
// 2^18 elements: a small matrix-vector product, which generated code runs in 1-10 us where a
// oneDNN call took 10-30 us (EfficientNet-B0's, AMD EPYC, 2026-11-30).
bool one_pixel(const Node& conv) {
  const Value *w = conv.inputs[1], *y = conv.outputs[0];
  if (!w->is_constant() || !y->type.has_static_shape()) return false;
  const std::vector<int64_t>& d = w->constant->dims();
  return d.size() >= 3 && w->constant->num_elements() < (int64_t{1} << 18) &&
         shape_num_elements(*y->type.shape) == d[0];
}

// Convolutions generated code runs, not a library call (docs/library.md): as `weft tune`
// recorded for their shape, else those of one pixel, and on the CPU the grouped ones of few
// channels a group that channels_last left plain (library::few_channels_a_group); and under
// WEFT_DEPTHWISE=generated the depthwise ones that the channels_last pass gave their weights
// laid out last (kernel::lower_conv_channels_last). On CUDA, under
// WEFT_CUDA_GROUPED_CONV=generated, every grouped one (for comparisons on a GPU,
// docs/knobs.md).
bool generated_conv(const Node& node, bool cuda) {
  static const bool depthwise = [] {
    const char* env = std::getenv("WEFT_DEPTHWISE");
    return env && std::string(env) == "generated";
  }();
  static const bool cuda_grouped = [] {
    const char* env = std::getenv("WEFT_CUDA_GROUPED_CONV");
    return env && std::string(env) == "generated";
  }();
  if (cuda && cuda_grouped && node.op_type == Op::kConv && node.attrs_as<ConvAttrs>().group > 1 &&
      kernel::can_lower(node))
    return true;
  bool channels_last = node.op_type == Op::kConvChannelsLast;
  if (!channels_last && node.op_type != Op::kConv) return false;
  std::optional<bool> tuned = library::tuned_generated(node);
  bool by_shape =
      one_pixel(node) || (!cuda && !channels_last && library::few_channels_a_group(node));
  bool chosen = (depthwise && channels_last && node.input(3)) || (tuned ? *tuned : by_shape);
  return chosen && kernel::can_lower(node);
}

// Channels-last poolings that generated code runs, not oneDNN (docs/library.md): those whose
// windows the CPU schedule's few-terms rule vectorizes over channels (at most 64 taps, at
// least 16 channels); an average only over unpadded windows that each count all their taps (a
// constant count, kernel::pool_counts_every_tap: padded 3x3 averages of stride 1, Inception-v3's,
// took 0.19-0.29 ms generated against oneDNN's 0.13-0.19, where its max pooling is slow). oneDNN
// 2.6's AVX2 max pooling moved 4-9 GB/s where generated code moves 20-40 (SqueezeNet's,
// GoogLeNet's, Inception-v3's), and the generated pooling fuses with its neighbours.
// WEFT_POOLING=onednn keeps them calls.
bool generated_pool(const Node& node) {
  static const bool onednn = [] {
    const char* env = std::getenv("WEFT_POOLING");
    return env && std::string(env) == "onednn";
  }();
  if (onednn ||
      (node.op_type != Op::kMaxPoolChannelsLast && node.op_type != Op::kAveragePoolChannelsLast) ||
      !node.inputs[0]->type.has_static_shape() || !node.outputs[0]->type.has_static_shape())
    return false;
  const auto& a = node.attrs_as<PoolAttrs>();
  int64_t taps = 1;
  for (int64_t k : a.kernel_shape)
    taps *= k;
  bool padded = a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower ||
                std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p != 0; });
  bool average = node.op_type == Op::kAveragePoolChannelsLast;
  return taps <= 64 && node.inputs[0]->type.shape->back().value() >= 16 &&
         (!average || (!padded && kernel::pool_counts_every_tap(node))) && kernel::can_lower(node);
}

} // namespace

LibrarySelection select_library_calls(const Graph& graph, const CompileSettings& settings,
                                      const std::shared_ptr<runtime::cuda::Device>& device) {
  bool cuda = settings.device == DeviceKind::kCuda;
  bool use_library =
      (!cuda || device || settings.dynamic_shapes) && settings.library && !library_off();
  std::unordered_map<const Value*, std::vector<const Node*>> readers;
  for (const auto& node : graph.nodes()) {
    for (const Value* v : node->inputs)
      readers[v].push_back(node.get());
  }
  std::set<const Value*> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  library::SoleReader sole_reader = [&](const Value* v) -> const Node* {
    auto it = readers.find(v);
    if (!settings.fusion || it == readers.end() || it->second.size() != 1 ||
        graph_outputs.contains(v))
      return nullptr;
    return it->second[0];
  };
  auto readers_of = [&](const Value* v) -> std::vector<const Node*> {
    auto it = readers.find(v);
    if (!settings.fusion || it == readers.end() || graph_outputs.contains(v)) return {};
    return it->second;
  };
  LibrarySelection s;
  // The library calls may absorb nodes before and after them.
  for (const auto& node : graph.nodes()) {
    // Calls of Weft's own, not a vendor's: taken whatever the library settings.
    std::optional<library::LibraryCall> call;
    if (!cuda) call = library::shape_call(*node);
    if (!cuda && !call) call = library::random_call(*node);
    if (!cuda && !call) call = library::top_k_call(*node);
    if (cuda && device && !call) call = library::cuda_top_k_call(*node, device);
    if (!cuda && !call) call = library::roi_align_call(*node);
    if (!cuda && !call) call = library::col2im_call(*node);
    if (!cuda && !call) call = library::recurrent_call(*node);
    if (!cuda && !call && !(use_library && library::onednn_resamples(*node)))
      call = library::resize_taps_call(*node);
    if (call) {
      s.calls[node.get()] = std::move(*call);
      s.run_at[node.get()] = node.get();
      continue;
    }
    if (!use_library || s.absorbed.contains(node.get()) || generated_conv(*node, cuda) ||
        generated_pool(*node))
      continue;
    std::string why_not;
    auto free = [&](const Node* n) { return !s.absorbed.contains(n); };
    if (!cuda) call = library::attention_call(*node, sole_reader, readers_of, free);
    if (!cuda && !call) call = library::weight_only_matmul_call(*node, sole_reader);
    if (!cuda && !call) call = library::moe_call(*node, sole_reader);
    if (!call)
      call = cuda ? library::cuda_library_call(*node, device, settings.allow_tf32, &why_not)
                  : library::dnnl_call(*node, sole_reader, free, &why_not);
    if (!call) {
      if (!why_not.empty())
        log_debug("node '{}' ({}): generated code, not a library call: {}", node->name,
                  node->op_type, why_not);
      continue;
    }
    for (const Node* n : call->nodes) {
      if (n == node.get()) continue;
      s.absorbed.insert(n);
      s.decisions.push_back({n->name, node->name, true, "absorbed by the oneDNN call"});
    }
    // The call runs where its last node was: an epilogue's other operands (a residual from
    // a later branch, say) exist only from there on.
    s.run_at[call->nodes.back()] = node.get();
    s.calls[node.get()] = std::move(*call);
  }
  if (use_library && !cuda) {
    static const std::vector<const Node*> kNone;
    library::keep_blocked_layouts(
        s.calls,
        [&](const Value* v) -> const std::vector<const Node*>& {
          auto it = readers.find(v);
          return it == readers.end() ? kNone : it->second;
        },
        graph_outputs);
  }
  return s;
}

} // namespace weft::stages
