// Class labels that are strings (a classifier trained on string labels, as scikit-learn's
// are): Weft has no string tensors, so a string graph output that is such a label becomes the
// int64 index of the label in its table, which the API maps back to the strings
// (Graph::label_outputs, TensorSpec::labels). Internal to onnx/; runs on the protobuf before
// the ai.onnx.ml expansions.
//
// A string output qualifies when it comes, through Identity, Reshape, Flatten, Squeeze and
// Unsqueeze only, from
//   - the label output of a TreeEnsembleClassifier, LinearClassifier or SVMClassifier with
//     classlabels_strings (which become classlabels_int64s 0, 1, ...), or
//   - an ArrayFeatureExtractor or Gather from a constant 1-D string tensor (skl2onnx's naive
//     Bayes and nearest-neighbour classifiers: their classes gathered at the ArgMax), whose
//     data becomes the positions 0, 1, ...,
// and no node outside that path reads its values; the labels are at least one, each UTF-8. Other
// string values stay as they are, and the import refuses them with its usual message.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace weft {

// Rewrites the qualifying outputs of "graph" (its top level) as above; returns each one's
// labels by output name.
std::map<std::string, std::vector<std::string>> index_string_labels(onnx::GraphProto& graph);

} // namespace weft
