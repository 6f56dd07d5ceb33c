// Strings at the model's edges. Weft has no string tensors, but a classic ML model's strings
// are often only its class labels (a classifier trained on strings, as scikit-learn's are) and
// its categorical inputs: a string graph output that is such a label becomes the int64 index
// of the label in its table, and a string input that only encoders read takes indices into its
// vocabulary; the API maps between them and the strings (Graph::label_outputs and
// string_inputs, TensorSpec::labels). Internal to onnx/; runs on the protobuf before the
// ai.onnx.ml expansions.
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

// String inputs the same way (a categorical column of a scikit-learn pipeline): an input of
// strings whose readers, through Identity, Reshape, Flatten, Squeeze and Unsqueeze, are all
// OneHotEncoders with cats_strings and LabelEncoders with string keys (keys_strings or a
// keys_tensor of strings) and non-string values takes int64 indices into its vocabulary, the
// strings those readers name, in their order (Graph::string_inputs, TensorSpec::labels):
// their categories and keys become those indices. A string that is not in the vocabulary
// (index -1) matches none of them, as an unknown string matches none in ONNX Runtime.
// Returns each one's vocabulary by input name.
std::map<std::string, std::vector<std::string>> index_string_inputs(onnx::GraphProto& graph);

} // namespace weft
