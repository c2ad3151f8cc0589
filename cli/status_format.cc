#include "cli/status_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "coordinator/placement/placement.h"
#include "runtime/util/byte_size.h"

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

}  // namespace

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
    out += fmt::format("  gpu {}: {}% busy, {} of {} used\n", g.index, g.utilization_percent,
                       GpuMemoryText(g.used_memory), GpuMemoryText(g.total_memory));
  }
  // A GPU worker without samples says why, so no reader takes the missing figures for 0%.
  if (s.gpu_usage.empty() && !s.gpus.empty()) {
    out += "  gpu utilization: " + (s.gpu_sampling.empty() ? "not reported" : s.gpu_sampling) +
           "\n";
  }
  if (!s.warning.empty()) out += "  warning: " + s.warning + "\n";
  return out;
}

std::string JobStatusText(const wire::JobStatus& j) {
  std::string out = fmt::format("job {} ({}): {}  {}/{} tasks done, {} running, {} queued, "
                                "{} failed, {} attempts\n",
                                j.id, j.name, j.state, Thousands(j.tasks_done),
                                Thousands(j.tasks_total), j.tasks_running, j.tasks_queued,
                                j.tasks_failed, j.attempts);
  if (!j.submitted_by.empty()) out += "  submitted by: " + j.submitted_by + "\n";
  if (!j.error.empty()) out += "  error: " + j.error + "\n";
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
    if (!n.reason.empty()) note += "  " + n.reason;
    if (!n.error.empty()) note += "  " + n.error;
    out += fmt::format("  {:<{}}  {:<9}  {:>8}/{:<8}  {} attempts{}\n", n.id, w, n.state,
                       n.tasks_done, n.tasks_total, n.attempts, note);
  }
  return out;
}

std::string WorkersText(const std::vector<wire::WorkerStatus>& workers) {
  size_t id_w = 6, addr_w = 7, host_w = 4;
  for (const auto& s : workers) {
    id_w = std::max(id_w, s.id.size());
    addr_w = std::max(addr_w, s.address.size());
    host_w = std::max(host_w, s.host.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<8}  {:>5}  {:>7}  {:<24}  {}\n",
                                "WORKER", id_w, "ADDRESS", addr_w, "HOST", host_w, "STATE",
                                "SLOTS", "LOAD", "GPUS", "LABELS");
  for (const auto& s : workers) {
    const std::string labels = coordinator::DescribeLabels(s.labels);
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<8}  {:>5}  {:>7}  {:<24}  {}\n", s.id, id_w,
                       s.address, addr_w, s.host, host_w, s.state, s.slots,
                       fmt::format("{}/{}", s.running, s.slots), DescribeGpus(s.gpus),
                       labels.empty() ? "-" : labels);
    out += GpuUsageLines(s);
  }
  return out;
}

std::string CoordinatorText(const wire::CoordinatorStats& c) {
  std::string out = fmt::format("coordinator: {} workers alive, {} messages received, {} dropped\n",
                                c.workers_alive, Thousands(c.messages_received),
                                Thousands(c.messages_dropped));
  // What an operator sizing the pool by hand reads; the same numbers as `status --json`.
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
                     Thousands(j.tasks_done), Thousands(j.tasks_total), pct, rate, eta, j.state);
}

}  // namespace coupler::cli
