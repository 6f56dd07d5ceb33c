// Shape and Size of a value whose dims are symbols (a dynamic-shape compile) run as calls
// that write the extents a run binds: LibraryKernel::run receives them, as it does for the
// oneDNN calls built per shape.
#pragma once

#include <optional>

#include "weft/library/dnnl.h"

namespace weft::library {

// A static extent, or one of a call's symbols (LibraryCall::symbols) read at each run.
struct CallExtent {
  int64_t value = 0;
  int symbol = -1; // index into the run's extents, or -1 for "value"
  int64_t at(const int64_t* extents) const { return symbol < 0 ? value : extents[symbol]; }
};
// "d" as a CallExtent; a symbolic "d" joins "symbols" unless it is there already.
CallExtent call_extent(const Dim& d, std::vector<Dim>& symbols);

// The call for a Shape or Size node whose input has symbolic dims; none for any other node.
std::optional<LibraryCall> shape_call(const Node& node);

} // namespace weft::library
