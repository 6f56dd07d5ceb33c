// Content hashing for build caches: 64-bit FNV-1a, printed as 16 hex digits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace weft {

uint64_t hash_bytes(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);
std::string hash_hex(std::string_view bytes);

} // namespace weft
