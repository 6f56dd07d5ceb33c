// The CPU kernel text that EmitC's tests read (emit_c_test.cc, emit_c_rows_test.cc).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "weft/codegen/emit_c.h"
#include "weft/poly/schedule_kernel.h"

namespace weft::codegen {

// The kernel function, without the dialect's prelude. The goldens pin the schedule (32
// lanes), so that a new cost-model default does not rewrite them.
inline std::string function_of(const kernel::Kernel& k) {
  Result<poly::ScheduledKernel> s = poly::schedule_kernel(k);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  CpuSchedule golden;
  golden.lanes = 32;
  Result<std::string> src = emit_kernel(k, s->loops, Dialect::kCpu, golden);
  EXPECT_TRUE(src.ok()) << src.status().to_string();
  return src->substr(src->find("// kernel"));
}

} // namespace weft::codegen
