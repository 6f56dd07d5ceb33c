#include "weft/runtime/cpu/host_threads.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <omp.h>

#include "weft/support/log.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace weft::runtime {

namespace {

// The CPUs one cgroup directory's quota gives; 0 where it has none (or no such files).
double quota_cpus(const std::string& dir, bool v2) {
  std::ifstream in(dir + (v2 ? "/cpu.max" : "/cpu.cfs_quota_us"));
  std::string quota;
  double period = 0;
  if (!(in >> quota)) return 0;
  if (v2) {
    in >> period;
  } else {
    std::ifstream periods(dir + "/cpu.cfs_period_us");
    periods >> period;
  }
  char* end = nullptr;
  double q = std::strtod(quota.c_str(), &end);
  if (quota == "max" || *end != '\0' || q <= 0 || period <= 0) return 0;
  return q / period;
}

// The least quota along "path" (a cgroup's, "/a/b") and its ancestors under "base".
double least_quota(const std::string& base, std::string path, bool v2) {
  double least = 0;
  while (true) {
    double cpus = quota_cpus(base + path, v2);
    if (cpus > 0 && (least == 0 || cpus < least)) least = cpus;
    if (path.empty() || path == "/") return least;
    path.resize(path.find_last_of('/'));
  }
}

} // namespace

Status check_thread_count(int64_t n, std::string_view what) {
  if (n < 0 || n > kMaxHostThreads)
    return Status::error(fmt::format("{} is {}: a thread count is a whole number from 1 to {} (0: "
                                     "the default)",
                                     what, n, kMaxHostThreads));
  return Status();
}

Result<int> thread_count_from_environment() {
  const char* env = std::getenv("WEFT_NUM_THREADS");
  if (!env || !*env) return 0;
  std::string_view text(env);
  int64_t n = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (error != std::errc() || end != text.data() + text.size() || n < 0 || n > kMaxHostThreads)
    return Status::error(fmt::format("WEFT_NUM_THREADS is '{}': a thread count is a whole number "
                                     "from 1 to {} (0: the default)",
                                     text, kMaxHostThreads));
  return static_cast<int>(n);
}

int cgroup_cpu_limit(std::string_view proc_cgroup, const std::string& root) {
  double least = 0;
  auto take = [&](double cpus) {
    if (cpus > 0 && (least == 0 || cpus < least)) least = cpus;
  };
  std::istringstream lines{std::string(proc_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path"; cgroup v2's is "0::path".
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      take(least_quota(root, path, true));
      continue;
    }
    bool cpu = false;
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      cpu |= name == "cpu";
    if (!cpu) continue;
    // v1 mounts the controller as "cpu,cpuacct" (a link "cpu" beside it on most systems).
    take(least_quota(root + "/" + controllers, path, false));
    take(least_quota(root + "/cpu", path, false));
  }
  return least > 0 ? std::max(1, static_cast<int>(std::ceil(least - 1e-9))) : 0;
}

int omp_num_threads_of(const char* env) {
  if (!env) return 0;
  std::string_view text(env);
  text = text.substr(0, text.find(','));
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  int64_t n = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (error != std::errc() || end != text.data() + text.size() || n <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
}

namespace {

// OMP_NUM_THREADS when this library loaded, as the OpenMP runtime read it then (a program may
// set the variable later, to no effect on either).
const int kOmpNumThreadsAtLoad = omp_num_threads_of(std::getenv("OMP_NUM_THREADS"));

} // namespace

int default_host_threads() { return default_host_threads_for(kOmpNumThreadsAtLoad); }

int default_host_threads_for(int omp) {
  int threads = omp;
  if (threads > kMaxHostThreads) { // OMP_NUM_THREADS=100000 segfaulted in libgomp's team start
    log_info("{} threads by default, the most Weft runs (OMP_NUM_THREADS: {})", kMaxHostThreads,
             threads);
    return kMaxHostThreads;
  }
  return threads > 0 ? threads : available_host_threads();
}

int available_host_threads() {
  int threads = std::min(omp_get_num_procs(), kMaxHostThreads);
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  int limit = cgroup_cpu_limit(text.str(), "/sys/fs/cgroup");
  if (limit <= 0 || limit >= threads) return threads;
  log_info("{} threads by default, the CPUs of this process's cgroup CPU quota (of {})", limit,
           threads);
  return limit;
}

#if defined(__linux__)

namespace {

// The user's own placement of the OpenMP threads wins.
bool placement_left_alone() {
  static const bool alone = [] {
    const char* off = std::getenv("WEFT_WORKER_AFFINITY");
    return std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES") ||
           std::getenv("GOMP_CPU_AFFINITY") || (off && std::string_view(off) == "0");
  }();
  return alone;
}

// The workers of one calling thread. The OpenMP runtime keeps a pool of them per thread that
// starts parallel regions; libgomp ends those beyond a smaller team's size and starts new ones
// for a larger team, so an id taken here may be gone later.
struct Workers {
  int threads = 0;        // the team size the ids were taken for; 0: take them again
  std::vector<pid_t> ids; // of threads 1 .. threads - 1
  int kept_off = -1;      // the CPU they were last kept off
};

thread_local Workers workers;

void take_ids(Workers& w, int threads) {
  std::vector<pid_t> ids(static_cast<size_t>(threads), 0);
  int got = 0;
#pragma omp parallel num_threads(threads)
  {
    ids[static_cast<size_t>(omp_get_thread_num())] = gettid();
#pragma omp master
    got = omp_get_num_threads();
  }
  w.ids.assign(ids.begin() + 1, ids.begin() + got);
  w.threads = threads;
  w.kept_off = -1;
}

// Gives every worker "cpus"; false where one is gone (its ids are taken again next time).
bool place(Workers& w, const cpu_set_t& cpus) {
  for (pid_t id : w.ids) {
    // Signal 0 checks that the id is still a thread of this process, not one that reused it.
    if (syscall(SYS_tgkill, getpid(), id, 0) != 0 ||
        sched_setaffinity(id, sizeof(cpus), &cpus) != 0) {
      w.threads = 0;
      return false;
    }
  }
  return true;
}

} // namespace

int keep_workers_off_this_cpu() {
  int threads = omp_get_max_threads();
  if (threads < 2 || omp_in_parallel() || placement_left_alone()) return -1;
  Workers& w = workers;
  if (w.threads != threads) take_ids(w, threads);
  int cpu = sched_getcpu();
  if (cpu < 0 || w.ids.empty()) return -1;
  if (cpu == w.kept_off) return cpu;
  cpu_set_t others;
  if (sched_getaffinity(0, sizeof(others), &others) != 0) return -1;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0 || !place(w, others)) return -1;
  w.kept_off = cpu;
  return cpu;
}

#else

int keep_workers_off_this_cpu() { return -1; }

#endif

} // namespace weft::runtime
