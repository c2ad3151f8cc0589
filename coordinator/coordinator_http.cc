// The Coordinator's side of HTTP: starting the server, publishing the snapshots it serves,
// and the timings behind the queue-wait histograms.
#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "coordinator/coordinator.h"
#include "coordinator/http/api_token.h"
#include "runtime/logging.h"
#include "runtime/net/endpoint.h"
#include "runtime/net/zmq_socket.h"

namespace coupler::coordinator {

std::string DefaultHttpListen(const std::string& worker_endpoint) {
  const std::optional<net::Endpoint> ep = net::ParseEndpoint(worker_endpoint);
  int port = 0;
  if (ep && !ep->port.empty() && ep->port != "*") {
    const int p = std::atoi(ep->port.c_str());
    if (p > 0 && p + 80 <= 65535) port = p + 80;
  }
  return fmt::format("127.0.0.1:{}", port);
}

Status Coordinator::StartHttp() {
  if (options_.http == "off") return Status::Ok();
  auto log = Logger("coordinator");
  const bool chosen = !options_.http.empty();
  http::HttpOptions http_options;
  http_options.listen = chosen ? options_.http : DefaultHttpListen(worker_endpoint_);
  http_options.tls_cert = options_.http_tls_cert;
  http_options.tls_key = options_.http_tls_key;
  http_options.insecure = options_.insecure;
  COUPLER_ASSIGN_OR_RETURN(std::string token, http::EnsureApiToken(options_.state_dir));
  const std::string endpoint = fmt::format("inproc://coupler-http-{}", static_cast<const void*>(this));
  COUPLER_ASSIGN_OR_RETURN(http_requests_, net::BindRouter(ctx_, endpoint));
  loop_channel_ = std::make_unique<http::LoopChannel>(ctx_, endpoint);
  http::HttpContext context{&board_, loop_channel_.get(), std::move(token), options_.version};
  Result<std::unique_ptr<http::HttpServer>> server = http::HttpServer::Start(http_options, context);
  if (!server.ok()) {
    // Asked for: a failure to start. The default: the coordinator is still worth running.
    if (chosen || server.status().code() != StatusCode::kUnavailable) return server.status();
    log->warn("HTTP is off: {} (pass --http HOST:PORT to pick another)", server.status().message());
    return Status::Ok();
  }
  http_ = std::move(*server);
  log->info("HTTP on {}: /metrics, /api/v1, the page at {}/?token=... (the token is in {})",
            http_->url(), http_->url(), http::ApiTokenPath(options_.state_dir));
  return Status::Ok();
}

void Coordinator::PublishSnapshot() {
  auto s = std::make_shared<http::Snapshot>();
  s->taken_ms = WallMs();
  for (const auto& job : scheduler_.jobs()) {
    wire::JobStatus status = scheduler_.Status(*job);
    auto persisted = persisted_phase_.find(job->id());
    if (job->finished() && persisted != persisted_phase_.end() && persisted->second != job->phase()) {
      // As SendStatus: not finished until a restart would agree.
      status.state = std::string(JobPhaseName(persisted->second));
      status.finished_ms = 0;
    }
    s->jobs.push_back(std::move(status));
  }
  for (const auto& [id, summary] : finished_) s->jobs.push_back(summary);
  for (wire::JobStatus& j : s->jobs) {
    if (auto sid = submission_of_job_.find(j.id); sid != submission_of_job_.end()) {
      j.submission_id = sid->second;
    }
  }
  // Newest first: ids are zero-padded numbers.
  std::sort(s->jobs.begin(), s->jobs.end(),
            [](const wire::JobStatus& a, const wire::JobStatus& b) { return a.id > b.id; });
  s->workers = scheduler_.Workers(NowMs());
  s->stats.messages_received = received_;
  s->stats.messages_dropped = dropped_;
  s->stats.workers_alive = static_cast<uint32_t>(scheduler_.registry().alive());
  s->stats.uptime_ms = static_cast<uint64_t>(NowMs());
  s->stats.handshakes_refused = zap_ ? zap_->refused() : 0;
  s->stats.registrations_refused = registrations_refused_;
  s->stats.stale_outcomes_dropped = stale_outcomes_;
  s->stats.encrypted = server_keys_.has_value();
  s->stats.store_error = store_error_.message();
  s->stats.replies_dropped = replies_dropped_;
  scheduler_.FillPoolStats(s->stats);
  s->metrics = metrics_;
  s->workers_lost_total = scheduler_.registry().workers_lost_total();
  board_.Publish(std::move(s));
}

void Coordinator::StampReadyNodes(const JobState& job) {
  std::vector<int64_t>& stamps = node_ready_ms_[job.id()];
  const size_t nodes = job.plan().nodes.size();
  if (stamps.size() != nodes) stamps.assign(nodes, 0);
  const int64_t now = WallMs();
  for (size_t p = 0; p < nodes; ++p) {
    if (stamps[p] == 0 && job.node_released(p)) stamps[p] = now;
  }
}

void Coordinator::ObserveQueueWait(const JobState& job, uint64_t task, Histogram& histogram) {
  auto it = node_ready_ms_.find(job.id());
  if (it == node_ready_ms_.end()) return;
  const uint32_t p = job.table().Describe(task).plan_node;
  if (p >= it->second.size() || it->second[p] == 0) return;
  histogram.Observe(static_cast<double>(std::max<int64_t>(0, WallMs() - it->second[p])) / 1000.0);
}

}  // namespace coupler::coordinator
