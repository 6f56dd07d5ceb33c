// The devices Weft compiles for. Strings ("cpu", "cuda") are for the boundaries only: the
// CLI's options and the public APIs parse them once.
#pragma once

#include <optional>
#include <string_view>

namespace weft {

enum class DeviceKind { kCpu, kCuda };

inline std::string_view device_name(DeviceKind d) { return d == DeviceKind::kCuda ? "cuda" : "cpu"; }

// "cpu" or "cuda"; nothing for another name.
inline std::optional<DeviceKind> parse_device_kind(std::string_view name) {
  if (name == "cpu") return DeviceKind::kCpu;
  if (name == "cuda") return DeviceKind::kCuda;
  return std::nullopt;
}

} // namespace weft
