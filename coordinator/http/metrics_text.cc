#include "coordinator/http/metrics_text.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "coordinator/http/process_metrics.h"
#include "runtime/wire/envelope.h"

namespace coupler::coordinator::http {
namespace {

// Writes families: HELP and TYPE once, then its samples.
class Exposition {
 public:
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void Sample(std::string_view name, std::string_view labels, double value) {
    out_ += name;
    if (!labels.empty()) out_ += fmt::format("{{{}}}", labels);
    out_ += ' ';
    out_ += Number(value);
    out_ += '\n';
  }
  void Gauge(std::string_view name, std::string_view help, double value) {
    Family(name, "gauge", help);
    Sample(name, "", value);
  }
  void Counter(std::string_view name, std::string_view help, double value) {
    Family(name, "counter", help);
    Sample(name, "", value);
  }
  void LabelledCounter(std::string_view name, std::string_view label, std::string_view help,
                       const std::map<std::string, uint64_t>& values) {
    Family(name, "counter", help);
    for (const auto& [key, v] : values) {
      Sample(name, fmt::format("{}=\"{}\"", label, EscapeLabelValue(key)), static_cast<double>(v));
    }
  }
  void LabelledGauge(std::string_view name, std::string_view label, std::string_view help,
                     const std::map<std::string, uint64_t>& values) {
    Family(name, "gauge", help);
    for (const auto& [key, v] : values) {
      Sample(name, fmt::format("{}=\"{}\"", label, EscapeLabelValue(key)), static_cast<double>(v));
    }
  }
  void Histo(std::string_view name, std::string_view help, const Histogram& h) {
    Family(name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds().size(); ++i) {
      cumulative += h.counts()[i];
      Sample(fmt::format("{}_bucket", name), fmt::format("le=\"{}\"", Number(h.bounds()[i])),
             static_cast<double>(cumulative));
    }
    Sample(fmt::format("{}_bucket", name), "le=\"+Inf\"", static_cast<double>(h.count()));
    Sample(fmt::format("{}_sum", name), "", h.sum());
    Sample(fmt::format("{}_count", name), "", static_cast<double>(h.count()));
  }
  std::string Take() { return std::move(out_); }

