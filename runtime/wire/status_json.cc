#include "runtime/wire/status_json.h"

namespace coupler::wire {

void WriteJobStatus(json::Writer& w, const JobStatus& j,
                    const std::map<std::string, job::StepProgress>* progress) {
  w.BeginObject();
  w.Field("id", j.id);
  w.Field("name", j.name);
  w.Field("state", job::JobPhaseName(j.state));
  w.BeginObject("tasks");
  w.Field("total", j.tasks_total);
  w.Field("queued", j.tasks_queued);
  w.Field("prefetched", j.tasks_prefetched);
  w.Field("running", j.tasks_running);
  w.Field("done", j.tasks_done);
  w.Field("failed", j.tasks_failed);
  w.EndObject();
  w.Field("attempts", j.attempts);
  w.Field("error", j.error);
  w.Field("submitted_ms", j.submitted_ms);
  w.Field("finished_ms", j.finished_ms);
  w.Field("submitted_by", j.submitted_by);
  w.Field("submission_id", j.submission_id);
  w.Field("workdir", j.workdir);
  w.BeginObject("devices");
  for (const auto& [device, n] : j.devices) w.Field(device, n);
  w.EndObject();
  w.Field("gpu_fallbacks", j.gpu_fallbacks);
  w.BeginArray("refused_hosts");
  for (const auto& r : j.refused_hosts) {
    w.BeginObject();
    w.Field("worker", r.worker_id);
    w.Field("address", r.address);
    w.Field("reason", r.reason);
    w.EndObject();
  }
  w.EndArray();
  w.BeginArray("nodes");
  for (const auto& n : j.nodes) {
    w.BeginObject();
    w.Field("id", n.id);
    w.Field("state", job::NodePhaseName(n.state));
    w.Field("tasks", n.tasks_total);
    w.Field("done", n.tasks_done);
    w.Field("running", n.tasks_running);
    w.Field("prefetched", n.tasks_prefetched);
    w.Field("attempts", n.attempts);
    w.Field("error", n.error);
    w.Field("ranks", n.ranks);
    w.Field("reason", n.reason);
    w.Field("reused", n.reused);
    if (n.reused) w.Field("reused_from", n.reused_from);
    w.BeginArray("hosts");
    for (const auto& h : n.hosts) w.String(h);
    w.EndArray();
    if (progress != nullptr) {
      if (auto it = progress->find(n.id); it != progress->end()) {
        w.BeginObject("progress");
        w.Field("step", it->second.step);
        w.Field("time", it->second.time);
        w.BeginObject("metrics");
        for (const auto& [name, value] : it->second.metrics) w.Field(name, value);
        w.EndObject();
        w.EndObject();
      }
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

std::string JobStatusJson(const JobStatus& job,
                          const std::map<std::string, job::StepProgress>* progress) {
  json::Writer w;
  WriteJobStatus(w, job, progress);
  return w.Finish();
}

std::string StatusReplyJson(const StatusReply& reply) {
  json::Writer w;
  w.BeginObject();
  w.BeginArray("jobs");
  for (const auto& j : reply.jobs) WriteJobStatus(w, j);
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
  w.Field("running_tasks", reply.coordinator.running_tasks);
  w.Field("prefetched_tasks", reply.coordinator.prefetched_tasks);
  w.Field("recommended_workers", reply.coordinator.recommended_workers);
  w.Field("longest_partial_hold_ms", reply.coordinator.longest_partial_hold_ms);
  w.Field("encrypted", reply.coordinator.encrypted);
  w.Field("handshakes_refused", reply.coordinator.handshakes_refused);
  w.Field("registrations_refused", reply.coordinator.registrations_refused);
  w.Field("stale_outcomes_dropped", reply.coordinator.stale_outcomes_dropped);
  w.Field("replies_dropped", reply.coordinator.replies_dropped);
  w.Field("store_error", reply.coordinator.store_error);
  w.BeginArray("warnings");
  for (const auto& warning : reply.coordinator.warnings) w.String(warning);
  w.EndArray();
  w.EndObject();
  w.EndObject();
  return w.Finish();
}

std::string WorkersJson(const std::vector<WorkerStatus>& workers) {
  json::Writer w;
  w.BeginArray();
  for (const auto& s : workers) {
    w.BeginObject();
    w.Field("id", s.id);
    w.Field("host", s.host);
    w.Field("address", s.address);
    w.Field("slots", s.slots);
    w.Field("running", s.running);
    w.Field("prefetched", s.prefetched);
    w.Field("tasks_done", s.tasks_done);
    w.Field("heard_ms_ago", s.heard_ms_ago);
    w.Field("state", pool::WorkerStateName(s.state));
    w.Field("ban_reason", s.ban_reason);
    w.Field("protocol_version", s.protocol_version);
    w.Field("cpus", s.cpus);
    w.Field("memory_bytes", s.memory_bytes);
    w.BeginObject("labels");
    for (const auto& [key, value] : s.labels) w.Field(key, value);
    w.EndObject();
    w.BeginArray("gpus");
    for (const auto& g : s.gpus) {
      w.BeginObject();
      w.Field("index", g.index);
      w.Field("name", g.name);
      w.Field("total_memory", g.total_memory);
      w.Field("free_memory", g.free_memory);
      w.Field("uuid", g.uuid);
      w.EndObject();
    }
    w.EndArray();
    // Live samples; an empty list with gpu_sampling saying why ("no NVML: ...", "no GPUs"),
    // never zeros, when there are none.
    w.BeginArray("gpu_usage");
    for (const auto& g : s.gpu_usage) {
      w.BeginObject();
      w.Field("index", g.index);
      w.Field("utilization_percent", g.utilization_percent);
      w.Field("used_memory", g.used_memory);
      w.Field("total_memory", g.total_memory);
      // Health: only the readings NVML gave (GpuReading), so an absent one never reads as 0.
      if (g.has(kGpuTemperature)) w.Field("temperature_c", g.temperature_c);
      if (g.has(kGpuPower)) w.Field("power_mw", g.power_mw);
      if (g.has(kGpuPowerLimit)) w.Field("power_limit_mw", g.power_limit_mw);
      if (g.has(kGpuThrottle)) w.Field("throttle_reasons", g.throttle_reasons);
      if (g.has(kGpuEcc)) w.Field("ecc_uncorrected", g.ecc_uncorrected);
      if (g.has(kGpuXid)) {
        w.Field("xid_errors", g.xid_errors);
        w.Field("last_xid", g.last_xid);
      }
      w.EndObject();
    }
    w.EndArray();
    w.BeginArray("gpu_fences");
    for (const auto& f : s.gpu_fences) {
      w.BeginObject();
      w.Field("index", f.index);
      w.Field("reason", f.reason);
      w.Field("since_ms", f.since_ms);
      w.EndObject();
    }
    w.EndArray();
    w.Field("gpu_sampling", s.gpu_sampling);
    w.Field("warning", s.warning);
    w.EndObject();
  }
  w.EndArray();
  return w.Finish();
}

}  // namespace coupler::wire
