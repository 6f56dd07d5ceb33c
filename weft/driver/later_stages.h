// The stages after the first, in a model with data-dependent ops (docs/data-dependent-shapes.md):
// the specialized graph and the values the first stage hands over to its host ops. The rest
// of the model compiles over symbols for the data-dependent extents of the host ops that read
// handed-over values (NonZero, Unique, NonMaxSuppression, Compress), and each run computes
// them on the host and runs it (the dynamic-shape machinery: no compile per content). Ifs,
// Loops and shapes that handed-over values decide are folded: that rest is compiled for each
// of their values. Data-dependent ops further on stage that compile again, over symbols.
// Where it fails, the next stage is compiled for each handed-over content (the most recent
// few kept).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/driver/compile_model.h"
#include "weft/driver/stages.h"

namespace weft {

class Stages {
public:
  // "handed_over": the values the first stage computes for the rest; the first "needed" are
  // the host ops' inputs, whose values the next stage needs, the others values the rest
  // reads as data.
  Stages(Graph graph, std::vector<std::string> handed_over, size_t needed, stages::Frozen frozen,
         CompileSettings settings);

  // Runs "first" (the first stage) on "inputs", then the rest.
  Result<std::vector<Tensor>> run(const runtime::Executable& first, std::vector<Tensor> inputs,
                                  const runtime::RunOptions& options) const;

private:
  // A host op of the symbolic rest, with its constant inputs and where the others come from.
  struct HostOp {
    Node node;                    // its inputs and outputs are set per run
    std::vector<TensorRef> known; // per input: its value when constant
    std::vector<int> handed;      // per input: the handed-over value it is, or -1
    Result<std::vector<Tensor>> run(const std::vector<TensorRef>& handed_values) const;
  };
  struct SymbolicRest {
    std::vector<HostOp> host_ops;
    std::shared_ptr<const CompiledModel> model; // inputs: the model's, handed, host outputs
  };

  // The symbolic rest for the values "handed" gives the keyed handed-over values (none: one
  // rest for every run), built at the first run with them; null when it cannot be.
  // Building it runs the host ops on "handed": then their outputs go to "host_outputs".
  std::shared_ptr<const SymbolicRest>
  symbolic_rest(const std::vector<Tensor>& inputs, const std::vector<Tensor>& handed,
                std::optional<std::vector<Tensor>>* host_outputs) const;
  Result<SymbolicRest> build_symbolic_rest(const std::vector<Tensor>& inputs,
                                           const std::vector<Tensor>& handed,
                                           std::optional<std::vector<Tensor>>* host_outputs) const;
  // Does a per-content stage take handed-over value "i" as an input? The host ops' inputs,
  // and the other values small enough to fold (a box's size that a later Resize takes), are
  // its constants and key it; larger ones (feature maps) are inputs after the model's.
  bool is_input(size_t i, const Tensor& value) const;
  // The next stage for this content of its constants (moved from "handed"), and for the
  // types of its inputs ("inputs", then the handed-over values it takes as inputs).
  Result<std::shared_ptr<const CompiledModel>> next_stage(const std::vector<Tensor>& inputs,
                                                          std::vector<Tensor>& handed) const;

  static constexpr size_t kKept = 8;
  Graph graph_;
  std::vector<std::string> handed_over_;
  size_t needed_;
  stages::Frozen frozen_;
  CompileSettings settings_;
  // Per handed-over value: does the symbolic rest fold it? An If's condition, a Loop's trip
  // count and condition, a shape operand of a node whose dims wait for it: each of their
  // values has a symbolic rest of its own.
  std::vector<bool> keyed_;
  mutable std::mutex mutex_;             // later stages compile one at a time
  mutable bool symbolic_failed_ = false; // then every stage compiles per content
  mutable std::vector<std::pair<std::string, std::shared_ptr<const SymbolicRest>>> symbolic_;
  mutable std::vector<std::pair<std::string, std::shared_ptr<const CompiledModel>>> kept_;
};

} // namespace weft
