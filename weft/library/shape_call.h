// Shape and Size of a value whose dims are symbols (a dynamic-shape compile) run as calls
// that write the extents a run binds: LibraryKernel::run receives them, as it does for the
// oneDNN calls built per shape.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// The call for a Shape or Size node whose input has symbolic dims; none for any other node.
std::optional<LibraryCall> shape_call(const Node& node);

} // namespace weft::library
