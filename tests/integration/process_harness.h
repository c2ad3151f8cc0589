// Process harness for the integration tests: child processes with a hard deadline that die with
// the test (RAII kill + reap on every exit path), output captured to files, polling helpers
// with generous deadlines, free loopback ports, and scratch directories that clean themselves.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

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
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const std::string out = p.out_path_.empty() ? "/dev/null" : p.out_path_.string();
    const std::string err = p.err_path_.empty() ? "/dev/null" : p.err_path_.string();
    const std::string cwd = options.cwd.string();
    const unsigned deadline_s = static_cast<unsigned>(options.deadline.count());
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return p;
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(126);  // the test died before prctl
      const int in_fd = open("/dev/null", O_RDONLY);
      const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(125);
      dup2(in_fd, 0);
      dup2(out_fd, 1);
      dup2(err_fd, 2);
      if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(124);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      alarm(deadline_s);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    p.pid_ = pid;
    return p;
  }

  Process() = default;
  Process(Process&& o) noexcept { *this = std::move(o); }
  Process& operator=(Process&& o) noexcept {
    if (this != &o) {
      Kill();
      pid_ = std::exchange(o.pid_, -1);
      exit_ = std::exchange(o.exit_, std::nullopt);
      name_ = std::move(o.name_);
      out_path_ = std::move(o.out_path_);
      err_path_ = std::move(o.err_path_);
    }
    return *this;
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() { Kill(); }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }

  void Signal(int sig) {
    if (pid_ > 0 && !exit_) ::kill(pid_, sig);
  }

  // SIGKILL and reap; a no-op once it has been reaped.
  void Kill() {
    if (pid_ <= 0 || exit_) return;
    ::kill(pid_, SIGKILL);
    Reap(true);
  }

  // Exit code once it has ended within `timeout` (128 + signal number when killed by one).
  std::optional<int> WaitExit(std::chrono::milliseconds timeout) {
    WaitUntil([&] { return Reap(false); }, timeout, 10ms);
    return exit_;
  }
  bool running() { return pid_ > 0 && !Reap(false); }

  std::string out() const { return out_path_.empty() ? "" : ReadFile(out_path_); }
  std::string err() const { return err_path_.empty() ? "" : ReadFile(err_path_); }

 private:
  // True once the child has been reaped (now or earlier).
  bool Reap(bool block) {
    if (exit_) return true;
    if (pid_ <= 0) return false;
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &status, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    if (r < 0) {
      exit_ = -1;
      return true;
    }
    exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }

  pid_t pid_ = -1;
  std::optional<int> exit_;
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

// True when nothing listens on 127.0.0.1:port (probed the way ZeroMQ binds: SO_REUSEADDR).
inline bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  listen(fd, 1) == 0;
  close(fd);
  return ok;
}

// A port P with P and P + 1 both free (the coordinator takes P for workers, P + 1 for clients).
// Picked below the kernel's ephemeral range, so outgoing connections do not take it meanwhile;
// a caller that loses a race anyway retries with another.
inline int FreePortPair() {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(20000, 31998);
  for (int i = 0; i < 1000; ++i) {
    const int p = pick(rng);
    if (PortFree(p) && PortFree(p + 1)) return p;
  }
  return -1;
}

}  // namespace coupler::itest
