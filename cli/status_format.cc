#include "cli/status_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "coordinator/placement/placement.h"
#include "runtime/pool/gpu_health.h"
#include "runtime/util/byte_size.h"
#include "runtime/util/utc_time.h"
#include "runtime/wire/envelope.h"

namespace coupler::cli {
namespace {

std::string Thousands(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string Seconds(int64_t ms) {
  if (ms < 60'000) return fmt::format("{:.1f} s", double(ms) / 1000.0);
  const int64_t s = ms / 1000;
  if (s < 3600) return fmt::format("{} min {:02d} s", s / 60, s % 60);
  return fmt::format("{} h {:02d} min", s / 3600, (s % 3600) / 60);
}

}  // namespace

std::string JobDuration(const wire::JobStatus& j, int64_t now_ms) {
  if (j.submitted_ms <= 0) return "-";
  const int64_t end = j.finished_ms > 0 ? j.finished_ms : now_ms;
  return Seconds(std::max<int64_t>(0, end - j.submitted_ms));
}

std::string GpuMemoryText(uint64_t bytes) {
  // "80 GiB" rather than "80.0 GiB": GPU sizes are round numbers.
  std::string text = util::FormatBytes(bytes);
  const size_t dot = text.find(".0 ");
  if (dot != std::string::npos) text.erase(dot, 2);
  return text;
}

std::string DescribeGpus(const std::vector<wire::GpuInfo>& gpus) {
  if (gpus.empty()) return "-";
  // Identical devices (the usual node) read as one "2x NAME (80 GiB)".
  std::string out;
  for (size_t i = 0; i < gpus.size();) {
    size_t same = i + 1;
    while (same < gpus.size() && gpus[same].name == gpus[i].name &&
           gpus[same].total_memory == gpus[i].total_memory) {
      ++same;
    }
    if (!out.empty()) out += ", ";
    out += fmt::format("{}x {} ({})", same - i, gpus[i].name.empty() ? "GPU" : gpus[i].name,
                       GpuMemoryText(gpus[i].total_memory));
    i = same;
  }
  return out;
}

std::string GpuUsageLines(const wire::WorkerStatus& s) {
  std::string out;
  for (const wire::GpuUsage& g : s.gpu_usage) {
    const std::string health = pool::DescribeHealth(g);
    out += fmt::format("  gpu {}: {}% busy, {} of {} used{}\n", g.index, g.utilization_percent,
                       GpuMemoryText(g.used_memory), GpuMemoryText(g.total_memory),
                       health.empty() ? "" : ", " + health);
  }
  // What placement avoids, and why: the operator's way back is `coupler worker clear-gpu`.
  for (const wire::GpuFence& f : s.gpu_fences) {
    out += fmt::format("  gpu {}: fenced since {}: {}\n", f.index,
                       util::Iso8601Utc(static_cast<int64_t>(f.since_ms)), f.reason);
  }
  // A GPU worker without samples says why, so no reader takes the missing figures for 0%.
  if (s.gpu_usage.empty() && !s.gpus.empty()) {
    out += "  gpu utilization: " + (s.gpu_sampling.empty() ? "not reported" : s.gpu_sampling) +
           "\n";
  }
  if (!s.warning.empty()) out += "  warning: " + s.warning + "\n";
  return out;
}

bool IsJobError(const wire::JobStatus& j, const wire::NodeStatus& n) {
  return !n.error.empty() && j.error == "node '" + n.id + "': " + n.error;
}

std::string JobStatusText(const wire::JobStatus& j, int64_t now_ms,
                          const std::map<std::string, job::StepProgress>& progress) {
  std::string out = fmt::format("job {} ({}): {}  {}/{} tasks done, {} running, {} prefetched, "
                                "{} queued, {} failed, {} attempts\n",
                                j.id, j.name, job::JobPhaseName(j.state), Thousands(j.tasks_done),
                                Thousands(j.tasks_total), Thousands(j.tasks_running),
                                Thousands(j.tasks_prefetched), Thousands(j.tasks_queued),
                                Thousands(j.tasks_failed), Thousands(j.attempts));
  out += fmt::format("  duration: {}{}\n", JobDuration(j, now_ms),
                     j.finished_ms > 0 || j.submitted_ms <= 0 ? "" : " so far");
  if (!j.submitted_by.empty()) out += "  submitted by: " + j.submitted_by + "\n";
  if (!j.error.empty()) out += "  error: " + j.error + "\n";
  if (!j.workdir.empty()) out += "  run dir: " + j.workdir + "\n";
  if (!j.devices.empty()) {
    std::string devices;
    for (const auto& [device, n] : j.devices) {
      devices += fmt::format("{}{} {} tasks", devices.empty() ? "" : ", ", device, Thousands(n));
    }
    out += "  devices: " + devices + "\n";
  }
  if (j.gpu_fallbacks > 0) {
    out += fmt::format("  warning: {} task(s) asked for a GPU and ran on the CPU\n",
                       Thousands(j.gpu_fallbacks));
  }
  for (const auto& r : j.refused_hosts) {
    out += fmt::format("  not sent to worker {} ({}): {}\n", r.worker_id, r.address, r.reason);
  }
  size_t w = 4;
  for (const auto& n : j.nodes) w = std::max(w, n.id.size());
  for (const auto& n : j.nodes) {
    std::string note = n.ranks > 0 ? fmt::format("  group of {} ranks", n.ranks) : "";
    if (!n.hosts.empty()) {
      std::string hosts;
      for (const auto& h : n.hosts) hosts += (hosts.empty() ? "" : ",") + h;
      note += " on " + hosts;
    }
    if (n.reused) note += "  reused from " + n.reused_from;
    if (auto it = progress.find(n.id); it != progress.end()) {
      note += "  " + job::StepProgressText(it->second);
    }
    if (!n.reason.empty()) note += "  " + n.reason;
    std::string load;
    if (n.tasks_running > 0 || n.tasks_prefetched > 0) {
      load = fmt::format("  {} running, {} prefetched", n.tasks_running, n.tasks_prefetched);
    }
    out += fmt::format("  {:<{}}  {:<9}  {:>8}/{:<8}  {} attempts{}{}\n", n.id, w, job::NodePhaseName(n.state),
                       n.tasks_done, n.tasks_total, n.attempts, load, note);
    // The job's error, said above, is not said again.
    if (!n.error.empty() && !IsJobError(j, n)) {
      out += fmt::format("  {:<{}}  error: {}\n", "", w, n.error);
    }
  }
  return out;
}

std::string JobListText(const std::vector<wire::JobStatus>& jobs, int64_t now_ms, bool more) {
  if (jobs.empty()) return "no jobs\n";
  size_t id_w = 2, name_w = 4, state_w = 5, done_w = 4;
  std::vector<std::string> done;
  for (const auto& j : jobs) {
    done.push_back(Thousands(j.tasks_done) + "/" + Thousands(j.tasks_total));
    id_w = std::max(id_w, j.id.size());
    name_w = std::max(name_w, j.name.size());
    state_w = std::max(state_w, job::JobPhaseName(j.state).size());
    done_w = std::max(done_w, done.back().size());
  }
  const auto line = [&](const std::string& id, const std::string& name, const std::string& state,
                        const std::string& d, const std::string& running,
                        const std::string& prefetched, const std::string& queued,
                        const std::string& duration) {
    return fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>7}  {:>10}  {:>7}  {}\n", id, id_w,
                       name, name_w, state, state_w, d, done_w, running, prefetched, queued,
                       duration);
  };
  std::string out = line("ID", "NAME", "STATE", "DONE", "RUNNING", "PREFETCHED", "QUEUED", "DURATION");
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& j = jobs[i];
    out += line(j.id, j.name, std::string(job::JobPhaseName(j.state)), done[i], Thousands(j.tasks_running),
                Thousands(j.tasks_prefetched), Thousands(j.tasks_queued), JobDuration(j, now_ms));
  }
  if (more) out += "more jobs not shown: use --limit N (0: all) or --state STATE\n";
  return out;
}

