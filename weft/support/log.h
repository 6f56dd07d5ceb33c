// WEFT_LOG: diagnostics on stderr for people debugging a deployment.
//
//   WEFT_LOG=info    what Weft decides: cache hits and misses, compile phases and times
//   WEFT_LOG=debug   also each kernel as it is built
//
// Unset, empty, "0" or "off" print nothing. Lines start with "[weft] ". The level is read
// from the environment once, at the first call.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace weft {

enum class LogLevel : int { kOff = 0, kInfo = 1, kDebug = 2 };

LogLevel log_level();
void log_line(std::string_view message);

template <typename... Args> void log_info(fmt::format_string<Args...> format, Args&&... args) {
  if (log_level() >= LogLevel::kInfo) log_line(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args> void log_debug(fmt::format_string<Args...> format, Args&&... args) {
  if (log_level() >= LogLevel::kDebug) log_line(fmt::format(format, std::forward<Args>(args)...));
}

} // namespace weft
