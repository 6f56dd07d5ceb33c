#include "weft/support/machine.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace weft {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return "unknown cpu";
}

int64_t l2_cache_bytes() {
  static const int64_t bytes = std::max<long>(::sysconf(_SC_LEVEL2_CACHE_SIZE), 0);
  return bytes;
}

std::string weft_cache_dir() {
  const char* dir = std::getenv("WEFT_CACHE_DIR");
  const char* home = std::getenv("HOME");
  if (dir && *dir) return dir;
  return (std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "weft").string();
}

} // namespace weft
