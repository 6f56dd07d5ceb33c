#include "weft/support/log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace weft {

namespace {

LogLevel level_from_environment() {
  const char* env = std::getenv("WEFT_LOG");
  std::string v = env ? env : "";
  if (v.empty() || v == "0" || v == "off") return LogLevel::kOff;
  if (v == "debug" || v == "2") return LogLevel::kDebug;
  return LogLevel::kInfo; // "info", "1", and anything else that asks for logs
}

} // namespace

LogLevel log_level() {
  static const LogLevel level = level_from_environment();
  return level;
}

void log_line(std::string_view message) {
  // One fprintf per line, so that lines from concurrent runs do not interleave.
  std::fprintf(stderr, "[weft] %.*s\n", static_cast<int>(message.size()), message.data());
}

} // namespace weft
