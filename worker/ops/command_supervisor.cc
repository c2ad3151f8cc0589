#include "worker/ops/command_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <initializer_list>

namespace coupler::worker {
namespace {

// Where the supervisor keeps its descriptors once it has closed every other one.
constexpr int kLifelineFd = 3;
constexpr int kStatusFd = 4;
constexpr int kFirstUnusedFd = 5;
// Without pidfd_open the supervisor looks for the command's exit this often.
constexpr int kSliceMs = 20;
// Orphans that ended while the command runs are reaped at least this often.
constexpr int kReapEveryMs = 1000;
// The SIGKILL sweep repeats (each round reaches the orphans of the one before) until no child
// is left; past this a process stuck in the kernel is left to its new parent.
constexpr int kSweepGiveUpMs = 10'000;

int64_t NowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void SleepMs(int ms) { ::poll(nullptr, 0, ms); }

// Decimal digits of `value` into `out` (no snprintf: it is not async-signal-safe).
char* AppendInt(char* out, int64_t value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

char* AppendText(char* out, const char* text) {
  while (*text != '\0') *out++ = *text++;
  return out;
}

// Calls `visit(pid)` for each direct child of this (single-threaded) process, as listed in
// /proc/<pid>/task/<pid>/children; false when the kernel does not provide that list.
template <typename Visit>
bool ForEachChild(pid_t self, Visit visit) {
  char path[64];
  char* end = AppendText(path, "/proc/");
  end = AppendInt(end, self);
  end = AppendText(end, "/task/");
  end = AppendInt(end, self);
  end = AppendText(end, "/children");
  *end = '\0';
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[4096];
  int64_t pid = 0;
  bool in_number = false;
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buffer[i];
      if (c >= '0' && c <= '9') {
        pid = pid * 10 + (c - '0');
        in_number = true;
      } else if (in_number) {
        visit(static_cast<pid_t>(pid));
        pid = 0;
        in_number = false;
      }
    }
  }
  if (in_number) visit(static_cast<pid_t>(pid));
  ::close(fd);
  return true;
}

// Signals each child and the process group it leads. A child's pid cannot be reused while it is
// our child, so neither can a process group that bears its number.
void SignalChildren(pid_t self, int signal) {
  ForEachChild(self, [signal](pid_t pid) {
    ::kill(pid, signal);
    ::killpg(pid, signal);
  });
}

bool CommandExited(pid_t command) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(command), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == command;
}

// Reaps the children other than `command` that have ended: orphans of the command's tree,
// handed to us because we are their subreaper. The command itself stays a zombie until the
// final sweep, so its pid, and the process group it leads, cannot be reused while we still
// signal them. Returns how many other children were listed, reaped now or still running (-1:
// unknown): 0 means the command was the only one; one reaped now may have handed us orphans
// of its own that the list did not show yet.
int ReapOrphans(pid_t self, pid_t command) {
  int others = 0;
  const bool listed = ForEachChild(self, [&](pid_t pid) {
    if (pid == command) return;
    ++others;
    ::waitpid(pid, nullptr, WNOHANG);
  });
  return listed ? others : -1;
}

// SIGKILL to the command's group and every child, over and over (each round reaches the
// orphans the one before made) until no child is left; the command's wait status, or -1 when
// it was never reaped.
int Sweep(pid_t self, pid_t command, bool& reaped) {
  int command_status = -1;
  const int64_t give_up = NowMs() + kSweepGiveUpMs;
  for (;;) {
    if (!reaped) ::killpg(command, SIGKILL);
    SignalChildren(self, SIGKILL);
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        if (pid == command) {
          reaped = true;
          command_status = status;
        }
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0) return command_status;  // ECHILD: nothing left
      break;
    }
    if (NowMs() > give_up) return command_status;
    SleepMs(5);
  }
}

