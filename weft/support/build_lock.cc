#include "weft/support/build_lock.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "weft/support/log.h"

namespace weft {

namespace {

// The pid the holder wrote into the lock file; 0 if none yet or unreadable.
long holder_pid(int fd) {
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  return n > 0 ? std::strtol(text, nullptr, 10) : 0;
}

} // namespace

bool process_stopped(long pid) {
  if (pid <= 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "pid (comm) S ...": the state follows the last ')', as comm may hold spaces and parens.
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  char state = line[close + 2];
  return state == 'T' || state == 't';
}

BuildLock::BuildLock(std::string path, std::chrono::milliseconds patience)
    : path_(std::move(path)) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point give_up = Clock::now() + patience;
  int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return; // a read-only cache, say: build without the lock
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    bool busy = errno == EWOULDBLOCK; // else no locks here
    long pid = holder_pid(fd);
    if (!busy || Clock::now() >= give_up || process_stopped(pid)) {
      log_info("not waiting for the build of {} (holder pid {}): building it here too", path_, pid);
      ::close(fd);
      waited_ = true;
      return;
    }
    if (!waited_) log_info("waiting for pid {}, which builds the same entry ({})", pid, path_);
    waited_ = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The holder before this one may have removed the file while this one waited on it: the
  // lock is then on a name nobody else opens, which is harmless (at worst two builds).
  std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // the pid only lets waiters see a stopped holder; the lock holds without it
  }
  fd_ = fd;
}

BuildLock::~BuildLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str()); // before the unlock, so that no one waits on a finished entry
  ::close(fd_);
}

} // namespace weft
