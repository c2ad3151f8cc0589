#include "runtime/process/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>

#include "runtime/io/unique_fd.h"

extern char** environ;

namespace coupler::process {
namespace {

constexpr auto kWaitSlice = std::chrono::milliseconds(10);

// Opens `path` onto descriptor `target` in the child; async-signal-safe.
bool Redirect(const char* path, int flags, int target) {
  const int fd = ::open(path, flags, 0644);
  if (fd < 0) return false;
  if (fd != target) {
    if (::dup2(fd, target) < 0) return false;
    ::close(fd);
  }
  return true;
}

}  // namespace

int ExitCode(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

Result<std::string> SelfExecutable() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return Internal(std::string("readlink(/proc/self/exe): ") + std::strerror(errno));
  return std::string(exe, static_cast<size_t>(n));
}

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  auto name_of = [](std::string_view var) { return var.substr(0, var.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return name_of(x) == name_of(var);
    });
    if (!replaced) env.emplace_back(var);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

Result<ChildProcess> ChildProcess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgument("spawn: no program given");
  // Everything the child needs is prepared before fork: after it, in a threaded process, only
  // async-signal-safe calls are allowed.
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  std::vector<char*> envp;
  if (!options.env.empty()) {
    env_text = EnvironmentWith(options.env);
    for (std::string& var : env_text) envp.push_back(var.data());
    envp.push_back(nullptr);
  }
  char* const* child_env = options.env.empty() ? environ : envp.data();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return io::ErrnoStatus("fork", options.argv[0], errno);
  if (pid == 0) {
    if (options.new_process_group) ::setpgid(0, 0);
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kExitParentGone);  // it died before prctl
    }
    if ((!options.stdin_path.empty() && !Redirect(options.stdin_path.c_str(), O_RDONLY, 0)) ||
        (!options.stdout_path.empty() &&
         !Redirect(options.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 1)) ||
        (!options.stderr_path.empty() &&
         !Redirect(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 2))) {
      ::_exit(kExitCannotRedirect);
    }
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(kExitCannotChdir);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (options.alarm_s > 0) ::alarm(options.alarm_s);
    ::execve(argv[0], argv.data(), child_env);
    ::_exit(kExitCannotExec);
  }
  // Both sides, so no signal sent right after Spawn can miss the new group.
  if (options.new_process_group) ::setpgid(pid, pid);
  return ChildProcess(pid, options.new_process_group);
}

Result<ChildProcess> ChildProcess::Fork(std::string_view what,
                                        const std::function<void()>& child_body) {
  const pid_t pid = ::fork();
  if (pid < 0) return io::ErrnoStatus("fork", what, errno);
  if (pid == 0) {
    child_body();
    ::_exit(kExitCannotExec);
  }
  return ChildProcess(pid, false);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      group_(other.group_),
      reaped_(other.reaped_),
      wait_status_(other.wait_status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Kill();
    pid_ = std::exchange(other.pid_, -1);
    group_ = other.group_;
    reaped_ = other.reaped_;
    wait_status_ = other.wait_status_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Kill(); }

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

void ChildProcess::SignalGroup(int sig) {
  if (pid_ <= 0 || reaped_) return;
  // While the leader is unreaped its pid, and so the group's number, cannot be reused.
  if (group_) {
    ::killpg(pid_, sig);
  } else {
    ::kill(pid_, sig);
  }
}

void ChildProcess::Kill() {
  if (pid_ <= 0 || reaped_) return;
  SignalGroup(SIGKILL);
  Reap(true);
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  if (std::optional<int> code = WaitFor(grace)) return *code;
  Kill();
  return *WaitFor(std::chrono::milliseconds(0));
}

bool ChildProcess::Reap(bool block) {
  if (reaped_) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  reaped_ = true;
  if (r == pid_) wait_status_ = status;
  return true;
}

std::optional<int> ChildProcess::WaitFor(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Reap(false)) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kWaitSlice);
  }
  return wait_status_ ? ExitCode(*wait_status_) : -1;
}

bool ChildProcess::running() { return pid_ > 0 && !Reap(false); }

std::optional<int> ChildProcess::WaitStatus() {
  if (pid_ <= 0) return std::nullopt;
  Reap(true);
  return wait_status_;
}

bool ChildProcess::Exited() const {
  if (reaped_) return true;
  if (pid_ <= 0) return false;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid_;
}

}  // namespace coupler::process
