// describe_strategy: what a kernel does, in a few words, for profiles and inspect.
//
// A kernel without combining statements is "elementwise". Otherwise each combining
// statement is named by its canonical form (coalesce.h), read off its loop nest: unit
// loops dropped, adjacent kept (K) or reduced (R) loops folded, then [R] is ALL, [K,R] ROW,
// [R,K] COLUMN and [K,R,K] MIDDLE; e.g. "reduce ROW max, ROW sum" for a softmax. ALL and
// COLUMN also say how the CPU splits them: "reduce ALL sum (split across threads)".
#pragma once

#include <string>

#include "weft/kernel/kernel.h"

namespace weft::kernel {

std::string describe_strategy(const Kernel& kernel);

} // namespace weft::kernel
