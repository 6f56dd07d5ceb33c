#include "weft/runtime/cuda/device.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace weft::runtime::cuda {

int64_t Device::persistent_grid(int64_t block, int64_t per_sm) const {
  if (per_sm < 1) per_sm = std::max<int64_t>(1, 2048 / std::max<int64_t>(block, 1));
  return std::clamp<int64_t>(per_sm * sm_count(), 1, kMaxPersistentGrid);
}

Result<std::shared_ptr<Device>> open_device() {
  const char* emulate = std::getenv("WEFT_CUDA_EMULATOR");
  if (emulate && std::string(emulate) == "1") return open_emulator_device();
  return open_driver_device();
}

} // namespace weft::runtime::cuda
