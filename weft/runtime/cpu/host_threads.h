// Where the OpenMP workers of a CPU run may run.
#pragma once

#include <string>
#include <string_view>

namespace weft::runtime {

// The threads a CPU run takes by default: OpenMP's (OMP_NUM_THREADS, else the CPUs of the
// process's affinity), capped where OMP_NUM_THREADS is unset by the CPUs its cgroups' quota
// gives it (a container's CPU limit, docs/api.md): a team larger than that waits for its
// threads to be scheduled within the quota at every kernel.
int default_host_threads();

// The CPUs that the quotas of the cgroups in "proc_cgroup" (the text of /proc/self/cgroup)
// and of their ancestors give, rounded up; 0 where none limits them. "root" is where the
// cgroup file systems are mounted (/sys/fs/cgroup): cgroup v2's cpu.max, v1's
// cpu.cfs_quota_us and cpu.cfs_period_us under its cpu controller.
int cgroup_cpu_limit(std::string_view proc_cgroup, const std::string& root);

// For its lifetime (one run), keeps the calling thread's OpenMP workers (those of its parallel
// regions: the generated kernels and the library calls) off the CPU the calling thread is on,
// where the run follows an idle gap in which they may have gone to sleep; gives them back every
// CPU when it ends. Does nothing for runs back to back, on one thread or one CPU, where the
// user placed the threads (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY), with
// WEFT_WORKER_AFFINITY=0, or off Linux.
//
// Why: a worker woken from sleep runs where its waker runs, when Linux sees no better CPU. On
// a 2-vCPU VM whose other vCPU was idle it did so in 37 of 40 wakes, and the calling thread,
// waiting for that worker at the region's end, spun on the CPU they shared for GOMP_SPINCOUNT
// (5.6 ms by default) before the worker could start: a 0.08 ms language model took 10 ms to
// run after 50 ms of idleness (docs/api.md).
class WorkersOffThisCpu {
public:
  WorkersOffThisCpu();
  ~WorkersOffThisCpu();
  WorkersOffThisCpu(const WorkersOffThisCpu&) = delete;
  WorkersOffThisCpu& operator=(const WorkersOffThisCpu&) = delete;

  // The CPU kept free of the workers; -1 where nothing was changed.
  int cpu() const { return cpu_; }

private:
  int cpu_ = -1;
};

} // namespace weft::runtime
