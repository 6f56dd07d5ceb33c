// What the channels_last pass (channels_last.h) recognizes and lays out anew: the
// permutations between [N, C, spatial...] and [N, spatial..., C], the ops a channels-last
// region passes through, and the constants and parameters it permutes. Shared by
// channels_last.cc and channels_last_pools.cc; internal to graph/passes.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "weft/graph/graph.h"

namespace weft::channels_last_ops {

// [N, C, spatial...] -> [N, spatial..., C] and back, for 1-D (rank 3), 2-D (rank 4) and 3-D
// (rank 5) convolutions' activations. In 1-D both are [0, 2, 1].
Ints to_last(size_t rank);

Ints to_first(size_t rank);

inline const Ints kToLast = to_last(4); // [N, C, H, W] -> [N, H, W, C]
inline const Ints kToFirst = to_first(4);

// The rank of "v" when it is one that channels-last regions cover (3 to 5), else 0.
size_t region_rank(const Value* v);

// Ops that compute each element from the elements at the same position (numpy broadcasting
// aside), so that they commute with a Transpose of all their operands.
bool is_pointwise(const Node& n);

bool has_rank(const Value* v, size_t rank);

// A Pad of [N, C, spatial...]'s spatial dims alone, in any mode, its pads an attribute
// (canonicalize made them one): channels-last, the same Pad with its pads permuted (the
// reflection padding before each convolution of style-transfer and image-to-image networks).
bool is_spatial_pad(const Node& n);

// A Slice of [N, C, spatial...] whose parameters canonicalize made attributes (axes
// normalized).
bool is_slice(const Node& n);

// GlobalAveragePool or GlobalMaxPool of [N, C, spatial...] (the global pooling of models from
// the TorchScript exporter and the model zoo): channels-last, ReduceMean or ReduceMax over the
// spatial axes, keeping them.
bool is_global_pool(const Node& n);

// A reduction over some of [N, C, spatial...]'s axes, keeping them: over channels-last's
// axes (to_first maps them) it gives the same elements, laid out channels-last.
// Without keepdims, one whose kept axes stay in order channels-last (N and C, say, after a
// spatial mean): its result is the same either way.
bool is_reduction(const Node& n);

// A Resize of [N, C, spatial...] by constant parameters given for all its axes (no axes
// attribute): each axis resizes on its own, so channels-last it is the same Resize with its
// roi, scales and sizes permuted (resize_parameter).
bool is_resize(const Node& n);

// A Resize parameter over [N, C, spatial...]'s axes (the roi: its starts, then its ends) over
// [N, spatial..., C]'s: "last" is to_last(rank).
Tensor resize_parameter(const Tensor& t, const Ints& last);

bool is_transpose(const Node* n, const Ints& perm);

// A Transpose to channels-first or to channels-last of rank 4 or 5, or with "one_d" 3: its
// rank, else 0. (Without 1-D convolutions in channels-last, a Transpose [0, 2, 1] of rank 3
// is a model's own, a transformer's say, and the pass leaves it be.)
size_t to_first_rank(const Node* n, bool one_d);

size_t to_last_rank(const Node* n, bool one_d);

// Does every dim of "v" have extent 1 (so that a Transpose does not move its elements)?
bool all_ones(const Value* v);

// Constant "c" (rank at most "rank", broadcast against [N, C, spatial...]) laid out for
// [N, spatial..., C].
Tensor to_channels_last(const Tensor& c, size_t rank);

// The static dims of "v", if it has them.
std::optional<Ints> static_dims(const Value* v);

// A channel shuffle of [N, C, H, W] (ShuffleNet's): a Reshape splitting the channels into
// factors [N, f1, ..., fk, H, W], a Transpose of the factors alone and a Reshape merging them
// back, each the one reader of the one before.
struct ChannelShuffle {
  Node *split, *permute, *merge;
  Ints factors, perm; // perm: of the factors, 0-based
};

std::optional<ChannelShuffle>
channel_shuffle(Node& split, const std::unordered_map<const Value*, std::vector<Node*>>& readers,
                const Graph& graph);

// The node after "n" (one that has readers) in the graph's order.
const Node* node_after(const Graph& graph, const Node& n);

bool is_pool(const Node* n);

} // namespace weft::channels_last_ops
