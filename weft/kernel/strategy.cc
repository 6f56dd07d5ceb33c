#include "weft/kernel/strategy.h"

#include <vector>

#include <fmt/format.h>

namespace weft::kernel {

namespace {

std::string_view combine_name(Combine c) {
  switch (c) {
    case Combine::kSum: return "sum";
    case Combine::kProd: return "prod";
    case Combine::kMax:
    case Combine::kShiftMax: return "max";
    case Combine::kMin: return "min";
    case Combine::kNone: break;
  }
  return "none";
}

// "ROW sum", or the folded pattern ("KRKR sum") when it is not one canonical form.
std::string describe_statement(const Statement& s) {
  std::string pattern;
  for (size_t i = 0; i < s.domain.size(); ++i) {
    if (s.domain[i].is_static() && s.domain[i].value() == 1) continue;
    char role = s.is_reduced(static_cast<int>(i)) ? 'R' : 'K';
    if (pattern.empty() || pattern.back() != role) pattern += role;
  }
  std::string form = pattern == "R"     ? "ALL"
                     : pattern == "KR"  ? "ROW"
                     : pattern == "RK"  ? "COLUMN"
                     : pattern == "KRK" ? "MIDDLE"
                     : pattern.empty()  ? "SINGLE"
                                        : pattern;
  // What the CPU emitter runs beyond rows over threads (codegen/cpu_strategy.h).
  std::string_view split = form == "ALL"      ? " (split across threads)"
                           : form == "COLUMN" ? " (R or K split across threads)"
                                              : "";
  return fmt::format("{} {}{}", form, combine_name(s.combine), split);
}

} // namespace

std::string describe_strategy(const Kernel& kernel) {
  std::vector<std::string> parts;
  for (const Statement& s : kernel.statements) {
    if (s.combine == Combine::kNone) continue;
    std::string d = describe_statement(s);
    if (parts.empty() || parts.back() != d) parts.push_back(d);
  }
  if (parts.empty()) return "elementwise";
  return fmt::format("reduce {}", fmt::join(parts, ", "));
}

} // namespace weft::kernel
