#include "weft/support/machine.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace weft {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return "unknown cpu";
}

std::string weft_cache_dir() {
  const char* dir = std::getenv("WEFT_CACHE_DIR");
  const char* home = std::getenv("HOME");
  if (dir && *dir) return dir;
  return (std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "weft").string();
}

} // namespace weft