std::string JobSummaryText(const wire::JobStatus& j, double wall_s) {
  std::string devices;
  for (const auto& [d, n] : j.devices) {
    devices += fmt::format("{}{}: {} tasks", devices.empty() ? "" : ", ", d, n);
  }
  std::string out = fmt::format("job {} ({}) {}: {}/{} tasks, {} attempts, {:.2f} s wall, "
                                "{:.0f} tasks/s\n",
                                j.id, j.name, job::JobPhaseName(j.state), j.tasks_done, j.tasks_total, j.attempts,
                                wall_s, wall_s > 0 ? double(j.tasks_done) / wall_s : 0.0);
  out += fmt::format("devices: {}\n", devices.empty() ? "none" : devices);
  if (j.gpu_fallbacks > 0) {
    out += fmt::format("warning: {} task(s) asked for a GPU and ran on the CPU\n", j.gpu_fallbacks);
  }
  for (const auto& n : j.nodes) {
    const std::string group = n.ranks > 0 ? fmt::format(" (group of {} ranks)", n.ranks) : "";
    const std::string reused = n.reused ? "  reused from " + n.reused_from : "";
    out += fmt::format("  {:<20} {:<9} {}/{} tasks{}, {} attempts{}\n", n.id, job::NodePhaseName(n.state),
                       n.tasks_done, n.tasks_total, group, n.attempts, reused);
    if (!n.error.empty() && !IsJobError(j, n)) out += fmt::format("  {:<20} error: {}\n", "", n.error);
  }
  // Where this run's files are: its own run directory, {node}/part-NNNNN.npz (.npy) inside.
  if (!j.workdir.empty()) out += fmt::format("outputs: {}\n", j.workdir);
  return out;
}

