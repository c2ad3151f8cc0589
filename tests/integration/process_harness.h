// Process harness for the integration tests: child processes with a hard deadline that die with
// the test (RAII kill + reap on every exit path), output captured to files, polling helpers
// with generous deadlines, free loopback ports, and scratch directories that clean themselves.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/free_port.h"
#include "runtime/process/child_process.h"

namespace coupler::itest {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// A scratch directory under /tmp, removed with everything in it (COUPLER_KEEP_TEST_DIRS=1
// keeps it for a post-mortem).
// The program's path as a shell would find it on $PATH ("" when none is there): children are
// started with execve, which takes a path, not a name.
inline std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', at), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(at, end - at)) / name;
    if (end > at && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    at = end + 1;
  }
  return "";
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "coupler-it-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    if (std::getenv("COUPLER_KEEP_TEST_DIRS") != nullptr) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Polls `done` every `every` until it holds or `timeout` passes; true when it held.
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                      std::chrono::milliseconds every = 50ms) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

// One child process: stdin from /dev/null, stdout and stderr to files. Three guards make sure
// it never outlives the test: a hard deadline (alarm(2), which survives execve), death with the
// test process (PR_SET_PDEATHSIG) and SIGKILL + reap in the destructor.
class Process {
 public:
  struct Options {
    std::chrono::seconds deadline{120};
    fs::path cwd;     // empty: inherit
    fs::path output;  // folder for <name>.out / <name>.err; empty: /dev/null
    std::string name = "child";
  };

  static Process Spawn(const std::vector<std::string>& argv, const Options& options) {
    Process p;
    p.name_ = options.name;
    if (!options.output.empty()) {
      p.out_path_ = options.output / (options.name + ".out");
      p.err_path_ = options.output / (options.name + ".err");
    }
    process::SpawnOptions spawn;
    spawn.argv = argv;
    spawn.stdin_path = "/dev/null";
    spawn.stdout_path = p.out_path_.empty() ? "/dev/null" : p.out_path_.string();
    spawn.stderr_path = p.err_path_.empty() ? "/dev/null" : p.err_path_.string();
    spawn.cwd = options.cwd.string();
    spawn.die_with_parent = true;
    spawn.alarm_s = static_cast<unsigned>(options.deadline.count());
    if (Result<process::ChildProcess> child = process::ChildProcess::Spawn(spawn); child.ok()) {
      p.child_ = std::move(*child);
    }
    return p;
  }

  bool started() const { return child_.started(); }
  pid_t pid() const { return child_.pid(); }
  const std::string& name() const { return name_; }

  void Signal(int sig) { child_.Signal(sig); }

  // SIGKILL and reap; a no-op once it has been reaped.
  void Kill() { child_.Kill(); }

  // Exit code once it has ended within `timeout` (128 + signal number when killed by one).
  std::optional<int> WaitExit(std::chrono::milliseconds timeout) { return child_.WaitFor(timeout); }
  bool running() { return child_.running(); }

  std::string out() const { return out_path_.empty() ? "" : ReadFile(out_path_); }
  std::string err() const { return err_path_.empty() ? "" : ReadFile(err_path_); }

 private:
  process::ChildProcess child_;
  std::string name_;
  fs::path out_path_;
  fs::path err_path_;
};

struct CommandResult {
  int exit_code = -1;  // -1: it did not finish within its deadline (and was killed)
  std::string out;
  std::string err;
};

// Runs a short command to its end (or its deadline, when it is killed).
inline CommandResult RunToEnd(const std::vector<std::string>& argv, const fs::path& scratch,
                              std::chrono::seconds timeout = 60s, const fs::path& cwd = {}) {
  static int counter = 0;
  Process::Options o;
  o.deadline = timeout + 10s;
  o.cwd = cwd;
  o.output = scratch;
  o.name = "cmd-" + std::to_string(getpid()) + "-" + std::to_string(++counter);
  Process p = Process::Spawn(argv, o);
  CommandResult r;
  if (!p.started()) return r;
  if (auto code = p.WaitExit(timeout)) r.exit_code = *code;
  p.Kill();
  r.out = p.out();
  r.err = p.err();
  std::error_code ec;
  fs::remove(scratch / (o.name + ".out"), ec);
  fs::remove(scratch / (o.name + ".err"), ec);
  return r;
}

using bench::FreePortPair;
using bench::PortFree;

}  // namespace coupler::itest
