#include "cli/status_format.h"

#include <algorithm>

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace coupler::cli {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, const std::string& s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void WriteJob(Writer& w, const wire::JobStatus& j) {
  w.StartObject();
  w.Key("id");
  Str(w, j.id);
  w.Key("name");
  Str(w, j.name);
  w.Key("state");
  Str(w, j.state);
  w.Key("tasks");
  w.StartObject();
  w.Key("total");
  w.Uint64(j.tasks_total);
  w.Key("queued");
  w.Uint64(j.tasks_queued);
  w.Key("running");
  w.Uint64(j.tasks_running);
  w.Key("done");
  w.Uint64(j.tasks_done);
  w.Key("failed");
  w.Uint64(j.tasks_failed);
  w.EndObject();
  w.Key("attempts");
  w.Uint64(j.attempts);
  w.Key("error");
  Str(w, j.error);
  w.Key("submitted_ms");
  w.Int64(j.submitted_ms);
  w.Key("finished_ms");
  w.Int64(j.finished_ms);
  w.Key("devices");
  w.StartObject();
  for (const auto& [d, n] : j.devices) {
    Str(w, d);
    w.Uint64(n);
  }
  w.EndObject();
  w.Key("gpu_fallbacks");
  w.Uint64(j.gpu_fallbacks);
  w.Key("nodes");
  w.StartArray();
  for (const auto& n : j.nodes) {
    w.StartObject();
    w.Key("id");
    Str(w, n.id);
    w.Key("state");
    Str(w, n.state);
    w.Key("tasks");
    w.Uint64(n.tasks_total);
    w.Key("done");
    w.Uint64(n.tasks_done);
    w.Key("attempts");
    w.Uint64(n.attempts);
    w.Key("error");
    Str(w, n.error);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

std::string Done(rapidjson::StringBuffer& buf) { return std::string(buf.GetString(), buf.GetSize()) + "\n"; }

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
  rapidjson::StringBuffer buf;
  Writer w(buf);
  WriteJob(w, job);
  return Done(buf);
}

std::string StatusReplyJson(const wire::StatusReply& reply) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("jobs");
  w.StartArray();
  for (const auto& j : reply.jobs) WriteJob(w, j);
  w.EndArray();
  w.Key("coordinator");
  w.StartObject();
  w.Key("messages_received");
  w.Uint64(reply.coordinator.messages_received);
  w.Key("messages_dropped");
  w.Uint64(reply.coordinator.messages_dropped);
  w.Key("workers_alive");
  w.Uint(reply.coordinator.workers_alive);
  w.Key("uptime_ms");
  w.Uint64(reply.coordinator.uptime_ms);
  w.EndObject();
  w.EndObject();
  return Done(buf);
}

std::string WorkersJson(const std::vector<wire::WorkerStatus>& workers) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartArray();
  for (const auto& s : workers) {
    w.StartObject();
    w.Key("id");
    Str(w, s.id);
    w.Key("host");
    Str(w, s.host);
    w.Key("slots");
    w.Uint(s.slots);
    w.Key("running");
    w.Uint(s.running);
    w.Key("state");
    Str(w, s.state);
    w.Key("gpus");
    w.StartArray();
    for (const auto& g : s.gpus) {
      w.StartObject();
      w.Key("index");
      w.Uint(g.index);
      w.Key("name");
      Str(w, g.name);
      w.Key("total_memory");
      w.Uint64(g.total_memory);
      w.Key("free_memory");
      w.Uint64(g.free_memory);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  return Done(buf);
}

std::string JobStatusText(const wire::JobStatus& j) {
  std::string out = fmt::format("job {} ({}): {}  {}/{} tasks done, {} running, {} queued, "
                                "{} failed, {} attempts\n",
                                j.id, j.name, j.state, Thousands(j.tasks_done),
                                Thousands(j.tasks_total), j.tasks_running, j.tasks_queued,
                                j.tasks_failed, j.attempts);
  if (!j.error.empty()) out += "  error: " + j.error + "\n";
  size_t w = 4;
  for (const auto& n : j.nodes) w = std::max(w, n.id.size());
  for (const auto& n : j.nodes) {
    out += fmt::format("  {:<{}}  {:<9}  {:>8}/{:<8}  {} attempts{}\n", n.id, w, n.state,
                       n.tasks_done, n.tasks_total, n.attempts,
                       n.error.empty() ? "" : "  " + n.error);
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
