#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include "weft/runtime/cpu/host_threads.h"
#include "weft/runtime/executable.h"

namespace weft::runtime {
namespace {

// The ids of the calling thread's OpenMP team of "threads": the caller's first.
std::vector<pid_t> team_ids(int threads) {
  std::vector<pid_t> ids(static_cast<size_t>(threads), 0);
#pragma omp parallel num_threads(threads)
  ids[static_cast<size_t>(omp_get_thread_num())] = gettid();
  return ids;
}

cpu_set_t cpus_of(pid_t id) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(id, sizeof(set), &set), 0);
  return set;
}

TEST(WorkersOffThisCpu, KeepsTheWorkersOffTheCallersCpuForOneRunAfterAGap) {
  cpu_set_t mine = cpus_of(0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: nothing to keep apart";
  // A thread of its own, whose first run follows no other.
  std::thread([&] {
    omp_set_num_threads(2);
    std::vector<pid_t> ids = team_ids(2);
    ASSERT_NE(ids[1], 0);
    for (int run = 0; run < 2; ++run) {
      {
        WorkersOffThisCpu placement;
        ASSERT_GE(placement.cpu(), 0);
        cpu_set_t worker = cpus_of(ids[1]);
        EXPECT_FALSE(CPU_ISSET(placement.cpu(), &worker));
        EXPECT_EQ(CPU_COUNT(&worker), CPU_COUNT(&mine) - 1);
        EXPECT_EQ(team_ids(2)[1], ids[1]); // the same worker runs the run's regions
      }
      cpu_set_t worker = cpus_of(ids[1]);
      EXPECT_TRUE(CPU_EQUAL(&worker, &mine)); // every CPU again once the run ends
      std::this_thread::sleep_for(std::chrono::milliseconds(2)); // idle: it may sleep again
    }
  }).join();
}

TEST(WorkersOffThisCpu, LeavesOneThreadAlone) {
  std::thread([] {
    omp_set_num_threads(1);
    WorkersOffThisCpu placement;
    EXPECT_EQ(placement.cpu(), -1);
  }).join();
}

TEST(SetHostThreads, ZeroIsTheDefaultNotTheLastCount) {
  // One model's threads=1 stayed with the calling thread, and a threads=0 model run after it
  // there ran on 1 thread.
  std::thread([] {
    int loaded = omp_get_max_threads(); // a new thread has the OpenMP runtime's default
    set_host_threads(1);
    EXPECT_EQ(omp_get_max_threads(), 1);
    set_host_threads(0);
    EXPECT_EQ(omp_get_max_threads(), loaded);
    set_host_threads(3);
    EXPECT_EQ(omp_get_max_threads(), 3);
  }).join();
}

} // namespace
} // namespace weft::runtime
