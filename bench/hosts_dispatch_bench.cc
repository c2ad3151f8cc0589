// Dispatch across hosts vs on loopback, in the same run: a real `coupler coordinator` and 2
// `coupler worker` processes (2 slots each, keys on), either
//   hosts:    coordinator on host A of a TestBed (network namespaces on a bridge), workers on
//             hosts B and C with operator-made keys (tests/hosts/hosts_cluster.h), or
//   loopback: all three in this machine's namespace on 127.0.0.1 (tests/integration/...).
// Measured each way, with the in-process Client (made inside host A for the hosts run):
//   1. throughput: one N-task noop job, timed by the coordinator (submitted -> finished);
//   2. round trip: R one-task noop jobs in a row, submit -> seen finished (median, p99).
// Loopback runs before and after the hosts run: a drift in the machine's speed shows as a
// difference between the two. Needs root (network namespaces), as the hosts tests do.
// Usage: bench_hosts_dispatch [tasks=100000] [round_trips=100]
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/test_bed.h"
#include "tests/integration/coupler_cluster.h"

namespace {

namespace fs = std::filesystem;
using coupler::client::Client;
using coupler::itest::Clock;

struct Measure {
  double tasks_per_s = 0;
  double rt_median_ms = 0, rt_p99_ms = 0, submit_median_ms = 0, dispatch_median_ms = 0;
  bool encrypted = false;
  bool ok = false;
};

std::string WriteSpec(const fs::path& dir, const std::string& name, long tasks) {
  const fs::path p = dir / (name + ".yaml");
  coupler::itest::WriteFile(p, "name: " + name + "\nworkdir: " + (dir / "work").string() +
                                   "\nnodes:\n  - {id: n, op: noop, params: {tasks: " +
                                   std::to_string(tasks) + "}}\n");
  return p.string();
}

// Long-polls the job's status until it has finished (or a minute of no answer).
std::optional<coupler::wire::JobStatus> WaitDone(Client& c, const std::string& id) {
  const auto give_up = Clock::now() + std::chrono::seconds(600);
  while (Clock::now() < give_up) {
    auto r = c.Status(id, std::chrono::milliseconds(5000));
    if (r.ok() && !r->jobs.empty() && r->jobs[0].state != coupler::job::JobPhase::kQueued &&
        r->jobs[0].state != coupler::job::JobPhase::kRunning) {
      return r->jobs[0];
    }
  }
  return std::nullopt;
}

// A coordinator's client port is its worker port + 1.
std::string ClientEndpoint(const std::string& worker_endpoint) {
  const auto colon = worker_endpoint.rfind(':');
  return worker_endpoint.substr(0, colon + 1) +
         std::to_string(std::stoi(worker_endpoint.substr(colon + 1)) + 1);
}

Measure Run(Client& c, const fs::path& dir, long tasks, int round_trips) {
  Measure out;
  for (int i = 0; i < 200; ++i) {  // both workers registered
    auto w = c.Workers();
    size_t alive = 0;
    if (w.ok()) {
      for (const auto& s : *w) alive += s.state == coupler::pool::WorkerState::kAlive ? 1 : 0;
    }
    if (alive == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto id = c.Submit(WriteSpec(dir, "throughput", tasks));
  if (!id.ok()) {
    std::fprintf(stderr, "submit: %s\n", std::string(id.status().message()).c_str());
    return out;
  }
  auto st = WaitDone(c, *id);
  if (!st || st->state != coupler::job::JobPhase::kSucceeded) {
    std::fprintf(stderr, "the throughput job did not succeed\n");
    return out;
  }
  out.tasks_per_s = double(st->tasks_done) / (double(st->finished_ms - st->submitted_ms) / 1000.0);

  const std::string one = WriteSpec(dir, "one", 1);
  std::vector<double> rt_ms, submit_ms, dispatch_ms;
  for (int i = 0; i < round_trips; ++i) {
    const auto t0 = Clock::now();
    auto j = c.Submit(one);
    if (!j.ok()) return out;
    submit_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!WaitDone(c, *j)) return out;
    rt_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    dispatch_ms.push_back(rt_ms.back() - submit_ms.back());
  }
  std::sort(rt_ms.begin(), rt_ms.end());
  std::sort(submit_ms.begin(), submit_ms.end());
  out.submit_median_ms = submit_ms[submit_ms.size() / 2];
  std::sort(dispatch_ms.begin(), dispatch_ms.end());
  out.dispatch_median_ms = dispatch_ms[dispatch_ms.size() / 2];
  out.rt_median_ms = rt_ms[rt_ms.size() / 2];
  out.rt_p99_ms = rt_ms[rt_ms.size() * 99 / 100];
  auto s = c.Status();
  out.encrypted = s.ok() && s->coordinator.encrypted;
  out.ok = true;
  return out;
}

Measure Loopback(long tasks, int round_trips) {
  coupler::itest::Cluster cluster;
  if (!cluster.StartCoordinator()) {
    std::fprintf(stderr, "loopback coordinator did not start:\n%s\n", cluster.Logs().c_str());
    return {};
  }
  cluster.StartWorker("l1", 2);
  cluster.StartWorker("l2", 2);
  const std::string clients = ClientEndpoint(cluster.endpoint());
  coupler::client::ClientSecurity security;
  security.keys_dir = (cluster.keys() / "local-client").string();
  auto client = Client::Connect(clients, std::chrono::seconds(10), security);
  if (!client.ok()) {
    std::fprintf(stderr, "loopback client: %s\n", std::string(client.status().message()).c_str());
    return {};
  }
  Measure m = Run(**client, cluster.dir(), tasks, round_trips);
  if (!m.ok) std::fprintf(stderr, "%s\n", cluster.Logs().c_str());
  return m;
}

Measure Hosts(long tasks, int round_trips) {
  using coupler::itest::TestBed;
  TestBed bed;
  if (!bed.Start({"hostA", "hostB", "hostC"})) {
    std::fprintf(stderr, "test bed: %s\n", bed.error().c_str());
    return {};
  }
  coupler::itest::HostsCluster cluster(bed);
  const auto& a = bed.host("hostA");
  if (!cluster.StartCoordinator(a)) {
    std::fprintf(stderr, "hosts coordinator did not start:\n%s\n", cluster.Logs().c_str());
    return {};
  }
  cluster.StartWorker(bed.host("hostB"), "h1", 2);
  cluster.StartWorker(bed.host("hostC"), "h2", 2);
  // The client's context is made inside host A, so its I/O thread (where ZeroMQ makes its TCP
  // sockets) lives there too.
  std::unique_ptr<Client> client;
  std::string why;
  bed.InHost(a, [&] {
    coupler::client::ClientSecurity security;
    security.keys_dir = (cluster.keys() / "local-client").string();
    auto c =
        Client::Connect(ClientEndpoint(cluster.endpoint()), std::chrono::seconds(10), security);
    if (c.ok()) {
      client = std::move(*c);
    } else {
      why = std::string(c.status().message());
    }
  });
  if (!client) {
    std::fprintf(stderr, "hosts client: %s\n", why.c_str());
    return {};
  }
  Measure m = Run(*client, cluster.dir(), tasks, round_trips);
  if (!m.ok) std::fprintf(stderr, "%s\n", cluster.Logs().c_str());
  client.reset();  // before the bed's namespaces go
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const long tasks = argc > 1 ? std::stol(argv[1]) : 100'000;
  const int round_trips = argc > 2 ? std::stoi(argv[2]) : 100;
  if (auto why = coupler::itest::TestBed::SkipReason(); !why.empty()) {
    std::fprintf(stderr, "bench_hosts_dispatch: %s\n", why.c_str());
    return 1;
  }
  const Measure loop1 = Loopback(tasks, round_trips);
  const Measure hosts = Hosts(tasks, round_trips);
  const Measure loop2 = Loopback(tasks, round_trips);
  if (!loop1.ok || !hosts.ok || !loop2.ok) return 1;
  const double loop_tps = (loop1.tasks_per_s + loop2.tasks_per_s) / 2;
  const double loop_rt = (loop1.rt_median_ms + loop2.rt_median_ms) / 2;
  std::printf("| measure (keys on: %s) | hosts (A -> B, C) | loopback (runs 1, 2) "
              "| hosts / loopback |\n|---|---:|---:|---:|\n",
              hosts.encrypted && loop1.encrypted && loop2.encrypted ? "yes" : "NO");
  std::printf("| noop tasks/s, %ld-task job, 2 workers x 2 slots (coordinator's clock) | %.0f | "
              "%.0f, %.0f | %.2f |\n",
              tasks, hosts.tasks_per_s, loop1.tasks_per_s, loop2.tasks_per_s,
              hosts.tasks_per_s / loop_tps);
  std::printf("| one-task job round trip, median of %d (ms) | %.3f | %.3f, %.3f | %.2f |\n",
              round_trips, hosts.rt_median_ms, loop1.rt_median_ms, loop2.rt_median_ms,
              hosts.rt_median_ms / loop_rt);
  std::printf("| one-task job round trip, p99 (ms) | %.3f | %.3f, %.3f | |\n", hosts.rt_p99_ms,
              loop1.rt_p99_ms, loop2.rt_p99_ms);
  std::printf("| of which submit -> job id, median (ms) | %.3f | %.3f, %.3f | |\n",
              hosts.submit_median_ms, loop1.submit_median_ms, loop2.submit_median_ms);
  // Admission writes the workdir marker durably (two fsyncs), whose cost is the disk's, not the
  // network's, and swings with the machine's other I/O: this row is what crossing hosts costs.
  const double loop_dispatch = (loop1.dispatch_median_ms + loop2.dispatch_median_ms) / 2;
  std::printf("| of which job id -> seen finished, median (ms) | %.3f | %.3f, %.3f | %.2f |\n",
              hosts.dispatch_median_ms, loop1.dispatch_median_ms, loop2.dispatch_median_ms,
              hosts.dispatch_median_ms / loop_dispatch);
  return 0;
}