 private:
  static std::string Number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    // Integers as integers (counts are exact up to 2^53), others in the shortest form that
    // reads back to the same double.
    if (v == std::floor(v) && std::fabs(v) < 9.0e15) return fmt::format("{}", static_cast<int64_t>(v));
    return fmt::format("{}", v);
  }
  std::string out_;
};

// Every value a state label can take, so each series exists at 0 before it is first used.
std::map<std::string, uint64_t> Zeroed(std::initializer_list<const char*> keys) {
  std::map<std::string, uint64_t> m;
  for (const char* k : keys) m[k] = 0;
  return m;
}

// One series per worker the coordinator lists (bounded by the pool's size): what its row of
// `coupler workers` shows, so a board can show which worker is slow, full or silent.
void RenderWorkerSeries(Exposition& e, const std::vector<wire::WorkerStatus>& workers) {
  auto per_worker = [&](std::string_view name, std::string_view type, std::string_view help,
                        auto value) {
    e.Family(name, type, help);
    for (const wire::WorkerStatus& w : workers) {
      e.Sample(name, fmt::format("worker=\"{}\"", EscapeLabelValue(w.id)), value(w));
    }
  };
  e.Family("coupler_worker_info", "gauge",
           "A worker the coordinator lists: its host, state and the wire protocol version it "
           "registered with (an upgrade is done when none speaks the older one).");
  for (const wire::WorkerStatus& w : workers) {
    e.Sample("coupler_worker_info",
             fmt::format("worker=\"{}\",host=\"{}\",state=\"{}\",protocol=\"{}\"",
                         EscapeLabelValue(w.id), EscapeLabelValue(w.host),
                         pool::WorkerStateName(w.state), w.protocol_version),
             1);
  }
  per_worker("coupler_worker_task_slots", "gauge", "A worker's task slots.",
             [](const wire::WorkerStatus& w) { return static_cast<double>(w.slots); });
  per_worker("coupler_worker_running_tasks", "gauge", "Tasks a worker's slots run now.",
             [](const wire::WorkerStatus& w) { return static_cast<double>(w.running); });
  per_worker("coupler_worker_prefetched_tasks", "gauge",
             "Loose tasks sent to a worker and waiting there unstarted.",
             [](const wire::WorkerStatus& w) { return static_cast<double>(w.prefetched); });
  per_worker("coupler_worker_tasks_done_total", "counter",
             "Tasks a worker committed since it registered.",
             [](const wire::WorkerStatus& w) { return static_cast<double>(w.tasks_done); });
  per_worker("coupler_worker_heartbeat_age_seconds", "gauge",
             "Seconds since the coordinator last heard from a worker.",
             [](const wire::WorkerStatus& w) { return static_cast<double>(w.heard_ms_ago) / 1000.0; });
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderMetrics(const Snapshot& s, std::string_view version) {
  Exposition e;
  e.Family("coupler_build_info", "gauge", "The coordinator's build: version and wire protocol.");
  e.Sample("coupler_build_info",
           fmt::format("version=\"{}\",protocol=\"{}\"", EscapeLabelValue(version),
                       wire::kProtocolVersion),
           1);

  auto jobs = Zeroed({"queued", "running", "succeeded", "failed", "cancelled"});
  auto tasks = Zeroed({"queued", "prefetched", "running"});
  auto gangs = Zeroed({"waiting", "running"});
  for (const auto& [state, n] : s.job_counts) jobs[state] += n;
  // Unfinished jobs are always among the snapshot's (the newest kSnapshotJobs) unless more than
  // that many are unfinished at once; their task counts come from there.
  for (const wire::JobStatus& j : s.jobs) {
    if (j.finished_ms != 0) continue;
    tasks["queued"] += j.tasks_queued;
    tasks["prefetched"] += j.tasks_prefetched;
    tasks["running"] += j.tasks_running;
    for (const wire::NodeStatus& n : j.nodes) {
      if (n.ranks == 0) continue;
      if (n.state == job::NodePhase::kRunning) ++gangs["running"];
      if (n.state == job::NodePhase::kReady) ++gangs["waiting"];
    }
  }
  e.LabelledGauge("coupler_jobs", "state", "Jobs the coordinator knows, by state.", jobs);
  e.Counter("coupler_jobs_submitted_total", "Jobs admitted into this state (kept across restarts).",
            static_cast<double>(s.metrics.jobs_submitted));
  e.LabelledCounter("coupler_jobs_finished_total", "outcome",
                    "Jobs that finished, by outcome (kept across restarts).",
                    s.metrics.jobs_finished);
  e.LabelledGauge("coupler_tasks", "state",
                  "Tasks of unfinished jobs: ready and not sent (queued), sent and waiting on a "
                  "worker (prefetched), started in a slot (running).",
                  tasks);
  e.LabelledCounter("coupler_tasks_finished_total", "outcome",
                    "Task attempts that ended: committed (done) or failed.",
                    {{"done", s.metrics.tasks_done}, {"failed", s.metrics.tasks_failed}});
  e.Histo("coupler_task_duration_seconds", "A task attempt's wall time in its worker's slot.",
          s.metrics.task_duration);
  e.Histo("coupler_task_queue_wait_seconds",
          "A first attempt's wait from its node becoming ready to its being sent to a worker.",
          s.metrics.task_queue_wait);
  e.LabelledCounter("coupler_task_retries_total", "reason",
                    "Task attempts run again, by why the one before ended.", s.metrics.retries);
  e.LabelledCounter("coupler_task_failures_total", "cause",
                    "Task attempts that failed or were lost, retried or not, by cause "
                    "(invalid_data: never retried).",
                    s.metrics.failures);

  auto workers = Zeroed({"alive", "draining", "silent", "drained", "lost", "banned"});
  auto slots = Zeroed({"busy", "free"});
  for (const wire::WorkerStatus& w : s.workers) {
    ++workers[std::string(pool::WorkerStateName(w.state))];
    if (w.state != pool::WorkerState::kAlive && w.state != pool::WorkerState::kDraining) continue;
    const uint64_t busy = std::min<uint64_t>(w.running, w.slots);
    slots["busy"] += busy;
    slots["free"] += w.slots - busy;
  }
  e.LabelledGauge("coupler_workers", "state", "Workers the coordinator knows, by state.", workers);
  e.LabelledGauge("coupler_worker_slots", "state",
                  "Task slots of alive and draining workers: running a task (busy) or not.", slots);
  e.Counter("coupler_workers_lost_total", "Workers that stopped being heard and were given up on.",
            static_cast<double>(s.workers_lost_total));
  e.LabelledGauge("coupler_gangs", "state",
                  "Tight nodes of unfinished jobs: waiting for slots, or running.", gangs);
  e.Histo("coupler_gang_wait_seconds",
          "A gang's wait from its node becoming ready to all its ranks being placed.",
          s.metrics.gang_wait);
  e.LabelledGauge("coupler_queued", "class",
                  "Ready work not yet sent, by the hardware it needs (gang: ranks).",
                  {{"cpu", s.stats.queued_cpu_tasks},
                   {"gpu", s.stats.queued_gpu_tasks},
                   {"gang_ranks", s.stats.queued_gang_ranks}});
  e.Gauge("coupler_recommended_workers", "The pool size that would run what is queued.",
          s.stats.recommended_workers);
  e.Counter("coupler_messages_dropped_total",
            "Messages dropped: malformed, wrong version, oversize or unexpected.",
            static_cast<double>(s.stats.messages_dropped));
  e.Counter("coupler_handshakes_refused_total", "Connections refused: keys on no allow-list.",
            static_cast<double>(s.stats.handshakes_refused));
  e.LabelledCounter("coupler_handshakes_failed_total", "socket",
                    "Security handshakes that failed before any key was checked: the peer holds "
                    "another coordinator's public key (a stale coordinator.pub) or speaks "
                    "plaintext.",
                    {{"workers", s.handshakes_failed_workers}, {"clients", s.handshakes_failed_clients}});
  e.Counter("coupler_gpu_fallback_tasks_total",
            "Committed tasks that asked for a GPU and ran on the CPU.",
            static_cast<double>(s.metrics.gpu_fallback_tasks));

  // Labelled as dcgm-exporter labels its series (gpu, UUID, Hostname, modelName), so its boards
  // and ours join on them; `worker` tells two workers of one host apart.
  auto gpu_labels = [](const wire::WorkerStatus& w, uint32_t index) {
    std::string model, uuid;
    for (const wire::GpuInfo& info : w.gpus) {
      if (info.index == index) {
        model = info.name;
        uuid = info.uuid;
      }
    }
    return fmt::format("worker=\"{}\",gpu=\"{}\",UUID=\"{}\",Hostname=\"{}\",modelName=\"{}\"",
                       EscapeLabelValue(w.id), index, EscapeLabelValue(uuid),
                       EscapeLabelValue(w.host), EscapeLabelValue(model));
  };
  e.Family("coupler_gpu_utilization_ratio", "gauge",
           "A worker GPU's busy fraction over NVML's last sample period (absent without NVML).");
  for (const wire::WorkerStatus& w : s.workers) {
    for (const wire::GpuUsage& g : w.gpu_usage) {
      e.Sample("coupler_gpu_utilization_ratio", gpu_labels(w, g.index), g.utilization_percent / 100.0);
    }
  }
  e.Family("coupler_gpu_memory_used_bytes", "gauge", "A worker GPU's memory in use (NVML).");
  for (const wire::WorkerStatus& w : s.workers) {
    for (const wire::GpuUsage& g : w.gpu_usage) {
      e.Sample("coupler_gpu_memory_used_bytes", gpu_labels(w, g.index), static_cast<double>(g.used_memory));
    }
  }
  // Health, under dcgm-exporter's field names and units, so its alerts and boards apply; a
  // reading NVML did not give is absent, never 0.
  struct HealthSeries {
    const char* name;
    const char* help;
    wire::GpuReading reading;
    double (*value)(const wire::GpuUsage&);
  };
  static constexpr HealthSeries kHealth[] = {
      {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", wire::kGpuTemperature,
       [](const wire::GpuUsage& g) { return static_cast<double>(g.temperature_c); }},
      {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", wire::kGpuPower,
       [](const wire::GpuUsage& g) { return g.power_mw / 1000.0; }},
      {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W).", wire::kGpuPowerLimit,
       [](const wire::GpuUsage& g) { return g.power_limit_mw / 1000.0; }},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Throttling reasons (NVML's bitmask).",
       wire::kGpuThrottle, [](const wire::GpuUsage& g) { return static_cast<double>(g.throttle_reasons); }},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
       "Uncorrectable (double-bit) ECC errors since the driver loaded.", wire::kGpuEcc,
       [](const wire::GpuUsage& g) { return static_cast<double>(g.ecc_uncorrected); }},
      {"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered (0: none).",
       wire::kGpuXid, [](const wire::GpuUsage& g) { return static_cast<double>(g.last_xid); }},
  };
  for (const HealthSeries& h : kHealth) {
    e.Family(h.name, "gauge", h.help);
    for (const wire::WorkerStatus& w : s.workers) {
      for (const wire::GpuUsage& g : w.gpu_usage) {
        if (g.has(h.reading)) e.Sample(h.name, gpu_labels(w, g.index), h.value(g));
      }
    }
  }
  e.Family("coupler_gpu_fenced", "gauge",
           "1 while placement avoids the GPU: a new XID or uncorrectable ECC error, or an "
           "admin, fenced it (`coupler workers` says why; `coupler worker clear-gpu` lifts it).");
  for (const wire::WorkerStatus& w : s.workers) {
    for (const wire::GpuInfo& g : w.gpus) {
      const bool fenced = std::any_of(w.gpu_fences.begin(), w.gpu_fences.end(),
                                      [&](const wire::GpuFence& f) { return f.index == g.index; });
      e.Sample("coupler_gpu_fenced", gpu_labels(w, g.index), fenced ? 1 : 0);
    }
  }
  e.Family("coupler_gpu_idle", "gauge",
           "1 while a GPU worker holds GPU tasks and its GPUs stayed under 5% busy for a "
           "minute (the tasks probably run on the CPU).");
  for (const wire::WorkerStatus& w : s.workers) {
    if (w.gpus.empty()) continue;
    e.Sample("coupler_gpu_idle", fmt::format("worker=\"{}\"", EscapeLabelValue(w.id)),
             w.warning.empty() ? 0 : 1);
  }
  RenderWorkerSeries(e, s.workers);
  // What running gangs report (their steps.jsonl): one series per running tight node, so the
  // count stays bounded by the gangs the pool runs at once.
  e.Family("coupler_node_step", "gauge",
           "The last step a running tight node reported (coupler train, or report() of "
           "python/coupler_torch.py).");
  for (const auto& [job_id, nodes] : s.Progress()) {
    for (const auto& [node_id, progress] : nodes) {
      e.Sample("coupler_node_step",
               fmt::format("job=\"{}\",node=\"{}\"", EscapeLabelValue(job_id),
                           EscapeLabelValue(node_id)),
               static_cast<double>(progress.step));
    }
  }
  e.Family("coupler_node_metric", "gauge",
           "A number a running tight node reported with its last step (loss, accuracy...), by "
           "name.");
  for (const auto& [job_id, nodes] : s.Progress()) {
    for (const auto& [node_id, progress] : nodes) {
      for (const auto& [name, value] : progress.metrics) {
        e.Sample("coupler_node_metric",
                 fmt::format("job=\"{}\",node=\"{}\",name=\"{}\"", EscapeLabelValue(job_id),
                             EscapeLabelValue(node_id), EscapeLabelValue(name)),
                 value);
      }
    }
  }
  e.Gauge("coupler_dispatch_stopped",
          "1 while no task is dispatched and no job reported finished because the state cannot "
          "be written (a full disk); it resumes by itself once it can.",
          s.stats.store_error.empty() ? 0 : 1);
  e.Histo("coupler_event_loop_lag_seconds",
          "How long each turn of the coordinator's event loop took: how late a message that "
          "arrived meanwhile is read.",
          s.loop_lag);
  e.Gauge("coupler_uptime_seconds", "Seconds since the coordinator started.",
          static_cast<double>(s.stats.uptime_ms) / 1000.0);
  return e.Take();
}

