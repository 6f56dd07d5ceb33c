// The machine's arithmetic peak as profiles hold achieved GFLOP/s against it: measured, not
// looked up, since shared machines and their clocks vary (docs/debugging.md).
#pragma once

namespace weft::library {

// GFLOP/s of oneDNN's f32 matrix product [1024, 1024] x [1024, 1024] on the current threads,
// the best of a few runs (about 30 ms here); 0 when it cannot run.
double measure_peak_gflops();

// GB/s (1e9 bytes) of a parallel read of 256 MB (past the caches) on the current threads, with
// independent accumulators as reductions read: the best of a few passes (about 0.1 s here); 0
// when the memory cannot be had.
double measure_read_bandwidth();

} // namespace weft::library
