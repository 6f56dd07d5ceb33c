// Library calls over symbolic dims (a dynamic-shape compile). A library primitive is built for
// fixed dims, so such a call is built per set of extents, at run time, from a copy of its
// region of the graph: the node, the Transposes before it and the chain of epilogue nodes
// after it that it may absorb. Compiling builds it once with every symbol at a stand-in
// extent, which fixes its form (the nodes it absorbs, the values it binds, and so the buffer
// plan around it); a run at new extents builds that form again, and the kernels of the last
// few sets of extents are kept (docs/dynamic-shapes.md).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "weft/library/dnnl.h"

namespace weft::library {

// A library's call for "node" over static shapes, absorbing the nodes "free" allows;
// "any_implementation" takes the largest form that builds, however slow (the form is fixed).
using StaticCallBuilder = std::function<std::optional<LibraryCall>(
    const Node& node, const SoleReader& sole_reader, const std::function<bool(const Node*)>& free,
    std::string* why_not, bool any_implementation)>;

bool has_symbolic_shapes(const Node& node);

// The call for "node", whose values have symbolic dims, as "build" makes it per extents.
std::optional<LibraryCall> dynamic_call(const Node& node, const SoleReader& sole_reader,
                                        const std::function<bool(const Node*)>& free,
                                        std::string* why_not, StaticCallBuilder build);

} // namespace weft::library
