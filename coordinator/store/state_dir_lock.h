// One owner per state directory. A coordinator that writes DIR holds an exclusive flock(2) on
// DIR/coordinator.lock for as long as its store is open, so a second coordinator started on the
// same --state is refused with one line naming the holder, instead of admitting jobs into a
// database the first one still writes (which then answers "no job" for them and resurrects them
// at its next restart).
//
// The kernel drops the lock when the holder's last descriptor closes: at exit, on SIGKILL, on a
// crash; a stale lock file therefore never blocks a restart, and nothing has to clean it up. The
// file holds the holder's name ("pid 4711 on host-a since 2026-12-06T01:40:00Z") only so that
// the refusal can say who holds it; its content is not the lock.
//
// What it guarantees: on one host, or on a local filesystem shared through a bind mount, one
// writer at a time. On NFS, Linux maps flock to NFS byte-range locks (NLM for v3, built into v4),
// which hold across clients while the lock service works; a mount with `nolock` keeps locks on
// the client and guarantees nothing across hosts (docs/operations.md).
#pragma once

#include <string>

#include "runtime/io/unique_fd.h"
#include "runtime/status.h"

namespace coupler::store {

class StateDirLock {
 public:
  static constexpr const char* kFileName = "coordinator.lock";

  // Takes the lock on DIR/coordinator.lock (created 0600 when missing) without waiting and
  // writes this process's name into it. Unavailable naming the holder when another process
  // holds it; Unavailable naming the file when it cannot be opened or locked.
  static Result<StateDirLock> Acquire(const std::string& dir);

  StateDirLock() = default;
  StateDirLock(StateDirLock&&) noexcept = default;
  StateDirLock& operator=(StateDirLock&&) noexcept = default;

  bool held() const { return fd_.valid(); }
  const std::string& path() const { return path_; }

 private:
  StateDirLock(io::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  io::UniqueFd fd_;  // the lock lives as long as this descriptor
  std::string path_;
};

}  // namespace coupler::store
