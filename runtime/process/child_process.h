// Starting and owning child processes: one RAII handle that every part uses (`coupler run`'s
// coordinator and workers, a worker's task supervisors, the test and bench harnesses). Spawn
// takes argv, environment additions, standard streams, a working folder and whether the child
// leads its own process group; the handle waits with a timeout, signals the process or its
// group, and kills and reaps whatever still runs when it goes away, so no exit path leaks a
// process or a zombie.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace coupler::process {

struct SpawnOptions {
  // argv[0] is the program's path, executed as it is (no PATH search).
  std::vector<std::string> argv;
  // NAME=VALUE pairs added to (or replacing in) this process's environment.
  std::vector<std::string> env;
  // Empty: inherited. Otherwise the file is opened in the child: stdin for reading, stdout and
  // stderr created or truncated.
  std::string stdin_path;
  std::string stdout_path;
  std::string stderr_path;
  std::string cwd;  // empty: ours
  // The child leads a new process group, so SignalGroup (and the destructor's SIGKILL) reach
  // everything it starts that stays in the group.
  bool new_process_group = false;
  // SIGKILL to the child should this process die (PR_SET_PDEATHSIG, Linux).
  bool die_with_parent = false;
  // A hard wall-clock limit, seconds: alarm(2) in the child, which survives execve, so the
  // program is ended by SIGALRM unless it handles it. 0: none.
  unsigned alarm_s = 0;
};

// Exit codes the child reports when it cannot get as far as running the program.
inline constexpr int kExitParentGone = 126;   // died with the parent before it could start
inline constexpr int kExitCannotExec = 127;   // execve failed (as the shell reports it)
inline constexpr int kExitCannotRedirect = 125;
inline constexpr int kExitCannotChdir = 124;

// A wait status as one exit code: the status it exited with, or 128 + the signal that ended it.
int ExitCode(int wait_status);

// This process's own executable (/proc/self/exe), to start another coupler command.
Result<std::string> SelfExecutable();

// Our environment with `extra` (NAME=VALUE) added, a variable of the same name replaced.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra);

class ChildProcess {
 public:
  static Result<ChildProcess> Spawn(const SpawnOptions& options);
  // A forked child that runs `child_body` instead of a program: for a child with work of its
  // own to do before any exec (`what` names it in errors). It must not return (the child exits
  // with kExitCannotExec if it does), and, the parent being multi-threaded, may make only
  // async-signal-safe calls: prepare everything it needs before calling Fork.
  static Result<ChildProcess> Fork(std::string_view what, const std::function<void()>& child_body);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kill() when it still runs.
  ~ChildProcess();

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // To the process; a no-op once it was reaped (its pid may be another's by then).
  void Signal(int sig);
  // To its process group when it leads one (SpawnOptions::new_process_group), else Signal.
  void SignalGroup(int sig);
  // SIGKILL to the group (or the process) and reap; a no-op once reaped.
  void Kill();
  // SIGTERM, up to `grace` for it to exit, then Kill(); its exit code.
  int Stop(std::chrono::milliseconds grace);

  // Its exit code (ExitCode) once it ended within `timeout`, else nullopt. -1 when its status
  // was lost (reaped behind our back: SIGCHLD ignored).
  std::optional<int> WaitFor(std::chrono::milliseconds timeout);
  bool running();
  // Blocks until it ends; its raw wait status, nullopt when it was lost as above.
  std::optional<int> WaitStatus();
  // True once it has ended, without reaping it (its pid stays its own until a wait); also true
  // when it was reaped behind our back.
  bool Exited() const;

 private:
  explicit ChildProcess(pid_t pid, bool group) : pid_(pid), group_(group) {}
  // Reaps it if it ended (or, `block`, once it ends); true once reaped.
  bool Reap(bool block);

  pid_t pid_ = -1;
  bool group_ = false;
  bool reaped_ = false;
  std::optional<int> wait_status_;  // raw, once reaped; nullopt when it was lost
};

}  // namespace coupler::process
