#include "worker/ops/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "runtime/io/unique_fd.h"
#include "runtime/process/child_process.h"
#include "worker/ops/command_supervisor.h"

extern char** environ;

namespace coupler::worker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollSlice = std::chrono::milliseconds(20);
constexpr int kReadsPerWake = 64;  // of 16 KiB: 1 MiB
// The supervisor exits only once the command's tree is gone, so the pipes reach end-of-file
// with it; this bounds the wait should anything else hold them (a process stuck in the kernel).
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

// Owns the command's supervisor: if anything below returns early, the lifeline is closed (the
// supervisor kills the command's whole tree) and the supervisor reaped, so an error path never
// leaves a running command or a zombie behind.
class Supervisor {
 public:
  Supervisor(process::ChildProcess child, io::UniqueFd lifeline, io::UniqueFd status)
      : child_(std::move(child)), lifeline_(std::move(lifeline)), status_(std::move(status)) {}
  ~Supervisor() {
    if (!reaped_) Reap();
  }
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  pid_t pid() const { return child_.pid(); }

  // True once the supervisor has exited, which it does only when the command's tree is gone.
  // Reaped behind our back (SIGCHLD set to SIG_IGN in the worker) counts: it is gone all the
  // same.
  bool Exited() const { return child_.Exited(); }

  // Asks the supervisor to end the command: SIGTERM to its tree, SIGKILL after the grace.
  void Stop() { lifeline_.Reset(); }

  // Waits for the supervisor to finish (stopping the command first if it still runs), then
  // gives the command's wait status: the one the supervisor reaped, else how the supervisor
  // itself ended (killed from outside, its command then with it); nullopt when both are lost.
  std::optional<int> Reap() {
    if (!Exited()) Stop();
    const std::optional<int> own = child_.WaitStatus();
    reaped_ = true;
    int status = 0;
    ssize_t n = 0;
    while ((n = ::read(status_.get(), &status, sizeof(status))) < 0 && errno == EINTR) {}
    if (n == static_cast<ssize_t>(sizeof(status))) return status;
    if (own && WIFSIGNALED(*own)) return own;
    return std::nullopt;
  }

 private:
  process::ChildProcess child_;
  io::UniqueFd lifeline_;  // write end; the supervisor reads end-of-file when it closes
  io::UniqueFd status_;    // read end; the command's wait status, written before it exits
  bool reaped_ = false;
};

// Pipes from the worker to one command's supervisor, each end in the process that uses it.
struct Pipe {
  io::UniqueFd read;
  io::UniqueFd write;
};

Status MakePipe(Pipe& pipe, std::string_view what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return io::ErrnoStatus("pipe", what, errno);
  pipe.read = io::UniqueFd(fds[0]);
  pipe.write = io::UniqueFd(fds[1]);
  return Status::Ok();
}

Result<process::ChildProcess> Spawn(const std::string& command,
                                    const std::vector<std::string>& extra_env,
                                    const SupervisorFds& fds, int grace_ms) {
  // Everything the supervisor needs is prepared before fork: after it, in a threaded process,
  // only async-signal-safe calls are allowed.
  char sh[] = "/bin/sh";
  char dash_c[] = "-c";
  std::string text = command;
  char* argv[] = {sh, dash_c, text.data(), nullptr};
  std::vector<std::string> env_text;
  std::vector<char*> envp;
  if (!extra_env.empty()) {
    env_text = process::EnvironmentWith(extra_env);
    for (std::string& var : env_text) envp.push_back(var.data());
    envp.push_back(nullptr);
  }
  char* const* env = extra_env.empty() ? environ : envp.data();
  return process::ChildProcess::Fork("/bin/sh",
                                     [&] { RunSupervisor(argv, env, fds, grace_ms); });
}

}  // namespace

