// Facts about this machine that caches key their records on.
#pragma once

#include <cstdint>
#include <string>

namespace weft {

// The CPU's model name, from /proc/cpuinfo ("unknown cpu" where it says none).
std::string cpu_model_name();

// The L2 cache of a core, in bytes; 0 where the system does not say.
int64_t l2_cache_bytes();

// Where Weft keeps its caches: $WEFT_CACHE_DIR, else ~/.cache/weft (/tmp/.cache/weft
// without $HOME).
std::string weft_cache_dir();

} // namespace weft
