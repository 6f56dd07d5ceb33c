#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
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

TEST(KeepWorkersOffThisCpu, KeepsThemOffTheCallersCpu) {
  cpu_set_t mine = cpus_of(0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: nothing to keep apart";
  // A thread of its own, with a team of its own.
  std::thread([&] {
    omp_set_num_threads(2);
    std::vector<pid_t> ids = team_ids(2);
    ASSERT_NE(ids[1], 0);
    for (int run = 0; run < 3; ++run) {
      int cpu = keep_workers_off_this_cpu();
      ASSERT_GE(cpu, 0);
      cpu_set_t worker = cpus_of(ids[1]);
      EXPECT_FALSE(CPU_ISSET(cpu, &worker));
      EXPECT_TRUE(CPU_ISSET(cpu, &mine));
      EXPECT_EQ(CPU_COUNT(&worker), CPU_COUNT(&mine) - 1);
      EXPECT_EQ(team_ids(2)[1], ids[1]); // the same worker runs the run's regions
    }
  }).join();
}

TEST(KeepWorkersOffThisCpu, LeavesOneThreadAlone) {
  std::thread([] {
    omp_set_num_threads(1);
    EXPECT_EQ(keep_workers_off_this_cpu(), -1);
  }).join();
}

// A cgroup file system under a temporary directory: "files" maps paths under it to contents.
class FakeCgroups : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("weft_cgroups_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    std::filesystem::path file = root_ / path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
  }
  int limit(const std::string& proc_cgroup) {
    return cgroup_cpu_limit(proc_cgroup, root_.string());
  }
  std::filesystem::path root_;
};

TEST_F(FakeCgroups, V2TakesTheLeastQuotaOnThePathRoundedUp) {
  write("kubepods/pod1/ctr/cpu.max", "max 100000");
  write("kubepods/pod1/cpu.max", "250000 100000");
  write("kubepods/cpu.max", "800000 100000");
  EXPECT_EQ(limit("0::/kubepods/pod1/ctr\n"), 3);
  write("kubepods/pod1/ctr/cpu.max", "50000 100000");
  EXPECT_EQ(limit("0::/kubepods/pod1/ctr\n"), 1);
}

TEST_F(FakeCgroups, NoQuotaIsNoLimit) {
  write("user.slice/cpu.max", "max 100000");
  EXPECT_EQ(limit("0::/user.slice\n"), 0);
  EXPECT_EQ(limit("0::/elsewhere\n"), 0); // no files at all
  EXPECT_EQ(limit(""), 0);
}

TEST_F(FakeCgroups, V2InsideANamespaceReadsTheRoot) {
  write("cpu.max", "200000 100000");
  EXPECT_EQ(limit("0::/\n"), 2);
}

TEST_F(FakeCgroups, V1ReadsTheCpuControllersQuotaAndPeriod) {
  write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000");
  write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000");
  write("cpu,cpuacct/cpu.cfs_quota_us", "-1");
  write("cpu,cpuacct/cpu.cfs_period_us", "100000");
  write("memory/docker/abc/cpu.cfs_quota_us", "10000"); // not the cpu controller's
  EXPECT_EQ(limit("9:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n"), 2);
  write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1");
  EXPECT_EQ(limit("4:cpu,cpuacct:/docker/abc\n"), 0);
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

// More threads than kMaxHostThreads by default (OMP_NUM_THREADS=100000) are kMaxHostThreads.
TEST(ThreadCounts, TheDefaultIsAtMostTheMaximum) {
  EXPECT_EQ(default_host_threads_for(100000), kMaxHostThreads); // OMP_NUM_THREADS=100000
  EXPECT_EQ(default_host_threads_for(3), 3);
  EXPECT_EQ(default_host_threads_for(0), available_host_threads());
  EXPECT_GE(available_host_threads(), 1);
  EXPECT_LE(available_host_threads(), std::min(omp_get_num_procs(), kMaxHostThreads));
}

// Not OpenMP's current count, which PyTorch's torch.set_num_threads sets in the libgomp it
// shares with Weft.
TEST(ThreadCounts, TheDefaultIsNotOpenMPsCurrentCount) {
  int saved = omp_get_max_threads(), before = default_host_threads();
  omp_set_num_threads(before == 1 ? 2 : 1);
  EXPECT_EQ(default_host_threads(), before);
  omp_set_num_threads(saved);
}

TEST(ThreadCounts, OmpNumThreadsIsItsFirstNumber) {
  EXPECT_EQ(omp_num_threads_of(nullptr), 0);
  for (auto [text, want] : {std::pair{"4", 4},
                            {" 3,2", 3},
                            {"8,1", 8},
                            {"", 0},
                            {"x", 0},
                            {"0", 0},
                            {"-1", 0},
                            {"2x", 0}})
    EXPECT_EQ(omp_num_threads_of(text), want) << text;
}

// 0 (the default) to kMaxHostThreads, a whole number; WEFT_NUM_THREADS unset or empty is 0.
TEST(ThreadCounts, AreWholeNumbersUpToTheMaximum) {
  EXPECT_TRUE(check_thread_count(0, "threads").ok());
  EXPECT_TRUE(check_thread_count(kMaxHostThreads, "threads").ok());
  Status negative = check_thread_count(-1, "threads");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.message(),
            "threads is -1: a thread count is a whole number from 1 to 1024 (0: the default)");
  EXPECT_FALSE(check_thread_count(kMaxHostThreads + 1, "threads").ok());
  const char* saved = std::getenv("WEFT_NUM_THREADS");
  std::string kept = saved ? saved : "";
  for (auto [text, want] : {std::pair{"", 0}, {"0", 0}, {"7", 7}, {"1024", 1024}}) {
    setenv("WEFT_NUM_THREADS", text, 1);
    Result<int> n = thread_count_from_environment();
    ASSERT_TRUE(n.ok()) << text;
    EXPECT_EQ(*n, want) << text;
  }
  for (const char* text : {"abc", "1.5", " 4", "4 ", "-2", "1025", "99999999999999999999"}) {
    setenv("WEFT_NUM_THREADS", text, 1);
    EXPECT_FALSE(thread_count_from_environment().ok()) << text;
  }
  if (saved)
    setenv("WEFT_NUM_THREADS", kept.c_str(), 1);
  else
    unsetenv("WEFT_NUM_THREADS");
}

} // namespace
} // namespace weft::runtime
