// RandomNormal, RandomUniform, their -Like forms, Bernoulli and Multinomial as calls of Weft's
// own, on the CPU. Each call holds a generator (std::mt19937_64) that every run draws from, as ONNX
// Runtime's kernels hold theirs: each run gives new values, and a node's seed makes the
// runs' values the same from session to session; without one, the generator starts from
// std::random_device. Normal values come from std::normal_distribution, uniform ones in
// [low, high), Bernoulli gives 1 where a uniform draw in [0, 1) is below the input's
// probability, and Multinomial draws each index with its row's softmax probability. Not ONNX
// Runtime's or numpy's generator: the values differ from theirs, the distributions do not
// (docs/onnx-versions.md).
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// Whether "node" is one of those.
bool draws_random_values(const Node& node);

// The call for one of those nodes; none for any other node.
std::optional<LibraryCall> random_call(const Node& node);

} // namespace weft::library