Result<ShellResult> RunShellCommand(const ShellCommand& command) {
  Pipe out, err, lifeline, report;
  COUPLER_RETURN_IF_ERROR(MakePipe(out, "(stdout)"));
  COUPLER_RETURN_IF_ERROR(MakePipe(err, "(stderr)"));
  COUPLER_RETURN_IF_ERROR(MakePipe(lifeline, "(supervisor lifeline)"));
  COUPLER_RETURN_IF_ERROR(MakePipe(report, "(supervisor status)"));

  const auto start = Clock::now();
  const int grace_ms = static_cast<int>(std::lround(std::max(0.0, command.kill_grace_s) * 1e3));
  COUPLER_ASSIGN_OR_RETURN(process::ChildProcess supervisor,
                           Spawn(command.command, command.env,
                                 {out.write.get(), err.write.get(), lifeline.read.get(),
                                  report.write.get()},
                                 grace_ms));
  ::fcntl(report.read.get(), F_SETFL, O_NONBLOCK);  // read once the supervisor has exited
  Supervisor child(std::move(supervisor), std::move(lifeline.write), std::move(report.read));
  // The supervisor holds these ends now; ours would hide end-of-file.
  out.write.Reset();
  err.write.Reset();
  lifeline.read.Reset();
  report.write.Reset();
  io::UniqueFd out_read = std::move(out.read);
  io::UniqueFd err_read = std::move(err.read);
  ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
  // Readable when the supervisor exits, so its exit wakes poll(); without it (old kernels) the
  // loop notices within one poll slice.
  io::UniqueFd exit_fd(PidFdOpen(child.pid()));

  Tail out_tail(command.tail_bytes);
  Tail err_tail(command.tail_bytes);
  ShellResult result;
  bool ending = false;  // the supervisor was told to stop the command (timeout or cancel)
  Clock::time_point exited_at;
  bool exited = false;
  const auto deadline =
      command.timeout_s > 0
          ? start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(command.timeout_s))
          : Clock::time_point::max();

  while (true) {
    const auto now = Clock::now();
    if (!exited && child.Exited()) {
      exited = true;
      exited_at = now;
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
        child.Stop();
      }
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
    int stream = 0;
    for (auto [fd, tail] : {std::pair{&out_read, &out_tail}, std::pair{&err_read, &err_tail}}) {
      ++stream;
      if (!fd->valid()) continue;
      // Bounded per wake-up, so a command writing without pause cannot keep the loop from
      // checking its deadline and the cancel flag.
      char buffer[16384];
      for (int reads = 0; reads < kReadsPerWake; ++reads) {
        const ssize_t n = ::read(fd->get(), buffer, sizeof(buffer));
        if (n > 0) {
          tail->Append(buffer, static_cast<size_t>(n));
          if (command.on_output) command.on_output(stream, std::string_view(buffer, static_cast<size_t>(n)));
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

bool IsBannerRule(std::string_view line) {
  return line.size() >= 10 && line.find_first_not_of('-') == std::string_view::npos;
}

std::string_view Trimmed(std::string_view line) {
  const size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return line.substr(begin, line.find_last_not_of(" \t\r") - begin + 1);
}

}  // namespace

std::string StderrSummary(std::string_view tail) {
  constexpr size_t kLines = 3;
  constexpr size_t kLineChars = 300;
  std::vector<std::string_view> lines;
  for (size_t at = 0; at <= tail.size();) {
    const size_t end = std::min(tail.find('\n', at), tail.size());
    if (const std::string_view line = Trimmed(tail.substr(at, end - at)); !line.empty()) {
      lines.push_back(line);
    }
    at = end + 1;
  }
  // From the end, which is always whole (the front of a tail may cut a banner in two).
  std::vector<std::string_view> kept;
  bool in_banner = false;
  for (size_t i = lines.size(); i-- > 0 && kept.size() < kLines;) {
    if (IsBannerRule(lines[i])) {
      in_banner = !in_banner;
    } else if (!in_banner) {
      kept.push_back(lines[i]);
    }
  }
  if (kept.empty()) {  // nothing outside banners: the last lines as they are
    for (size_t i = lines.size(); i-- > 0 && kept.size() < kLines;) kept.push_back(lines[i]);
  }
  std::string out;
  for (size_t i = kept.size(); i-- > 0;) {
    if (!out.empty()) out += " | ";
    const std::string_view line = kept[i];
    out += line.size() > kLineChars ? std::string(line.substr(0, kLineChars)) + "..."
                                    : std::string(line);
  }
  return out;
}

Result<ShellResult> RunOpCommand(std::string command, double timeout_s,
                                 const std::atomic<bool>* cancel, double& kernel_ms,
                                 TaskAttemptLogs* logs, std::vector<std::string> env,
                                 std::function<void(int stream, std::string_view data)> on_output) {
  ShellCommand shell;
  shell.command = std::move(command);
  shell.env = std::move(env);
  if (logs != nullptr) {
    logs->MarkCommand();
    shell.on_output = [logs, next = std::move(on_output)](int stream, std::string_view data) {
      logs->Feed(stream, data);
      if (next) next(stream, data);
    };
  } else {
    shell.on_output = std::move(on_output);
  }
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
  const std::string tail =
      r.stderr_tail.empty() ? "(no stderr output)" : StderrSummary(r.stderr_tail);
  switch (r.end) {
    case ShellResult::End::kCancelled: return Cancelled();
    case ShellResult::End::kTimedOut:
      return DeadlineExceeded("timed out after " + FormatSeconds(timeout_s) + " s" +
                              (r.stderr_tail.empty() ? "" : ": " + tail));
    case ShellResult::End::kSignaled:
      return Aborted(std::string(what) + " killed by signal " + std::to_string(r.signal) + " (" +
                     strsignal(r.signal) + "): " + tail);
    case ShellResult::End::kExited: break;
  }
  // Aborted, not InvalidArgument: the user's program may be flaky (a race, a resource another
  // host has), so a non-zero exit is retried like any other transient failure.
  return Aborted(std::string(what) + " exited with status " +
                         std::to_string(r.exit_status) + ": " + tail);
}

}  // namespace coupler::worker
