// Running one shell command for an op: /bin/sh -c in its own process group under a supervisor
// (command_supervisor.h) that kills everything it started on a timeout, a cancel or the
// worker's death, stdout and stderr drained together with poll() so a chatty command can never
// deadlock on a full pipe, and only their tails kept.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/job/command_placeholders.h"
#include "runtime/status.h"
#include "worker/task_log.h"

namespace coupler::worker {

struct ShellCommand {
  std::string command;                         // run as /bin/sh -c <command>
  double timeout_s = 0;                        // 0: no limit
  const std::atomic<bool>* cancel = nullptr;   // checked every few milliseconds
  double kill_grace_s = 2.0;                   // SIGTERM, then SIGKILL after this long
  size_t tail_bytes = 2048;                    // of stdout and stderr kept
  size_t tail_lines = 20;
  // NAME=VALUE pairs added to (or replacing in) the worker's environment: secrets go here,
  // never into the command line, which every local user can read in ps.
  std::vector<std::string> env;
  // Called with each chunk as it is read (1: stdout, 2: stderr), on the calling thread.
  std::function<void(int stream, std::string_view data)> on_output;
};

struct ShellResult {
  enum class End { kExited, kSignaled, kTimedOut, kCancelled };
  End end = End::kExited;
  int exit_status = 0;  // kExited; -1 when the status was lost (the worker ignores SIGCHLD)
  int signal = 0;       // kSignaled
  std::string stderr_tail;  // the last tail_lines lines / tail_bytes bytes
  std::string stdout_tail;
  double elapsed_ms = 0;
};

// Runs the command to its end. A Status only when it could not be started at all; how the
// command itself ended (non-zero status, signal, timeout, cancel) is in the ShellResult. When it
// ends, whatever it left running is killed: its process group and any process that left it
// (mpirun's ranks, a daemon), for they stay the supervisor's descendants.
Result<ShellResult> RunShellCommand(const ShellCommand& command);

// An op's command (exec, train, mpi_exec): RunShellCommand with the time it took added to
// `kernel_ms`, the outcome's compute time, and everything it prints written to the attempt's
// logs (null: none) before `on_output` sees it.
Result<ShellResult> RunOpCommand(
    std::string command, double timeout_s, const std::atomic<bool>* cancel, double& kernel_ms,
    TaskAttemptLogs* logs, std::vector<std::string> env = {},
    std::function<void(int stream, std::string_view data)> on_output = {});

// Shared with the validator, which substitutes {spec_dir} itself.
using job::ShellQuote;

// The part of a failed command's stderr an error line carries: its last 3 non-blank lines that
// are the program's own, joined with " | " (each cut at 300 characters). mpirun wraps a rank's
// failure in banner blocks between rules of dashes that repeat what the exit status says; they
// are skipped (all of them are in the task's log, `coupler logs`). With nothing outside banners,
// the last lines as they are.
std::string StderrSummary(std::string_view tail);

// How a command that did not succeed ended, as one line: DeadlineExceeded "timed out after T s",
// Aborted "<what> killed by signal N (name)", Cancelled, Aborted "<what> exited with status N"
// (retryable: a user's program may be flaky), each followed by StderrSummary of its stderr.
// Ok for a clean exit 0.
Status EndStatus(const ShellResult& result, double timeout_s, std::string_view what);

}  // namespace coupler::worker
