// Where the OpenMP workers of a CPU run may run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "weft/support/status.h"

namespace weft::runtime {

// The most threads a run may be given (--threads, threads=, CompileOptions::threads,
// WEFT_NUM_THREADS): libgomp puts a record per thread of a team on the stack of the thread
// that starts it, and --threads 100000 overflowed its 8 MB (a segfault in GOMP_parallel).
inline constexpr int kMaxHostThreads = 1024;

// A thread count the user gave: "n", or the text of WEFT_NUM_THREADS where set and not empty
// (a whole number), must lie in [0, kMaxHostThreads], 0 meaning the default; else an error
// that names what gave it ("what" for "n"). The environment's count is 0 where none is given.
Status check_thread_count(int64_t n, std::string_view what);
Result<int> thread_count_from_environment();

// The threads a CPU run takes by default: OMP_NUM_THREADS as it was when Weft loaded (its first
// number), else available_host_threads(); at most kMaxHostThreads. Not OpenMP's current
// default, which anything in the process may change: PyTorch, sharing GCC's libgomp with Weft,
// sets it with torch.set_num_threads (Ultralytics sets 1 on a 2-core machine), and Weft's runs
// then took one thread.
int default_host_threads();
// default_host_threads() where OMP_NUM_THREADS gave "omp" threads (0: it gave none).
int default_host_threads_for(int omp);
// The first number of an OMP_NUM_THREADS value ("4", "4,2": one per nesting level); 0 where
// "text" is null or does not start with a positive whole number.
int omp_num_threads_of(const char* text);
// The CPUs of the process's affinity, capped by those its cgroups' quota gives it (a
// container's CPU limit, docs/api.md: a team larger than that waits for its threads to be
// scheduled within the quota at every kernel) and by kMaxHostThreads.
int available_host_threads();

// The CPUs that the quotas of the cgroups in "proc_cgroup" (the text of /proc/self/cgroup)
// and of their ancestors give, rounded up; 0 where none limits them. "root" is where the
// cgroup file systems are mounted (/sys/fs/cgroup): cgroup v2's cpu.max, v1's
// cpu.cfs_quota_us and cpu.cfs_period_us under its cpu controller.
int cgroup_cpu_limit(std::string_view proc_cgroup, const std::string& root);

// Keeps the calling thread's OpenMP workers (those of its parallel regions: the generated
// kernels and the library calls) off the CPU the calling thread is on: where that CPU is not
// the one they were kept off last, sets their affinity to the calling thread's CPUs but it;
// they keep it until then. Called at the start of every CPU run: one sched_getcpu where the
// calling thread has not moved. Returns that CPU, or -1 where nothing was done: one thread,
// one CPU, the user placed the threads (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY),
// WEFT_WORKER_AFFINITY=0, or not Linux.
//
// Why: a worker woken from sleep runs where its waker runs, when Linux sees no better CPU. On
// a 2-vCPU VM it did so in 37 of 40 wakes after an idle gap (the other vCPU was idle), and
// under other processes' load too; the calling thread, waiting for it at the region's end,
// spun on the CPU they shared for GOMP_SPINCOUNT before the worker could start: a 0.08 ms
// language model took 10 ms to run after 50 ms of idleness (docs/api.md, "OpenMP threads").
int keep_workers_off_this_cpu();

} // namespace weft::runtime
