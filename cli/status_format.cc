#include "cli/status_format.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/util/json_writer.h"

namespace coupler::cli {
namespace {

void WriteJob(json::Writer& w, const wire::JobStatus& j) {
  w.BeginObject();
  w.Field("id", j.id);
  w.Field("name", j.name);
  w.Field("state", j.state);
  w.BeginObject("tasks");
  w.Field("total", j.tasks_total);
  w.Field("queued", j.tasks_queued);
  w.Field("running", j.tasks_running);
  w.Field("done", j.tasks_done);
  w.Field("failed", j.tasks_failed);
  w.EndObject();
  w.Field("attempts", j.attempts);
  w.Field("error", j.error);
  w.Field("submitted_ms", j.submitted_ms);
  w.Field("finished_ms", j.finished_ms);
  w.BeginObject("devices");
  for (const auto& [device, n] : j.devices) w.Field(device, n);
  w.EndObject();
  w.Field("gpu_fallbacks", j.gpu_fallbacks);
  w.BeginArray("nodes");
  for (const auto& n : j.nodes) {
    w.BeginObject();
    w.Field("id", n.id);
    w.Field("state", n.state);
    w.Field("tasks", n.tasks_total);
    w.Field("done", n.tasks_done);
    w.Field("attempts", n.attempts);
    w.Field("error", n.error);
    w.Field("ranks", n.ranks);
    w.Field("reason", n.reason);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

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

std::string JobStatusJson(const wire::JobStatus& job) {
  json::Writer w;
  WriteJob(w, job);
  return w.Finish();
}

std::string StatusReplyJson(const wire::StatusReply& reply) {
  json::Writer w;
  w.BeginObject();
  w.BeginArray("jobs");
  for (const auto& j : reply.jobs) WriteJob(w, j);
  w.EndArray();
  w.BeginObject("coordinator");
  w.Field("messages_received", reply.coordinator.messages_received);
  w.Field("messages_dropped", reply.coordinator.messages_dropped);
  w.Field("workers_alive", reply.coordinator.workers_alive);
  w.Field("uptime_ms", reply.coordinator.uptime_ms);
  w.BeginObject("queued");
  w.Field("cpu_tasks", reply.coordinator.queued_cpu_tasks);
  w.Field("gpu_tasks", reply.coordinator.queued_gpu_tasks);
  w.Field("gang_ranks", reply.coordinator.queued_gang_ranks);
  w.EndObject();
  w.Field("recommended_workers", reply.coordinator.recommended_workers);
  w.EndObject();
  w.EndObject();
  return w.Finish();
}

std::string WorkersJson(const std::vector<wire::WorkerStatus>& workers) {
  json::Writer w;
  w.BeginArray();
  for (const auto& s : workers) {
    w.BeginObject();
    w.Field("id", s.id);
    w.Field("host", s.host);
    w.Field("slots", s.slots);
    w.Field("running", s.running);
    w.Field("state", s.state);
    w.BeginArray("gpus");
    for (const auto& g : s.gpus) {
      w.BeginObject();
      w.Field("index", g.index);
      w.Field("name", g.name);
      w.Field("total_memory", g.total_memory);
      w.Field("free_memory", g.free_memory);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  return w.Finish();
}

std::string JobStatusText(const wire::JobStatus& j) {
  std::string out = fmt::format("job {} ({}): {}  {}/{} tasks done, {} running, {} queued, "
                                "{} failed, {} attempts\n",
                                j.id, j.name, j.state, Thousands(j.tasks_done),
                                Thousands(j.tasks_total), j.tasks_running, j.tasks_queued,
                                j.tasks_failed, j.attempts);
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
  size_t w = 4;
  for (const auto& n : j.nodes) w = std::max(w, n.id.size());
  for (const auto& n : j.nodes) {
    std::string note = n.ranks > 0 ? fmt::format("  group of {} ranks", n.ranks) : "";
    if (!n.reason.empty()) note += "  " + n.reason;
    if (!n.error.empty()) note += "  " + n.error;
    out += fmt::format("  {:<{}}  {:<9}  {:>8}/{:<8}  {} attempts{}\n", n.id, w, n.state,
                       n.tasks_done, n.tasks_total, n.attempts, note);
  }
  return out;
}

std::string WorkersText(const std::vector<wire::WorkerStatus>& workers) {
  std::string out = fmt::format("{:<28}  {:<16}  {:>5}  {:>7}  {:<8}  {}\n", "WORKER", "HOST",
                                "SLOTS", "RUNNING", "STATE", "GPUS");
  for (const auto& s : workers) {
    out += fmt::format("{:<28}  {:<16}  {:>5}  {:>7}  {:<8}  {}\n", s.id, s.host, s.slots,
                       s.running, s.state, s.gpus.size());
  }
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
