// Sequence values at import (docs/onnx-versions.md, "Sequences"). Weft's graph holds tensors
// only, so the importer resolves each sequence while it builds the graph: into the list of its
// elements' tensor values, where those are known then. SequenceEmpty, SequenceConstruct, and
// SequenceInsert and SequenceErase at constant positions build lists; SplitToSequence splits
// into a count its input's static dims (or its split's) give. The ops that read a list become
// tensor ops: SequenceAt at a constant position an Identity of the element, SequenceLength a
// Constant, ConcatFromSequence a Concat (of Unsqueezes, with new_axis). A sequence a Loop
// builds by appending to an empty one each iteration (a list filled in a loop, as TorchScript
// exports it) becomes a scan output of the Loop instead: its elements stacked along a new
// first axis, which SequenceAt (any position), SequenceLength and ConcatFromSequence read.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "weft/graph/shape.h"
#include "weft/graph/tensor.h"
#include "weft/support/status.h"

namespace weft {

// The sequence ops the importer resolves, from opset 11 (their first) on.
inline constexpr std::array<std::string_view, 8> kSequenceOps = {
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert",     "SequenceErase",
    "SequenceAt",    "SequenceLength",    "ConcatFromSequence", "SplitToSequence"};
inline constexpr int kSequenceOpset = 11;

// Whether "node" is one of the sequence ops the importer resolves.
bool is_sequence_op(const onnx::NodeProto& node);

// What the importer knows of a tensor value while it builds the graph: its type, and its
// contents where they are constant (an initializer's, a Constant node's).
struct KnownValues {
  std::function<std::optional<TensorType>(const std::string&)> type;
  std::function<std::optional<Tensor>(const std::string&)> constant;
};

class Sequences {
public:
  bool contains(const std::string& name) const {
    return lists_.contains(name) || stacked_.contains(name);
  }

  // "loop" with each sequence it carries as a scan output (the elements its body appends),
  // noted as stacked; an error, located at "where", for a sequence carried otherwise.
  Result<onnx::NodeProto> stack_loop_appends(const onnx::NodeProto& loop, const Location& where);

  // The tensor nodes, at "opset", that compute sequence op "node" (none for one that only
  // builds a list), the lists it writes noted; or, located at "where", why its elements are not
  // known at import.
  Result<std::vector<onnx::NodeProto>> expand(const onnx::NodeProto& node, int opset,
                                              const KnownValues& known, const Location& where);

private:
  std::unordered_map<std::string, std::vector<std::string>> lists_; // elements' value names
  std::unordered_map<std::string, std::string> stacked_; // a tensor of the elements along dim 0
};

} // namespace weft
