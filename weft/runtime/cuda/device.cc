#include "weft/runtime/cuda/device.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace weft::runtime::cuda {

std::vector<LaunchShape> parse_launch_lines(const std::string& source) {
  std::vector<LaunchShape> shapes;
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("// launch ")) continue;
    std::istringstream words(line.substr(10));
    LaunchShape s;
    std::string block, grid;
    words >> s.function >> block >> grid;
    if (!block.starts_with("block=") || !grid.starts_with("grid=")) continue;
    s.block = std::atoll(block.c_str() + 6);
    s.one_block = grid == "grid=1";
    shapes.push_back(s);
  }
  return shapes;
}

int64_t Device::persistent_grid(int64_t block) const {
  int64_t per_sm = std::max<int64_t>(1, 2048 / std::max<int64_t>(block, 1));
  return std::clamp<int64_t>(per_sm * sm_count(), 1, kMaxPersistentGrid);
}

Result<std::shared_ptr<Device>> open_device() {
  const char* emulate = std::getenv("WEFT_CUDA_EMULATOR");
  if (emulate && std::string(emulate) == "1") return open_emulator_device();
  return open_driver_device();
}

} // namespace weft::runtime::cuda
