// Debian's real Prometheus, started for a test: it scrapes the coordinator's /metrics every
// second with the bearer token in a credentials file (the API token or the read-only metrics
// token), evaluates the given rule files every second, and serves its own API on a free port.
#pragma once

#include <string>
#include <vector>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {

struct PrometheusServer {
  Process process;
  int port = 0;
  // "http://127.0.0.1:PORT"
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

// `coordinator_url`: "http://HOST:PORT" as Cluster::HttpUrl gives it.
inline PrometheusServer StartPrometheus(Cluster& c, const std::string& coordinator_url,
                                        const fs::path& credentials_file,
                                        const std::vector<fs::path>& rule_files = {}) {
  PrometheusServer server;
  server.port = FreePortPair();
  const fs::path prom = c.dir() / "prometheus";
  fs::create_directories(prom / "data");
  std::string rules;
  if (!rule_files.empty()) {
    rules = "rule_files:\n";
    for (const fs::path& f : rule_files) rules += "  - " + f.string() + "\n";
  }
  WriteFile(prom / "prometheus.yml",
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n" + rules +
                "scrape_configs:\n  - job_name: coupler\n    metrics_path: /metrics\n"
                "    authorization:\n      credentials_file: " + credentials_file.string() + "\n"
                "    static_configs:\n      - targets: ['" +
                coordinator_url.substr(coordinator_url.find("://") + 3) + "']\n");
  Process::Options po;
  po.deadline = 300s;
  po.output = c.logs();
  po.name = "prometheus";
  server.process = Process::Spawn(
      {FindProgram("prometheus"), "--config.file=" + (prom / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (prom / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(server.port), "--log.level=warn"},
      po);
  return server;
}

}  // namespace coupler::itest
