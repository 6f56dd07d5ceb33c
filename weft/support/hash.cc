#include "weft/support/hash.h"

#include <fmt/format.h>

namespace weft {

uint64_t hash_bytes(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hash_hex(std::string_view bytes) { return fmt::format("{:016x}", hash_bytes(bytes)); }

} // namespace weft
