// The Coordinator's side of HTTP: starting the server, publishing the snapshots it serves.
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
  COUPLER_ASSIGN_OR_RETURN(http::TokenFile api_token,
                           http::TokenFile::Open(http::ApiTokenPath(options_.state_dir),
                                                 http::TokenReaders::kOwner));
  COUPLER_ASSIGN_OR_RETURN(http::TokenFile metrics_token,
                           http::TokenFile::Open(http::MetricsTokenPath(options_.state_dir),
                                                 http::TokenReaders::kOwnerAndGroup));
  const std::string endpoint = fmt::format("inproc://coupler-http-{}", static_cast<const void*>(this));
  COUPLER_ASSIGN_OR_RETURN(http_requests_, net::BindRouter(ctx_, endpoint));
  loop_channel_ = std::make_unique<http::LoopChannel>(ctx_, endpoint);
  http::HttpContext context{&board_, loop_channel_.get(),
                            std::make_shared<const http::TokenFile>(std::move(api_token)),
                            std::make_shared<const http::TokenFile>(std::move(metrics_token)),
                            options_.version};
  Result<std::unique_ptr<http::HttpServer>> server = http::HttpServer::Start(http_options, context);
  if (!server.ok()) {
    // Asked for: a failure to start. The default: the coordinator is still worth running.
    if (chosen || server.status().code() != StatusCode::kUnavailable) return server.status();
    log->warn("HTTP is off: {} (pass --http HOST:PORT to pick another)", server.status().message());
    return Status::Ok();
  }
  http_ = std::move(*server);
  log->info("HTTP on {}: /metrics, /api/v1, the page at {}/?token=... (the token is in {}; "
            "Prometheus may scrape with the read-only {})",
            http_->url(), http_->url(), http::ApiTokenPath(options_.state_dir),
            http::MetricsTokenPath(options_.state_dir));
  return Status::Ok();
}

void Coordinator::PublishSnapshot() {
  auto s = std::make_shared<http::Snapshot>();
  s->taken_ms = WallClockMs();
  s->jobs = control_.CollectJobs("", {}, kSnapshotJobs);
  s->job_counts = ledger_.CountJobs();
  s->workers = pool_.Workers(NowMs());
  s->stats = CollectStats();
  s->metrics = ledger_.metrics();
  s->workers_lost_total = scheduler_.registry().workers_lost_total();
  s->loop_lag = loop_lag_;
  s->handshakes_failed_workers = worker_handshakes_.failed();
  s->handshakes_failed_clients = client_handshakes_.failed();
  board_.Publish(std::move(s));
}

}  // namespace coupler::coordinator