std::string RenderProcessMetrics() {
  const std::optional<ProcessStats> p = ReadProcessStats();
  if (!p) return "";
  Exposition e;
  e.Counter("process_cpu_seconds_total", "User and system CPU time spent in seconds.", p->cpu_seconds);
  e.Gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
          static_cast<double>(p->resident_bytes));
  e.Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
          static_cast<double>(p->virtual_bytes));
  e.Gauge("process_open_fds", "Number of open file descriptors.", static_cast<double>(p->open_fds));
  e.Gauge("process_max_fds", "Maximum number of open file descriptors.",
          static_cast<double>(p->max_fds));
  e.Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          p->start_time_seconds);
  e.Gauge("process_threads", "Number of OS threads in the process.", static_cast<double>(p->threads));
  return e.Take();
}

std::string RenderReadinessMetric(const Readiness& readiness) {
  Exposition e;
  e.Gauge("coupler_ready", "1 while the coordinator dispatches (/readyz answers 200).",
          readiness.ready ? 1 : 0);
  return e.Take();
}

std::string RenderConnectionMetrics(const ConnectionCounts& c) {
  Exposition e;
  e.Gauge("coupler_http_connections_open", "HTTP connections open now.", static_cast<double>(c.open));
  e.Counter("coupler_http_connections_refused_total",
            "HTTP connections closed at once: over the total or per-address cap, with every "
            "connection in the way serving a request.",
            static_cast<double>(c.refused));
  e.Counter("coupler_http_connections_evicted_total",
            "HTTP connections closed while they waited for a request, to make room for a new one.",
            static_cast<double>(c.evicted));
  return e.Take();
}

}  // namespace coupler::coordinator::http
