// The machine's arithmetic peak as profiles hold achieved GFLOP/s against it: measured, not
// looked up, since shared machines and their clocks vary (docs/debugging.md).
#pragma once

namespace weft::library {

// GFLOP/s of oneDNN's f32 matrix product [1024, 1024] x [1024, 1024] on the current threads,
// the best of a few runs (about 30 ms here); 0 when it cannot run.
double measure_peak_gflops();

} // namespace weft::library
