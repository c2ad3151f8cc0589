// A `coupler` child process for the benchmarks that run real coordinators and workers: started
// with fork/exec, stopped (SIGTERM, then SIGKILL) when it goes out of scope.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace coupler::bench {

class Child {
 public:
  // `quiet`: warnings only, and stdout discarded (a CLI's replies such as "draining p3" would
  // break up the printed table); stderr stays.
  explicit Child(const std::vector<std::string>& args, bool quiet = false) {
    std::vector<std::string> a{COUPLER_BINARY};
    if (quiet) a.insert(a.end(), {"--log-level", "warn"});
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      if (quiet) {
        const int null_fd = open("/dev/null", O_WRONLY);
        if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
      }
      execv(COUPLER_BINARY, argv.data());
      _exit(127);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    if (!Wait(std::chrono::milliseconds(5000))) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }

  // The exit code, or nullopt if it is still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (pid_ > 0 && std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

  // Its peak resident set (VmHWM), in KiB; -1 when unknown.
  long PeakRssKb() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace coupler::bench
