#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/support/build_lock.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string lock_path(const std::string& name) {
  return (fs::temp_directory_path() /
          ("weft_build_lock_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The second taker waits for the first, then holds the lock; the file is gone after both.
TEST(BuildLock, SecondTakerWaitsForTheFirst) {
  std::string path = lock_path("wait");
  auto first = std::make_unique<BuildLock>(path, milliseconds(60'000));
  ASSERT_TRUE(first->held());
  EXPECT_FALSE(first->waited());
  std::thread release([&] {
    std::this_thread::sleep_for(milliseconds(200));
    first.reset();
  });
  BuildLock second(path, milliseconds(60'000));
  EXPECT_TRUE(second.held());
  EXPECT_TRUE(second.waited());
  release.join();
  EXPECT_FALSE(fs::exists(path)); // the holder removes the file
}

// A holder that is stopped does not hold the others: they go on without the lock (and
// without waiting out their patience; the test's patience is far beyond its ctest timeout).
TEST(BuildLock, StoppedHolderIsNotWaitedFor) {
  std::string path = lock_path("stopped");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) { // only system calls between fork and exit
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    char pid[16];
    int n = snprintf(pid, sizeof(pid), "%d", static_cast<int>(::getpid()));
    if (::pwrite(fd, pid, n, 0) != n) ::_exit(1);
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  EXPECT_TRUE(process_stopped(child));
  {
    BuildLock lock(path, std::chrono::hours(1));
    EXPECT_FALSE(lock.held());
    EXPECT_TRUE(lock.waited());
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  EXPECT_FALSE(process_stopped(child)); // gone
  fs::remove(path);
}

TEST(BuildLock, NoLockWhereTheFileCannotBeMade) {
  BuildLock lock("/nonexistent-dir/weft/entry.lock", milliseconds(1000));
  EXPECT_FALSE(lock.held());
  EXPECT_FALSE(lock.waited());
}

} // namespace
} // namespace weft
