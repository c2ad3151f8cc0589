// Dispatch under HTTP load: a real `coupler coordinator` (HTTP on) and 2 `coupler worker`
// processes (2 slots each) run a 100,000-task noop job, alone and while a client hammers
// /metrics and /api/v1/jobs back to back over one keep-alive connection per thread, in the
// same run (alone, hammered, alone, hammered). The HTTP threads serve snapshots the event loop
// publishes at most every 250 ms, so the loop's cost does not grow with the request rate.
// Usage: bench_http_load [tasks=100000] [client_threads=1]
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_child.h"
#include "bench/free_port.h"
#include "bench/noop_jobs.h"
#include "client/client.h"

namespace {

namespace fs = std::filesystem;
using coupler::bench::Child;
using coupler::bench::WaitDone;
using coupler::bench::WriteNoopSpec;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Hammer {
  std::atomic<bool> stop{false};
  std::atomic<long> requests{0};
  std::atomic<long> failures{0};
  std::vector<std::thread> threads;

  void Start(const std::string& host, int port, const std::string& token, int n) {
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([this, host, port, token] {
        httplib::Client cli(host, port);
        cli.set_keep_alive(true);
        const httplib::Headers auth{{"Authorization", "Bearer " + token}};
        bool metrics = true;
        while (!stop.load()) {
          auto res = cli.Get(metrics ? "/metrics" : "/api/v1/jobs", auth);
          metrics = !metrics;
          if (res && res->status == 200) {
            ++requests;
          } else {
            ++failures;
          }
        }
      });
    }
  }
  void Stop() {
    stop = true;
    for (auto& t : threads) t.join();
  }
};

}  // namespace

int main(int argc, char** argv) {
  const long tasks = argc > 1 ? std::stol(argv[1]) : 100'000;
  const int client_threads = argc > 2 ? std::stoi(argv[2]) : 1;
  char tmpl[] = "/tmp/coupler-bench-http-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const int port = coupler::bench::FreePortPair();
  const std::string listen = "tcp://127.0.0.1:" + std::to_string(port);
  const fs::path state = dir / "state";
  const fs::path ready = dir / "ready";
  Child coordinator({"--log-level", "warn", "coordinator", "--listen", listen, "--state", state.string(),
                     "--http", "127.0.0.1:0", "--ready-file", ready.string()});
  std::string url;
  for (int i = 0; i < 200 && url.empty(); ++i) {
    const std::string r = ReadAll(ready);
    if (const size_t at = r.find("http=http://"); at != std::string::npos) {
      url = r.substr(at + 12, r.find('\n', at) - at - 12);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (url.empty()) {
    std::fprintf(stderr, "the coordinator wrote no http= line\n");
    return 1;
  }
  const std::string host = url.substr(0, url.rfind(':'));
  const int http_port = std::stoi(url.substr(url.rfind(':') + 1));
  std::string token = ReadAll(state / "http-token");
  while (!token.empty() && token.back() == '\n') token.pop_back();

  Child w1({"--log-level", "warn", "worker", "--coordinator", listen, "--slots", "2", "--id", "b1"});
  Child w2({"--log-level", "warn", "worker", "--coordinator", listen, "--slots", "2", "--id", "b2"});
  auto client = coupler::client::Client::Connect("tcp://127.0.0.1:" + std::to_string(port + 1),
                                                  std::chrono::seconds(10));
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().message().c_str());
    return 1;
  }
  auto& c = **client;
  for (int i = 0; i < 200; ++i) {
    auto w = c.Workers();
    if (w.ok() && w->size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string spec = WriteNoopSpec(dir, "noop", tasks);
  auto run = [&](bool hammered, long* served, double* served_per_s) {
    Hammer h;
    if (hammered) h.Start(host, http_port, token, client_threads);
    auto id = c.Submit(spec);
    if (!id.ok()) return 0.0;
    const auto st = WaitDone(c, *id);
    const double seconds = double(st.finished_ms - st.submitted_ms) / 1000.0;
    if (hammered) {
      h.Stop();
      *served = h.requests.load();
      *served_per_s = double(h.requests.load()) / seconds;
      if (h.failures.load() > 0) std::fprintf(stderr, "%ld HTTP requests failed\n", h.failures.load());
    }
    return double(st.tasks_done) / seconds;
  };
  long served1 = 0, served2 = 0;
  double rps1 = 0, rps2 = 0;
  const double alone1 = run(false, nullptr, nullptr);
  const double loaded1 = run(true, &served1, &rps1);
  const double alone2 = run(false, nullptr, nullptr);
  const double loaded2 = run(true, &served2, &rps2);
  if (alone1 == 0 || loaded1 == 0 || alone2 == 0 || loaded2 == 0) return 1;
  const double alone = (alone1 + alone2) / 2;
  const double loaded = (loaded1 + loaded2) / 2;
  std::printf("| measure | runs 1, 2 | mean |\n|---|---:|---:|\n");
  std::printf("| noop tasks/s, %ld-task job, no HTTP client | %.0f, %.0f | %.0f |\n", tasks, alone1,
              alone2, alone);
  std::printf("| noop tasks/s, same job, %d client(s) hammering /metrics + /api/v1/jobs | %.0f, %.0f | %.0f |\n",
              client_threads, loaded1, loaded2, loaded);
  std::printf("| HTTP requests answered during the job (per s) | %ld, %ld (%.0f, %.0f) | |\n", served1,
              served2, rps1, rps2);
  std::printf("| hammered / alone | | **%.2f** |\n", loaded / alone);
  fs::remove_all(dir);
  return 0;
}