std::string WorkersText(const std::vector<wire::WorkerStatus>& workers) {
  size_t id_w = 6, addr_w = 7, host_w = 4;
  for (const auto& s : workers) {
    id_w = std::max(id_w, s.id.size());
    addr_w = std::max(addr_w, s.address.size());
    host_w = std::max(host_w, s.host.size());
  }
  std::string out =
      fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<8}  {:>5}  {:>7}  {:>10}  {:<24}  {}\n", "WORKER",
                  id_w, "ADDRESS", addr_w, "HOST", host_w, "STATE", "SLOTS", "RUNNING",
                  "PREFETCHED", "GPUS", "LABELS");
  for (const auto& s : workers) {
    const std::string labels = coordinator::DescribeLabels(s.labels);
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<8}  {:>5}  {:>7}  {:>10}  {:<24}  {}\n", s.id,
                       id_w, s.address, addr_w, s.host, host_w, pool::WorkerStateName(s.state), s.slots, s.running,
                       s.prefetched, DescribeGpus(s.gpus), labels.empty() ? "-" : labels);
    if (!s.ban_reason.empty()) out += "    banned " + s.ban_reason + "\n";
    // During an upgrade: who still speaks the previous protocol version.
    if (s.protocol_version != 0 && s.protocol_version != wire::kProtocolVersion) {
      out += fmt::format("    speaks protocol {} (this coordinator's clients speak {})\n",
                         s.protocol_version, wire::kProtocolVersion);
    }
    out += GpuUsageLines(s);
  }
  return out;
}

std::string CoordinatorText(const wire::CoordinatorStats& c) {
  std::string out = fmt::format("coordinator: {} workers alive, {} messages received, {} dropped\n",
                                c.workers_alive, Thousands(c.messages_received),
                                Thousands(c.messages_dropped));
  // What an operator sizing the pool by hand reads; the same numbers as `status --json`.
  out += fmt::format("tasks: {} running, {} prefetched (sent to workers, waiting for a slot)\n",
                     Thousands(c.running_tasks), Thousands(c.prefetched_tasks));
  out += fmt::format("queued: {} cpu tasks, {} gpu tasks, {} gang ranks; recommended workers: {}\n",
                     Thousands(c.queued_cpu_tasks), Thousands(c.queued_gpu_tasks),
                     Thousands(c.queued_gang_ranks), c.recommended_workers);
  out += fmt::format("security: {}; {} handshakes refused, {} registrations refused, {} stale "
                     "outcomes dropped\n",
                     c.encrypted ? "CURVE, allow-listed keys" : "INSECURE (plaintext)",
                     Thousands(c.handshakes_refused), Thousands(c.registrations_refused),
                     Thousands(c.stale_outcomes_dropped));
  if (!c.store_error.empty()) {
    out += "STATE NOT WRITABLE, dispatch stopped: " + c.store_error + "\n";
  }
  for (const std::string& warning : c.warnings) out += "warning: " + warning + "\n";
  return out;
}

std::string ProgressLine(const wire::JobStatus& j, double elapsed_s) {
  const double pct = j.tasks_total == 0 ? 100.0 : 100.0 * double(j.tasks_done) / double(j.tasks_total);
  const double rate = elapsed_s > 0 ? double(j.tasks_done) / elapsed_s : 0.0;
  std::string eta = "-";
  if (rate > 0 && j.tasks_done < j.tasks_total) {
    eta = fmt::format("{:.1f} s", double(j.tasks_total - j.tasks_done) / rate);
  }
  return fmt::format("{}  {}/{} tasks  {:.1f}%  {:.0f} tasks/s  ETA {}  [{}]", j.id,
                     Thousands(j.tasks_done), Thousands(j.tasks_total), pct, rate, eta, job::JobPhaseName(j.state));
}

}  // namespace coupler::cli
