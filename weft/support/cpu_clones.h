// The vector ISAs a hot loop of the library is compiled for, one picked by the CPU's features
// when Weft loads (GCC's function multiversioning).
#pragma once

// AVX-512, x86-64-v3 (AVX2 with FMA) and the baseline. GCC's "avx2" clone leaves FMA out: the
// recurrent call's LSTM gates took 5.5-6.1 ns a unit with separate multiplies and adds, 4.4-4.6
// with FMA (AMD EPYC, Zen 3, 2026-12-07). Clang 14 drops an "arch=" clone without a word: its
// clones stay AVX2 without FMA (clang builds only the fuzzers).
#if defined(__clang__)
#define WEFT_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WEFT_CPU_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#endif
