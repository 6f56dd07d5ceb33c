// BuildLock: one builder at a time for one cache entry, across processes and threads.
//
// Processes that miss the same cache entry at once (tests run in parallel, serving workers
// started together on a cold cache) would each build it. The first to take the entry's lock
// builds; the others wait for it, then find the entry built. The lock is only an economy:
// builds write under private names and rename into place, so a waiter that gives up and
// builds too is still correct. A waiter gives up when the holder is stopped (SIGSTOP, a
// debugger), when it has waited "patience", or when the file system has no locks.
//
// The lock is flock(2) on "<entry>.lock", which holds the holder's pid; the kernel releases
// it when the holder exits or dies, and the holder removes the file when done.
#pragma once

#include <chrono>
#include <string>

namespace weft {

class BuildLock {
public:
  // Takes the lock at "path", waiting for another holder at most "patience".
  BuildLock(std::string path, std::chrono::milliseconds patience);
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;
  ~BuildLock();

  bool held() const { return fd_ >= 0; }
  // Whether the lock was taken when asked for (another holder built the entry meanwhile, or
  // failed to, or still holds it): the caller looks in the cache again before building.
  bool waited() const { return waited_; }

private:
  std::string path_;
  int fd_ = -1;
  bool waited_ = false;
};

// Whether the process "pid" is stopped or traced (state T or t in /proc/<pid>/stat); false
// when it cannot be read (no such process, another pid namespace, not Linux).
bool process_stopped(long pid);

} // namespace weft
