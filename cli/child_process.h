// ChildProcess: a coupler subprocess `coupler run` starts (coordinator, workers). Owned: the
// destructor kills and reaps whatever is still running, so no exit path leaks a process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace coupler::cli {

class ChildProcess {
 public:
  // Runs this same executable with `args` (argv[1..]); stdout/stderr are inherited.
  static Result<ChildProcess> SpawnSelf(const std::vector<std::string>& args);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Exit code once it exited within `timeout` (128 + signal when killed), else nullopt.
  std::optional<int> WaitFor(std::chrono::milliseconds timeout);
  bool running();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace coupler::cli
