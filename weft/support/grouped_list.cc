#include "weft/support/grouped_list.h"

#include <map>

#include <fmt/format.h>

namespace weft {

std::string format_grouped(const std::vector<std::pair<std::string, std::string>>& items,
                           size_t max_names) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> names;
  for (const auto& [key, name] : items) {
    if (!names.contains(key)) order.push_back(key);
    names[key].push_back("'" + name + "'");
  }
  std::vector<std::string> parts;
  for (const std::string& key : order) {
    const auto& n = names[key];
    std::vector<std::string> shown(
        n.begin(), n.begin() + static_cast<std::ptrdiff_t>(std::min(n.size(), max_names)));
    parts.push_back(
        fmt::format("{} at node{} {}{}", key, n.size() > 1 ? "s" : "", fmt::join(shown, ", "),
                    n.size() > max_names ? fmt::format(" and {} more", n.size() - max_names) : ""));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

} // namespace weft
