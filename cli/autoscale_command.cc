// `coupler autoscale`: polls a coordinator's advice (recommended_workers) and worker list,
// decides with client::ScalePolicy, and runs the operator's own commands (sbatch, kubectl
// scale, a script) to add workers or drain idle ones. The decisions are the policy's; this
// file is the I/O: the poll loop, the command templates and running them with a deadline.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/client_args.h"
#include "cli/commands.h"
#include "cli/signals.h"
#include "client/scale_policy.h"
#include "runtime/job/command_placeholders.h"
#include "runtime/logging.h"
#include "runtime/process/child_process.h"

namespace coupler::cli {
namespace {

using Ms = std::chrono::milliseconds;

struct AutoscaleArgs : ClientConnection {
  uint32_t min_workers = 1;
  uint32_t max_workers = 0;
  std::string up;
  std::string down;  // empty: drain through the client API
  // Durations in milliseconds (the options take 500ms, 2s, 1m, 1h).
  double interval_ms = 2'000;
  double cooldown_ms = 30'000;
  double up_cooldown_ms = 0;
  double launch_timeout_ms = 300'000;
  double backoff_ms = 10'000;
  double command_timeout_ms = 120'000;
  bool once = false;
  bool dry_run = false;
};

int64_t SteadyMs() {
  return std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Seconds(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%gs", std::round(ms / 100.0) / 10.0);
  return buf;
}

// An operator's command with {name} placeholders, checked once at start.
class CommandTemplate {
 public:
  // `allowed`: the placeholders this command may use; `needs_one`: at least one of these
  // must appear (an --up without {n} or {target} cannot know how many to start).
  static Result<CommandTemplate> Parse(const std::string& option, const std::string& text,
                                       const std::vector<std::string>& allowed,
                                       const std::vector<std::string>& needs_one) {
    CommandTemplate t;
    t.text_ = text;
    t.uses_ = job::FindPlaceholders(text);
    auto list = [](const std::vector<std::string>& names, const char* joiner) {
      std::string out;
      for (size_t i = 0; i < names.size(); ++i) {
        out += (i == 0 ? "" : (i + 1 == names.size() ? joiner : ", ")) + ("{" + names[i] + "}");
      }
      return out;
    };
    bool has_needed = false;
    for (const job::PlaceholderUse& use : t.uses_) {
      if (std::find(allowed.begin(), allowed.end(), use.name) == allowed.end()) {
        return InvalidArgument(option + ": unknown placeholder {" + use.name + "} at offset " +
                               std::to_string(use.offset) + "; it takes " +
                               list(allowed, " and "));
      }
      if (std::find(needs_one.begin(), needs_one.end(), use.name) != needs_one.end()) {
        has_needed = true;
      }
    }
    if (!has_needed) {
      return InvalidArgument(option + " must contain " + list(needs_one, " or ") + ": \"" + text +
                             "\"");
    }
    return t;
  }

  // The command with each placeholder replaced. The values are numbers and worker ids of
  // characters no shell treats specially (checked by the caller), so no quoting is needed
  // wherever the placeholder stands.
  std::string Render(const std::map<std::string, std::string>& values) const {
    std::string out = text_;
    for (auto it = uses_.rbegin(); it != uses_.rend(); ++it) {
      const auto v = values.find(it->name);
      if (v != values.end()) out.replace(it->offset, it->name.size() + 2, v->second);
    }
    return out;
  }

 private:
  std::string text_;
  std::vector<job::PlaceholderUse> uses_;
};

// Worker ids as sbatch scripts, pods and hosts name them. Anything else (an id is chosen by
// whoever holds a worker key) is not pasted into a shell command.
bool ShellSafeId(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
           c == ':' || c == '@' || c == '+';
  });
}

struct CommandOutcome {
  bool ok = false;
  std::string how;          // "exit 1", "timed out after 120s", "killed by signal 9"
  std::string stderr_text;  // the tail of what it wrote to stderr
};

std::string Tail(const std::string& text, size_t max_bytes, size_t max_lines) {
  std::string t = text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  size_t lines = 0;
  for (size_t i = t.size(); i-- > 0;) {
    if (t[i] == '\n' && ++lines == max_lines) return t.substr(i + 1);
  }
  return t;
}

// Runs `command` with /bin/sh -c in a process group of its own, stdout shared with ours and
// stderr kept in a file (not a pipe: a worker the command starts in the background inherits
// it, and a pipe would then never reach its end). Waits at most `timeout`; then the group is
// sent SIGTERM, and SIGKILL 5 s later.
CommandOutcome RunOperatorCommand(const std::string& command, Ms timeout) {
  CommandOutcome outcome;
  std::string err_path =
      (std::filesystem::temp_directory_path() / "coupler-autoscale-XXXXXX").string();
  const int fd = ::mkstemp(err_path.data());
  if (fd < 0) {
    outcome.how = "cannot create a file for its stderr in " +
                  std::filesystem::temp_directory_path().string();
    return outcome;
  }
  ::close(fd);
  std::fflush(stdout);  // our lines before the command's
  process::SpawnOptions spawn;
  spawn.argv = {"/bin/sh", "-c", command};
  spawn.stdin_path = "/dev/null";
  spawn.stderr_path = err_path;
  spawn.new_process_group = true;
  Result<process::ChildProcess> child = process::ChildProcess::Spawn(spawn);
  if (!child.ok()) {
    ::unlink(err_path.c_str());
    outcome.how = child.status().message();
    return outcome;
  }
  const std::optional<int> code = child->WaitFor(timeout);
  if (!code) {
    child->SignalGroup(SIGTERM);
    if (!child->WaitFor(std::chrono::seconds(5))) child->Kill();
    outcome.how = "timed out after " + Seconds(static_cast<double>(timeout.count()));
  } else if (*code == 0) {
    outcome.ok = true;
  } else if (*code == -1) {
    outcome.how = "its exit status was lost";
  } else if (*code > 128) {
    outcome.how = "killed by signal " + std::to_string(*code - 128);
  } else {
    outcome.how = "exit " + std::to_string(*code);
  }
  std::ifstream in(err_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  ::unlink(err_path.c_str());
  outcome.stderr_text = Tail(text.str(), 2048, 20);
  return outcome;
}

// Sleeps `ms` unless a stop is asked for first; false when it was.
bool SleepUnlessStopped(const std::atomic<bool>& stop, int64_t ms) {
  const int64_t end = SteadyMs() + ms;
  while (!stop.load()) {
    const int64_t left = end - SteadyMs();
    if (left <= 0) return true;
    std::this_thread::sleep_for(Ms(std::min<int64_t>(left, 50)));
  }
  return false;
}

class Autoscaler {
 public:
  Autoscaler(const AutoscaleArgs& args, CommandTemplate up, std::optional<CommandTemplate> down,
             client::ScaleConfig config)
      : args_(args), up_(std::move(up)), down_(std::move(down)), policy_(config) {}

  // One look and what it decides; false when the coordinator could not be asked or an
  // action failed (what --once exits with).
  bool Step() {
    if (!client_) {
      auto c = ConnectClient(args_);
      if (!c.ok()) return Unreachable(c.status());
      client_ = std::move(*c);
    }
    // One job is enough: the reply carries the coordinator's counters whatever the history.
    Result<wire::StatusReply> status = client_->Jobs(std::nullopt, 1);
    if (!status.ok()) return Unreachable(status.status());
    Result<std::vector<wire::WorkerStatus>> workers = client_->Workers();
    if (!workers.ok()) return Unreachable(workers.status());
    if (!unreachable_.empty()) {
      std::printf("autoscale: reached the coordinator at %s again\n", client_->endpoint().c_str());
      unreachable_.clear();
    }

    client::PoolObservation look;
    const wire::CoordinatorStats& c = status->coordinator;
    look.recommended_workers = c.recommended_workers;
    look.queued = c.queued_cpu_tasks + c.queued_gpu_tasks + c.queued_gang_ranks;
    look.workers = std::move(*workers);
    look.now_ms = SteadyMs();
    const client::ScaleDecision d = policy_.Decide(look);
    Logger("autoscale")->debug("look: recommended {}, queued {}, pool {} (pending {}, leaving {}): {}",
                               d.recommended, look.queued, d.pool, d.pending, d.leaving,
                               Summary(d));
    return Act(d, look.queued);
  }

 private:
  static std::string Summary(const client::ScaleDecision& d) {
    if (d.up) return "up " + std::to_string(d.up->n);
    if (!d.drains.empty()) {
      std::string s = "drain";
      for (const auto& drain : d.drains) s += " " + drain.worker_id;
      return s;
    }
    return d.hold.empty() ? "steady" : d.hold;
  }

  bool Unreachable(const Status& s) {
    const std::string text = ClientFailureText(args_, s);
    // Once per outage, not once per poll: a restarting coordinator is no reason to stop.
    if (text != unreachable_) std::fprintf(stderr, "autoscale: %s\n", text.c_str());
    unreachable_ = text;
    return false;
  }

  std::string Numbers(const client::ScaleDecision& d, uint64_t queued, const char* bound,
                      uint32_t bound_value) const {
    return "recommended " + std::to_string(d.recommended) + ", queued " + std::to_string(queued) +
           ", pool " + std::to_string(d.pool) + ", " + bound + " " + std::to_string(bound_value);
  }

  bool Act(const client::ScaleDecision& d, uint64_t queued) {
    bool ok = true;
    if (d.launches_timed_out > 0) {
      std::printf("autoscale: %u worker%s asked for did not register within %s: counted as a "
                  "failed launch\n",
                  d.launches_timed_out, d.launches_timed_out == 1 ? "" : "s",
                  Seconds(args_.launch_timeout_ms).c_str());
    }
    for (const std::string& id : d.drains_forgotten) {
      std::printf("autoscale: worker %s did not begin to drain within %s: counting it again\n",
                  id.c_str(), Seconds(args_.launch_timeout_ms).c_str());
    }
    if (d.up) {
      const std::string line = up_.Render(
          {{"n", std::to_string(d.up->n)}, {"target", std::to_string(d.up->target)}});
      std::printf("autoscale: up %u (%s): %s%s\n", d.up->n,
                  Numbers(d, queued, "max", args_.max_workers).c_str(),
                  args_.dry_run ? "would run " : "", line.c_str());
      if (!args_.dry_run && !Run("--up", line)) {
        const int64_t now = SteadyMs();
        policy_.LaunchFailed(now);
        std::printf("autoscale: no launch for %s (failed %u time%s in a row)\n",
                    Seconds(static_cast<double>(policy_.BackoffMs(policy_.consecutive_failures())))
                        .c_str(),
                    policy_.consecutive_failures(),
                    policy_.consecutive_failures() == 1 ? "" : "s");
        ok = false;
      }
    }
    for (const client::DrainAction& drain : d.drains) {
      if (!Drain(d, queued, drain)) {
        policy_.DrainFailed(drain.worker_id, SteadyMs());
        ok = false;
      }
    }
    // A line when what holds it back changes, not one per poll.
    const std::string situation = d.up || !d.drains.empty()
                                      ? ""
                                      : HoldKind(d.hold) + "/" + std::to_string(d.recommended) +
                                            "/" + std::to_string(d.pool) + "/" +
                                            std::to_string(d.pending) + "/" +
                                            std::to_string(d.leaving);
    if (!situation.empty() && situation != last_situation_) {
      std::printf("autoscale: %s (%s, pending %u, leaving %u)\n",
                  d.hold.empty() ? "steady" : ("holding: " + d.hold).c_str(),
                  Numbers(d, queued, "wanted", d.wanted).c_str(), d.pending, d.leaving);
    }
    last_situation_ = situation;
    std::fflush(stdout);
    return ok;
  }

  // The hold's words without its numbers ("next try in 4.1s"), to tell a new situation from
  // the same one a poll later.
  static std::string HoldKind(const std::string& hold) {
    std::string kind;
    for (char ch : hold) {
      if (std::isdigit(static_cast<unsigned char>(ch)) == 0 && ch != '.') kind += ch;
    }
    return kind;
  }

  bool Drain(const client::ScaleDecision& d, uint64_t queued, const client::DrainAction& drain) {
    const std::string numbers = Numbers(d, queued, "min", args_.min_workers);
    if (!down_) {
      std::printf("autoscale: drain %s (%s): %sthrough the coordinator\n", drain.worker_id.c_str(),
                  numbers.c_str(), args_.dry_run ? "would drain " : "");
      if (args_.dry_run) return true;
      Result<std::string> r = client_->Drain(drain.worker_id);
      if (!r.ok()) {
        std::fprintf(stderr, "autoscale: drain %s failed: %s\n", drain.worker_id.c_str(),
                     ClientFailureText(args_, r.status()).c_str());
        return false;
      }
      return true;
    }
    if (!ShellSafeId(drain.worker_id)) {
      std::fprintf(stderr,
                   "autoscale: not draining worker \"%s\": its id has characters a shell reads "
                   "(only letters, digits and . _ - : @ + are put into --down)\n",
                   drain.worker_id.c_str());
      return false;
    }
    const std::string line =
        down_->Render({{"worker", drain.worker_id}, {"target", std::to_string(drain.target)}});
    std::printf("autoscale: drain %s (%s): %s%s\n", drain.worker_id.c_str(), numbers.c_str(),
                args_.dry_run ? "would run " : "", line.c_str());
    return args_.dry_run || Run("--down", line);
  }

  bool Run(const char* option, const std::string& line) {
    const CommandOutcome r =
        RunOperatorCommand(line, Ms(static_cast<int64_t>(args_.command_timeout_ms)));
    if (r.ok) {
      if (!r.stderr_text.empty()) std::fprintf(stderr, "%s\n", r.stderr_text.c_str());
      return true;
    }
    std::fprintf(stderr, "autoscale: %s command failed (%s): %s\n", option, r.how.c_str(),
                 line.c_str());
    if (!r.stderr_text.empty()) std::fprintf(stderr, "%s\n", r.stderr_text.c_str());
    return false;
  }

  const AutoscaleArgs& args_;
  CommandTemplate up_;
  std::optional<CommandTemplate> down_;
  client::ScalePolicy policy_;
  std::unique_ptr<client::Client> client_;
  std::string unreachable_;     // the last failure to reach the coordinator, while it lasts
  std::string last_situation_;  // of the last hold line printed
};

int BadInput(const std::string& message) {
  std::fprintf(stderr, "coupler autoscale: %s\n", message.c_str());
  return kExitBadInput;
}

int RunAutoscale(const AutoscaleArgs& a) {
  if (a.max_workers == 0) return BadInput("--max must be at least 1");
  if (a.min_workers > a.max_workers) {
    return BadInput("--min " + std::to_string(a.min_workers) + " is above --max " +
                    std::to_string(a.max_workers));
  }
  if (a.interval_ms < 10) return BadInput("--interval must be at least 10ms");
  if (a.command_timeout_ms < 1) return BadInput("--command-timeout must be positive");
  Result<CommandTemplate> up =
      CommandTemplate::Parse("--up", a.up, {"n", "target"}, {"n", "target"});
  if (!up.ok()) return BadInput(up.status().message());
  std::optional<CommandTemplate> down;
  if (!a.down.empty()) {
    Result<CommandTemplate> d =
        CommandTemplate::Parse("--down", a.down, {"worker", "target"}, {"worker"});
    if (!d.ok()) return BadInput(d.status().message());
    down = std::move(*d);
  }

  client::ScaleConfig config;
  config.min_workers = a.min_workers;
  config.max_workers = a.max_workers;
  config.cooldown_down_ms = static_cast<int64_t>(a.cooldown_ms);
  config.cooldown_up_ms = static_cast<int64_t>(a.up_cooldown_ms);
  config.launch_timeout_ms = static_cast<int64_t>(a.launch_timeout_ms);
  config.backoff_ms = std::max<int64_t>(1, static_cast<int64_t>(a.backoff_ms));
  config.max_backoff_ms = std::max<int64_t>(config.backoff_ms, 600'000);
  if (a.once) {
    // One look, no memory: the period of whatever runs it (cron) is the cool-down.
    config.cooldown_down_ms = 0;
    config.cooldown_up_ms = 0;
  }

  const std::atomic<bool>& stop = StopRequested();
  Autoscaler scaler(a, std::move(*up), std::move(down), config);
  if (a.once) return scaler.Step() ? kExitOk : kExitFailure;
  std::printf("autoscale: keeping %u to %u workers, a look every %s, scale-down after %s below "
              "the advice\n",
              a.min_workers, a.max_workers, Seconds(a.interval_ms).c_str(),
              Seconds(a.cooldown_ms).c_str());
  std::fflush(stdout);
  while (!stop.load()) {
    (void)scaler.Step();
    if (!SleepUnlessStopped(stop, static_cast<int64_t>(a.interval_ms))) break;
  }
  std::printf("autoscale: stopped; the pool stays as it is\n");
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

void AddAutoscaleCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<AutoscaleArgs>();
  CLI::App* c = ClientCommand(
      app, "autoscale",
      "Grow and shrink the worker pool with your own commands, following the coordinator's "
      "recommended_workers (docs/autoscale.md)",
      *args);
  const std::map<std::string, double> units = {
      {"ms", 1.0}, {"s", 1000.0}, {"m", 60'000.0}, {"h", 3'600'000.0}};
  auto duration = [&units] {
    return CLI::AsNumberWithUnit(units, CLI::AsNumberWithUnit::UNIT_REQUIRED, "DURATION");
  };
  c->add_option("--min", args->min_workers, "never fewer workers than this")->capture_default_str();
  c->add_option("--max", args->max_workers,
                "never more workers than this, counting those asked for and those draining")
      ->required();
  c->add_option("--up", args->up,
                "command that starts workers: {n} how many to add, {target} the pool after, "
                "e.g. 'sbatch --array=1-{n} coupler-workers.sbatch'")
      ->required();
  c->add_option("--down", args->down,
                "command that drains one idle worker: {worker} its id (required), {target} the "
                "pool after; default: drain it through the coordinator");
  c->add_option("--interval", args->interval_ms, "time between two looks, e.g. 2s")
      ->transform(duration())
      ->type_name("DURATION")
      ->default_str("2s");
  c->add_option("--cooldown", args->cooldown_ms,
                "how long the advice must stay below the pool before a worker is drained")
      ->transform(duration())
      ->type_name("DURATION")
      ->default_str("30s");
  c->add_option("--up-cooldown", args->up_cooldown_ms, "least time between two scale-ups")
      ->transform(duration())
      ->type_name("DURATION")
      ->default_str("0s");
  c->add_option("--launch-timeout", args->launch_timeout_ms,
                "workers asked for and not registered within this long count as a failed launch")
      ->transform(duration())
      ->type_name("DURATION")
      ->default_str("5m");
  c->add_option("--backoff", args->backoff_ms,
                "after a failed launch, wait this long before the next (doubled per failure in "
                "a row, up to 10m)")
      ->transform(duration())
      ->type_name("DURATION")
      ->default_str("10s");
  c->add_option("--command-timeout", args->command_timeout_ms,
                "an --up or --down command still running after this long is killed and failed")
      ->transform(duration())
      ->type_name("DURATION")
      ->default_str("2m");
  c->add_flag("--once", args->once,
              "one look and its actions, then exit (for cron; no cool-downs, no memory)");
  c->add_flag("--dry-run", args->dry_run, "print the commands instead of running them");
  c->callback([args, run] { *run = [args] { return RunAutoscale(*args); }; });
}

}  // namespace coupler::cli
