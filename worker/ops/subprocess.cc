#include "worker/ops/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "runtime/io/unique_fd.h"

extern char** environ;

namespace coupler::worker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollSlice = std::chrono::milliseconds(20);
constexpr int kReadsPerWake = 64;  // of 16 KiB: 1 MiB
// After the shell exits, descendants that escaped its group may still hold the pipes open;
// we read what they write for this long, then stop waiting for end-of-file.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);

// Keeps the last `limit` bytes, trimming in large steps so appends stay amortized O(1).
class Tail {
 public:
  explicit Tail(size_t limit) : limit_(std::max<size_t>(limit, 1)) {}
  void Append(const char* data, size_t n) {
    text_.append(data, n);
    if (text_.size() > 4 * limit_) text_.erase(0, text_.size() - limit_);
  }
  // The last `max_lines` lines of the kept bytes, without the final newline.
  std::string Take(size_t max_lines) const {
    std::string_view s = text_;
    if (s.size() > limit_) s.remove_prefix(s.size() - limit_);
    while (s.ends_with('\n')) s.remove_suffix(1);
    size_t start = s.size();
    for (size_t lines = 0; lines < max_lines && start > 0; ++lines) {
      const size_t nl = s.rfind('\n', start - 1);
      start = nl == std::string_view::npos ? 0 : nl;
    }
    if (start < s.size() && s[start] == '\n') ++start;
    return std::string(s.substr(start));
  }

 private:
  size_t limit_;
  std::string text_;
};

// Owns the spawned process: if anything below returns early, the whole group is killed and the
// child reaped, so an error path never leaves a running command or a zombie behind.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) Reap();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // True once the child has exited; it stays a zombie (WNOWAIT), which keeps its pid and so
  // its process-group id from being reused until Reap, making killpg safe until then.
  // ECHILD means the process was reaped behind our back (SIGCHLD set to SIG_IGN in the
  // worker): it is gone, and its status with it.
  bool Exited() {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == ECHILD) lost_ = true;
      return lost_;
    }
    return info.si_pid == pid_;
  }

  void Signal(int signal) const {
    if (!lost_) ::killpg(pid_, signal);  // a lost pid may already belong to someone else
  }

  // Kills what is left of the group, then collects the wait status; nullopt when it was lost.
  std::optional<int> Reap() {
    Signal(SIGKILL);
    int status = 0;
    pid_t rc = 0;
    while ((rc = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {}
    pid_ = -1;
    if (rc < 0) return std::nullopt;
    return status;
  }

 private:
  pid_t pid_;
  bool lost_ = false;
};

// The raw syscall: glibc 2.36's <sys/pidfd.h> declares pidfd_open without C linkage for C++.
int PidFdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

Status Spawn(const std::string& command, int out_fd, int err_fd, pid_t& pid) {
  // Everything the child needs is prepared before fork: after it, in a threaded process, only
  // async-signal-safe calls are allowed.
  char sh[] = "/bin/sh";
  char dash_c[] = "-c";
  std::string text = command;
  char* argv[] = {sh, dash_c, text.data(), nullptr};
  sigset_t empty;
  sigemptyset(&empty);
  const pid_t parent = ::getpid();
  pid = ::fork();
  if (pid < 0) return io::ErrnoStatus("fork", "/bin/sh", errno);
  if (pid == 0) {
    // Own process group (so killpg reaches its children), default signal dispositions and an
    // empty mask (the worker may block or ignore signals the command expects to work).
    ::setpgid(0, 0);
    // A worker that dies (SIGKILL, OOM killer) cannot stop what it started: the kernel sends
    // SIGTERM for it, so an orphaned `mpirun` takes its ranks down instead of training on in
    // slots the coordinator has already given to the group's retry.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(126);  // died before prctl took effect
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
      ::_exit(127);
    }
    ::execve(sh, argv, environ);
    ::_exit(127);
  }
  return Status::Ok();
}

}  // namespace

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

