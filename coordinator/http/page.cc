#include "coordinator/http/page.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "runtime/pool/gpu_health.h"
#include "runtime/util/byte_size.h"
#include "runtime/util/utc_time.h"

namespace coupler::coordinator::http {
namespace {

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0";
  return fmt::format("{:.0f}", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string Duration(int64_t ms) {
  if (ms < 0) ms = 0;
  const int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}h {:02}m", s / 3600, (s / 60) % 60);
}

std::string Progress(uint64_t done, uint64_t total, std::string_view label) {
  // <progress>, not a styled <div>: the page's Content-Security-Policy allows no inline style.
  return fmt::format("<progress max=\"{}\" value=\"{}\" aria-label=\"{}\"></progress>"
                     "<span class=\"num\">{}/{} ({}%)</span>",
                     std::max<uint64_t>(total, 1), done, HtmlEscape(label), done, total,
                     Percent(done, total));
}

void Header(std::string& out, const Snapshot& s) {
  const auto& c = s.stats;
  uint32_t alive = 0;
  for (const auto& w : s.workers) alive += w.state == pool::WorkerState::kAlive ? 1 : 0;
  out += fmt::format(
      "<section id=\"pool\"><h2>Pool</h2><p class=\"summary\">"
      "<span data-metric=\"workers-alive\">{}</span> workers alive · "
      "<span data-metric=\"running\">{}</span> tasks running · "
      "<span data-metric=\"prefetched\">{}</span> prefetched · queued: "
      "<span data-metric=\"queued-cpu\">{}</span> CPU, <span data-metric=\"queued-gpu\">{}</span> "
      "GPU, <span data-metric=\"queued-gang-ranks\">{}</span> gang ranks · recommended workers: "
      "<span data-metric=\"recommended-workers\">{}</span> · up {}</p>",
      alive, c.running_tasks, c.prefetched_tasks, c.queued_cpu_tasks, c.queued_gpu_tasks,
      c.queued_gang_ranks, c.recommended_workers, Duration(static_cast<int64_t>(c.uptime_ms)));
  if (!c.store_error.empty()) {
    out += fmt::format("<p class=\"warning\" data-warning=\"store\">The state cannot be written: "
                       "{}. No task is dispatched until it can.</p>",
                       HtmlEscape(c.store_error));
  }
  for (const std::string& w : c.warnings) {
    out += fmt::format("<p class=\"warning\" data-warning=\"pool\">{}</p>", HtmlEscape(w));
  }
  out += "</section>";
}

std::string GpuCell(const wire::WorkerStatus& w) {
  if (w.gpus.empty()) return "<td class=\"gpus\">-</td>";
  std::string cell = "<td class=\"gpus\">";
  for (const wire::GpuInfo& g : w.gpus) {
    const wire::GpuUsage* usage = nullptr;
    for (const auto& u : w.gpu_usage) {
      if (u.index == g.index) usage = &u;
    }
    cell += fmt::format("<div class=\"gpu\" data-gpu=\"{}\">{}: {}", g.index, g.index,
                        HtmlEscape(g.name.empty() ? "GPU" : g.name));
    if (usage != nullptr) {
      cell += fmt::format(
          " · <span data-gpu-utilization=\"{}\">{}% busy</span> · {} of {}", usage->utilization_percent,
          usage->utilization_percent, util::FormatBytes(usage->used_memory),
          util::FormatBytes(usage->total_memory != 0 ? usage->total_memory : g.total_memory));
      if (const std::string health = pool::DescribeHealth(*usage); !health.empty()) {
        cell += fmt::format(" · <span data-gpu-health>{}</span>", HtmlEscape(health));
      }
    } else {
      cell += fmt::format(" · <span class=\"muted\" data-gpu-utilization=\"none\">{}</span>",
                          HtmlEscape(w.gpu_sampling.empty() ? "no samples" : w.gpu_sampling));
    }
    for (const wire::GpuFence& f : w.gpu_fences) {
      if (f.index == g.index) {
        cell += fmt::format(" · <span class=\"warning\" data-gpu-fenced>fenced since {}: {}</span>",
                            util::Iso8601Utc(static_cast<int64_t>(f.since_ms)), HtmlEscape(f.reason));
      }
    }
    cell += "</div>";
  }
  if (!w.warning.empty()) cell += fmt::format("<div class=\"warning\">{}</div>", HtmlEscape(w.warning));
  return cell + "</td>";
}

void Workers(std::string& out, const Snapshot& s) {
  out += "<section id=\"workers\"><h2>Workers</h2>";
  if (s.workers.empty()) {
    out += "<p class=\"muted\">No worker has joined yet.</p></section>";
    return;
  }
  out += "<table><thead><tr><th>Worker</th><th>Host</th><th>State</th><th>Slots</th>"
         "<th>Running</th><th>Prefetched</th><th>Load</th><th>Done</th><th>GPUs</th></tr></thead><tbody>";
  for (const wire::WorkerStatus& w : s.workers) {
    out += fmt::format(
        "<tr data-worker=\"{}\" data-state=\"{}\"><td>{}</td><td>{}</td><td class=\"state {}\">{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}</tr>",
        HtmlEscape(w.id), HtmlEscape(pool::WorkerStateName(w.state)), HtmlEscape(w.id),
        HtmlEscape(w.address.empty() ? w.host : w.host + " (" + w.address + ")"), HtmlEscape(pool::WorkerStateName(w.state)),
        HtmlEscape(pool::WorkerStateName(w.state)), w.slots, w.running, w.prefetched,
        Progress(std::min(w.running, w.slots), w.slots, "load of " + w.id), w.tasks_done, GpuCell(w));
  }
  out += "</tbody></table></section>";
}

void Jobs(std::string& out, const Snapshot& s, std::string_view selected) {
  out += "<section id=\"jobs\"><h2>Jobs</h2>";
  if (s.jobs.empty()) {
    out += "<p class=\"muted\">No job has been submitted yet.</p></section>";
    return;
  }
  out += "<table><thead><tr><th>Job</th><th>Name</th><th>State</th><th>Progress</th>"
         "<th>Running</th><th>Prefetched</th><th>Queued</th><th>Failed</th><th>Time</th>"
         "</tr></thead><tbody>";
  for (const wire::JobStatus& j : s.jobs) {
    const int64_t end = j.finished_ms != 0 ? j.finished_ms : s.taken_ms;
    out += fmt::format(
        "<tr data-job=\"{}\" data-state=\"{}\"{}><td><a href=\"/?job={}\">{}</a></td><td>{}</td>"
        "<td class=\"state {}\">{}</td><td class=\"progress\" data-done=\"{}\" data-total=\"{}\">{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        HtmlEscape(j.id), HtmlEscape(job::JobPhaseName(j.state)), j.id == selected ? " class=\"selected\"" : "",
        HtmlEscape(j.id), HtmlEscape(j.id), HtmlEscape(j.name), HtmlEscape(job::JobPhaseName(j.state)), HtmlEscape(job::JobPhaseName(j.state)),
        j.tasks_done, j.tasks_total, Progress(j.tasks_done, j.tasks_total, "progress of " + j.id),
        j.tasks_running, j.tasks_prefetched, j.tasks_queued, j.tasks_failed,
        Duration(end - j.submitted_ms));
  }
  out += "</tbody></table></section>";
}

// `progress`: its running tight nodes' latest reported steps, by node id.
void Graph(std::string& out, const wire::JobStatus& j,
           const std::map<std::string, job::StepProgress>& progress) {
  out += fmt::format("<section id=\"graph\" data-job=\"{}\"><h2>Graph of {} ({})</h2>",
                     HtmlEscape(j.id), HtmlEscape(j.id), HtmlEscape(j.name));
  if (!j.error.empty()) out += fmt::format("<p class=\"error\">{}</p>", HtmlEscape(j.error));
  if (j.nodes.empty()) {
    out += "<p class=\"muted\">This job finished before the coordinator's last start: only its "
           "summary is kept.</p></section>";
    return;
  }
  std::map<uint32_t, std::vector<const wire::NodeStatus*>> stages;
  for (const auto& n : j.nodes) stages[n.stage].push_back(&n);
  out += "<div class=\"stages\">";
  for (const auto& [stage, nodes] : stages) {
    out += fmt::format("<div class=\"stage\" data-stage=\"{}\"><h3>stage {}</h3>", stage, stage);
    for (const wire::NodeStatus* n : nodes) {
      const bool tight = n->ranks > 0;
      out += fmt::format(
          "<div class=\"node {} {}\" data-node=\"{}\" data-kind=\"{}\" data-state=\"{}\" "
          "data-done=\"{}\" data-total=\"{}\"><div class=\"title\">{} <span class=\"op\">{}</span></div>",
          tight ? "tight" : "loose", HtmlEscape(job::NodePhaseName(n->state)), HtmlEscape(n->id), tight ? "tight" : "loose",
          HtmlEscape(job::NodePhaseName(n->state)), n->tasks_done, n->tasks_total, HtmlEscape(n->id), HtmlEscape(n->op));
      if (tight) {
        std::string hosts;
        for (const auto& h : n->hosts) hosts += (hosts.empty() ? "" : ", ") + h;
        out += fmt::format(
            "<div class=\"kind\">tight · gang of <span data-ranks=\"{}\">{}</span> ranks</div>"
            "<div class=\"hosts\">{}</div>",
            n->ranks, n->ranks, hosts.empty() ? "not placed yet" : "on " + HtmlEscape(hosts));
        if (auto it = progress.find(n->id); it != progress.end()) {
          out += fmt::format("<div class=\"step\" data-step=\"{}\">{}</div>", it->second.step,
                             HtmlEscape(job::StepProgressText(it->second)));
        }
      } else {
        out += fmt::format("<div class=\"kind\">loose · {} tasks ({} running, {} prefetched)</div>",
                           n->tasks_total, n->tasks_running, n->tasks_prefetched);
      }
      out += Progress(n->tasks_done, n->tasks_total, "tasks of " + n->id + " done");
      out += fmt::format("<div class=\"state {}\">{}</div>", HtmlEscape(job::NodePhaseName(n->state)), HtmlEscape(job::NodePhaseName(n->state)));
      if (!n->deps.empty()) {
        std::string deps;
        for (const auto& d : n->deps) deps += (deps.empty() ? "" : ", ") + d;
        out += fmt::format("<div class=\"deps\">reads {}</div>", HtmlEscape(deps));
      }
      if (!n->reason.empty()) out += fmt::format("<div class=\"reason\">{}</div>", HtmlEscape(n->reason));
      if (!n->error.empty()) out += fmt::format("<div class=\"error\">{}</div>", HtmlEscape(n->error));
      out += "</div>";
    }
    out += "</div>";
  }
  out += "</div></section>";
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderPageBody(const Snapshot& s, std::string_view job) {
  std::string out;
  Header(out, s);
  Workers(out, s);
  Jobs(out, s, job);
  const wire::JobStatus* shown = job.empty() ? (s.jobs.empty() ? nullptr : &s.jobs.front())
                                             : s.FindJob(std::string(job));
  if (shown != nullptr) {
    const auto progress = s.Progress().find(shown->id);
    Graph(out, *shown,
          progress == s.Progress().end() ? std::map<std::string, job::StepProgress>{}
                                         : progress->second);
  } else if (!job.empty()) {
    out += fmt::format("<section id=\"graph\"><p class=\"error\">No job {}.</p></section>", HtmlEscape(job));
  }
  return out;
}

std::string RenderPage(const Snapshot& s, std::string_view job, std::string_view version) {
  return fmt::format(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>coupler</title><link rel=\"stylesheet\" href=\"/static/page.css\">"
      "<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>"
      "<script src=\"/static/page.js\" defer></script></head>"
      "<body data-job=\"{}\"><header><h1>coupler</h1><span class=\"muted\">{} · "
      "<span id=\"updated\" data-taken-ms=\"{}\">live</span></span></header>"
      "<main id=\"live\">{}</main></body></html>",
      HtmlEscape(job), HtmlEscape(version), s.taken_ms, RenderPageBody(s, job));
}

std::string UnauthorizedPage() {
  return "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>coupler</title>"
         "</head><body><h1>coupler</h1><p>This page needs the coordinator's API token. Open "
         "<code>/?token=TOKEN</code>, TOKEN being the contents of <code>STATE/http-token</code> "
         "(readable by the coordinator's user only); the coordinator logs the address at "
         "start.</p></body></html>";
}

std::string_view PageScript() {
  // Swaps in a fresh body every two seconds; stops when the tab is hidden, so a forgotten tab
  // does not keep the coordinator publishing snapshots.
  return R"js('use strict';
(function () {
  const job = document.body.dataset.job || '';
  const live = document.getElementById('live');
  const updated = document.getElementById('updated');
  async function refresh() {
    if (document.hidden) return;
    try {
      const url = '/?fragment=1' + (job ? '&job=' + encodeURIComponent(job) : '');
      const res = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
      if (!res.ok) { updated.textContent = 'refresh failed: HTTP ' + res.status; return; }
      live.innerHTML = await res.text();
      updated.textContent = 'updated ' + new Date().toLocaleTimeString();
      updated.dataset.refreshes = String(Number(updated.dataset.refreshes || '0') + 1);
    } catch (e) {
      updated.textContent = 'coordinator unreachable';
    }
  }
  setInterval(refresh, 2000);
})();
)js";
}

std::string_view PageStyle() {
  return R"css(body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{display:flex;gap:1em;align-items:baseline;padding:.6em 1.2em;background:#1d2430;color:#fff}
header h1{font-size:1.2em;margin:0}main{padding:0 1.2em 2em}h2{font-size:1.05em;margin:1.2em 0 .4em}
table{border-collapse:collapse;width:100%;background:#fff}th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{font-weight:600;background:#eef0f3}tr.selected{background:#fff8dc}.muted{color:#6b7480}
progress{width:8em;height:.8em;vertical-align:middle;margin-right:.4em;accent-color:#3d7be0}
.num{font-variant-numeric:tabular-nums}
.state.succeeded,.state.done,.state.alive{color:#1f7a3a}.state.failed,.state.lost{color:#b3261e}
.state.running{color:#3d7be0}.state.cancelled,.state.drained{color:#6b7480}
.warning{background:#fff4ce;border-left:4px solid #e0a800;padding:.3em .6em}.error{color:#b3261e}
.stages{display:flex;gap:1em;overflow-x:auto}.stage{min-width:14em}.stage h3{font-size:.9em;color:#6b7480;margin:.2em 0}
.node{background:#fff;border:2px solid #c9ced6;border-radius:6px;padding:.4em .6em;margin-bottom:.6em}
.node.tight{border-color:#8a4fd8;border-style:double;border-width:4px}.node.loose{border-color:#3d7be0}
.node .title{font-weight:600}.node .op,.node .kind,.node .deps,.node .hosts,.node .reason{color:#6b7480;font-size:.9em}
.node.failed{background:#fdecea}.node.done{background:#eaf6ee}
)css";
}

}  // namespace coupler::coordinator::http