void WriteStatus(int status) {
  const char* data = reinterpret_cast<const char*>(&status);
  size_t left = sizeof(status);
  while (left > 0) {
    const ssize_t n = ::write(kStatusFd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the worker is gone: nobody to tell
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void ResetSignals() {
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
}

}  // namespace

int PidFdOpen(pid_t pid) {
  // The raw syscall: glibc 2.36's <sys/pidfd.h> declares pidfd_open without C linkage for C++.
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

void RunSupervisor(char* const argv[], char* const envp[], SupervisorFds fds, int grace_ms) {
  // Out of the worker's process group, so a terminal's ^C or a signal to the worker's group
  // reaches the worker (which drains) and not the supervisor; only the lifeline stops it.
  ::setpgid(0, 0);
  ResetSignals();
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);

  // Descriptors to fixed slots, every other one closed: a supervisor forked by one task thread
  // must not hold another task's lifeline (that worker's death would go unnoticed) nor the
  // worker's sockets.
  const int moved[4] = {::fcntl(fds.out, F_DUPFD, 10), ::fcntl(fds.err, F_DUPFD, 10),
                        ::fcntl(fds.lifeline, F_DUPFD, 10), ::fcntl(fds.status, F_DUPFD, 10)};
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0) ::_exit(127);
  for (int slot = 0; slot < 4; ++slot) {
    if (moved[slot] < 0 || ::dup2(moved[slot], slot + 1) < 0) ::_exit(127);
  }
  if (::close_range(kFirstUnusedFd, ~0U, 0) != 0) {
    for (int fd = kFirstUnusedFd; fd < 65536; ++fd) ::close(fd);
  }
  ::fcntl(kLifelineFd, F_SETFD, FD_CLOEXEC);
  ::fcntl(kStatusFd, F_SETFD, FD_CLOEXEC);

  // Orphans anywhere below (mpirun's ranks once mpirun dies, daemons that left the group) are
  // re-parented to us rather than to init, so the sweep can still find them.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::prctl(PR_SET_NAME, "task-supervisor");
  const pid_t self = ::getpid();

  // _Fork: no atfork handlers, which could wait on locks held by worker threads that do not
  // exist in this copy.
  const pid_t command = ::_Fork();
  if (command < 0) {
    WriteStatus(127 << 8);  // as the shell reports a command it cannot start
    ::_exit(0);
  }
  if (command == 0) {
    // The command's own process group, so one killpg reaches all of it; default signals (we
    // ignore some); and killed should the supervisor itself be killed.
    ::setpgid(0, 0);
    ResetSignals();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self) ::_exit(126);
    ::execve(argv[0], argv, envp);
    ::_exit(127);
  }
  ::setpgid(command, command);  // both sides, so no signal can find it in our group
  // Only the command's tree writes to its pipes now: the worker sees end-of-file when all of
  // it is gone.
  ::dup2(0, 1);
  ::dup2(0, 2);

  const int exit_fd = PidFdOpen(command);
  bool stop = false;
  for (;;) {
    ReapOrphans(self, command);
    if (CommandExited(command)) break;
    pollfd wait[2] = {{kLifelineFd, POLLIN, 0}, {exit_fd, POLLIN, 0}};
    const int n = ::poll(wait, exit_fd >= 0 ? 2 : 1, exit_fd >= 0 ? kReapEveryMs : kSliceMs);
    if (n > 0 && (wait[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      stop = true;
      break;
    }
  }

  if (stop) {
    // The worker gave up on the command or died: SIGTERM, a grace period to exit cleanly (mpirun
    // uses it to stop its ranks), then the sweep.
    ::killpg(command, SIGTERM);
    SignalChildren(self, SIGTERM);
    const int64_t deadline = NowMs() + grace_ms;
    // Done early once the command has exited and nothing else is left: a live descendant
    // always has a live parent chain up to us, or has been handed to us as an orphan. The
    // command is checked first: its orphans are ours before it shows as exited, so the list
    // read after that has them all.
    while (NowMs() < deadline) {
      if (CommandExited(command) && ReapOrphans(self, command) == 0) break;
      SleepMs(10);
    }
  }
  bool reaped = false;
  const int status = Sweep(self, command, reaped);
  if (reaped) WriteStatus(status);
  ::_exit(0);
}

}  // namespace coupler::worker