Result<ShellResult> RunShellCommand(const ShellCommand& command) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return io::ErrnoStatus("pipe", "(stdout)", errno);
  io::UniqueFd out_read(out_pipe[0]);
  io::UniqueFd out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return io::ErrnoStatus("pipe", "(stderr)", errno);
  io::UniqueFd err_read(err_pipe[0]);
  io::UniqueFd err_write(err_pipe[1]);

  const auto start = Clock::now();
  pid_t pid = -1;
  COUPLER_RETURN_IF_ERROR(Spawn(command.command, out_write.get(), err_write.get(), pid));
  Child child(pid);
  out_write.Reset();  // the child holds the write ends now; ours would hide end-of-file
  err_write.Reset();
  ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
  // Readable when the child exits, so its exit wakes poll(); without it (old kernels) the
  // loop notices within one poll slice.
  io::UniqueFd exit_fd(PidFdOpen(pid));

  Tail out_tail(command.tail_bytes);
  Tail err_tail(command.tail_bytes);
  ShellResult result;
  bool ending = false;  // SIGTERM sent (timeout or cancel)
  bool killed = false;  // SIGKILL sent
  Clock::time_point term_sent;
  Clock::time_point exited_at;
  bool exited = false;
  const auto deadline =
      command.timeout_s > 0
          ? start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(command.timeout_s))
          : Clock::time_point::max();
  const auto grace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(command.kill_grace_s));

  while (true) {
    const auto now = Clock::now();
    if (!exited && child.Exited()) {
      exited = true;
      exited_at = now;
      child.Signal(SIGKILL);  // leftovers in its group; they would hold the pipes open
    }
    const bool pipes_open = out_read.valid() || err_read.valid();
    if (exited && (!pipes_open || now - exited_at > kDrainAfterExit)) break;
    if (!exited && !ending) {
      if (command.cancel != nullptr && command.cancel->load(std::memory_order_relaxed)) {
        result.end = ShellResult::End::kCancelled;
      } else if (now >= deadline) {
        result.end = ShellResult::End::kTimedOut;
      }
      if (result.end != ShellResult::End::kExited) {
        ending = true;
        term_sent = now;
        child.Signal(SIGTERM);
      }
    }
    if (ending && !killed && now - term_sent >= grace) {
      killed = true;
      child.Signal(SIGKILL);
    }

    pollfd fds[3];
    nfds_t count = 0;
    for (const io::UniqueFd* fd : {&out_read, &err_read}) {
      if (fd->valid()) fds[count++] = {fd->get(), POLLIN, 0};
    }
    if (!exited && exit_fd.valid()) fds[count++] = {exit_fd.get(), POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(kPollSlice);
    if (!ending && deadline != Clock::time_point::max()) {
      wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    }
    if (!exit_fd.valid() && !pipes_open) wait = std::chrono::milliseconds(1);
    if (::poll(fds, count, static_cast<int>(std::max<int64_t>(0, wait.count()))) < 0 &&
        errno != EINTR) {
      return io::ErrnoStatus("poll", "(command pipes)", errno);
    }
    for (auto [fd, tail] : {std::pair{&out_read, &out_tail}, std::pair{&err_read, &err_tail}}) {
      if (!fd->valid()) continue;
      // Bounded per wake-up, so a command writing without pause cannot keep the loop from
      // checking its deadline and the cancel flag.
      char buffer[16384];
      for (int reads = 0; reads < kReadsPerWake; ++reads) {
        const ssize_t n = ::read(fd->get(), buffer, sizeof(buffer));
        if (n > 0) {
          tail->Append(buffer, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) fd->Reset();  // end of file
        if (n < 0 && errno == EINTR) continue;
        break;  // EAGAIN: nothing more for now
      }
    }
  }

  const std::optional<int> status = child.Reap();
  result.elapsed_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  result.stderr_tail = err_tail.Take(command.tail_lines);
  result.stdout_tail = out_tail.Take(command.tail_lines);
  if (result.end == ShellResult::End::kExited) {
    if (!status) {
      result.exit_status = -1;
    } else if (WIFEXITED(*status)) {
      result.exit_status = WEXITSTATUS(*status);
    } else if (WIFSIGNALED(*status)) {
      result.end = ShellResult::End::kSignaled;
      result.signal = WTERMSIG(*status);
    }
  }
  return result;
}

namespace {

std::string FormatSeconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", seconds);
  return buffer;
}

std::string OneLine(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') {
      out += " | ";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

}  // namespace

Result<ShellResult> RunOpCommand(std::string command, double timeout_s,
                                 const std::atomic<bool>* cancel, double& kernel_ms) {
  ShellCommand shell;
  shell.command = std::move(command);
  shell.timeout_s = timeout_s;
  shell.cancel = cancel;
  const auto start = std::chrono::steady_clock::now();
  Result<ShellResult> result = RunShellCommand(shell);
  kernel_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

Status EndStatus(const ShellResult& r, double timeout_s, std::string_view what) {
  if (r.end == ShellResult::End::kExited && r.exit_status == 0) return Status::Ok();
  const std::string tail = r.stderr_tail.empty() ? "(no stderr output)" : OneLine(r.stderr_tail);
  switch (r.end) {
    case ShellResult::End::kCancelled: return Aborted("cancelled");
    case ShellResult::End::kTimedOut:
      return DeadlineExceeded("timed out after " + FormatSeconds(timeout_s) + " s" +
                              (r.stderr_tail.empty() ? "" : ": " + tail));
    case ShellResult::End::kSignaled:
      return Aborted(std::string(what) + " killed by signal " + std::to_string(r.signal) + " (" +
                     strsignal(r.signal) + "): " + tail);
    case ShellResult::End::kExited: break;
  }
  return InvalidArgument(std::string(what) + " exited with status " +
                         std::to_string(r.exit_status) + ": " + tail);
}

}  // namespace coupler::worker
