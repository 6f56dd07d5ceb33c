// One-line lists of items grouped by a key, for diagnostics that name every offending node:
//   "Shrink (opset 13) at nodes 'a', 'b'; BitShift (opset 13) at node 'c'"
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace weft {

// "items" are (key, name) pairs; keys keep their first-seen order, and at most
// "max_names" names are shown per key ("and N more").
std::string format_grouped(const std::vector<std::pair<std::string, std::string>>& items,
                           size_t max_names = 4);

} // namespace weft
