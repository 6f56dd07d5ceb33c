// What NVCC may assume of a __restrict__ kernel parameter: that no other thread writes its
// buffer during the launch. A kernel whose threads pass values through a buffer (a group's
// row statistics, the last block's partials) breaks that promise when the buffer is marked
// __restrict__, and the optimizer then moves a lane's loads above the barrier that orders
// them after another lane's stores (the softmax family's wrong results on an H100). The host
// compiler that the emulator uses does not make that move, so the emulator checks the
// pattern in the source instead of reproducing it.
#pragma once

#include <string>

#include "weft/support/status.h"

namespace weft::runtime::cuda {

// An error naming the function and parameter when a __global__ function of "source" (the
// CUDA dialect: "void __launch_bounds__(N) NAME(PARAMS) {" up to a "}" line) synchronizes
// its threads (__syncthreads, __syncwarp, __threadfence) and both stores to and loads from
// a parameter "bI" marked __restrict__. Stores are "bI[...] =" (or a compound assignment)
// and "&bI[...]" (an atomic, which reads too).
Status check_restrict(const std::string& source);

} // namespace weft::runtime::cuda
