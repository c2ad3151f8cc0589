// Whole-process dispatch benchmark: a real `coupler coordinator` and 2 `coupler worker`
// processes (2 slots each) on loopback TCP.
//   1. throughput: a 100,000-task noop job, timed by the coordinator (submitted → finished);
//   2. round trip: 200 one-task jobs in a row, submit → seen succeeded (median, p99);
//   3. memory: the coordinator's peak RSS after a 1,000,000-task job;
//   baseline: raw ZeroMQ in this process, ROUTER + 2 DEALER threads echoing 64-byte tasks
//   with 64 in flight each — the transport's ceiling on this machine, same run.
// 1 and 2 run with keys (CURVE, the default) and with --insecure, in the same run.
// Usage: bench_dispatch [tasks=100000] [big=1000000]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "bench/bench_child.h"
#include "bench/free_port.h"
#include "bench/noop_jobs.h"
#include "client/client.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using coupler::bench::Child;
using coupler::bench::WaitDone;
using coupler::bench::WriteNoopSpec;

double RawZmqTasksPerSecond(long tasks) {
  zmq::context_t ctx(1);
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.bind("tcp://127.0.0.1:*");
  const std::string ep = router.get(zmq::sockopt::last_endpoint);
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&ctx, ep, w] {
      zmq::socket_t d(ctx, zmq::socket_type::dealer);
      d.set(zmq::sockopt::routing_id, "w" + std::to_string(w));
      d.connect(ep);
      d.send(zmq::str_buffer("hello"));
      for (;;) {
        zmq::message_t m;
        if (!d.recv(m)) return;
        if (m.size() == 1) return;  // stop
        d.send(m, zmq::send_flags::none);
      }
    });
  }
  std::string ids[2];
  for (int i = 0; i < 2; ++i) {
    zmq::message_t id, hello;
    (void)router.recv(id);
    (void)router.recv(hello);
    ids[i] = id.to_string();
  }
  const std::string payload(64, 'x');
  long sent = 0, done = 0;
  const auto start = Clock::now();
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 64 && sent < tasks; ++k, ++sent) {
      router.send(zmq::buffer(ids[i]), zmq::send_flags::sndmore);
      router.send(zmq::buffer(payload));
    }
  }
  while (done < tasks) {
    zmq::message_t id, body;
    (void)router.recv(id);
    (void)router.recv(body);
    ++done;
    if (sent < tasks) {
      router.send(id, zmq::send_flags::sndmore);
      router.send(body, zmq::send_flags::none);
      ++sent;
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  for (int i = 0; i < 2; ++i) {
    router.send(zmq::buffer(ids[i]), zmq::send_flags::sndmore);
    router.send(zmq::str_buffer("x"));
  }
  for (auto& t : workers) t.join();
  return double(tasks) / s;
}

struct Run {
  double tasks_per_s = 0;
  double rt_median_ms = 0, rt_p99_ms = 0, submit_median_ms = 0, status_median_ms = 0;
  double big_tasks_per_s = 0;
  long peak_rss_kb = 0;
  bool ok = false;
};

// One pool (coordinator + 2 workers x 2 slots on loopback TCP), keys on (the default) or
// --insecure, measured the same way. `big` > 0 also runs the memory measure.
Run Measure(const fs::path& dir, bool insecure, long tasks, long big) {
  Run out;
  static int run = 0;
  const fs::path state = dir / ("state-" + std::to_string(run++));
  const int port = coupler::bench::FreePortPair();
  const std::string listen = "tcp://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> plain;
  if (insecure) plain.push_back("--insecure");
  auto args = [&](std::vector<std::string> a) {
    a.insert(a.end(), plain.begin(), plain.end());
    return a;
  };
  Child coordinator(args({"coordinator", "--listen", listen, "--state", state.string()}));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  Child w1(args({"worker", "--coordinator", listen, "--slots", "2", "--id", "b1"}));
  Child w2(args({"worker", "--coordinator", listen, "--slots", "2", "--id", "b2"}));
  coupler::client::ClientSecurity security;
  security.insecure = insecure;
  auto client = coupler::client::Client::Connect("tcp://127.0.0.1:" + std::to_string(port + 1),
                                                      std::chrono::seconds(10), security);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().message().c_str());
    return out;
  }
  auto& c = **client;
  for (int i = 0; i < 100; ++i) {  // wait for both workers
    auto w = c.Workers();
    if (w.ok() && w->size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // 1. Throughput.
  auto id = c.Submit(WriteNoopSpec(dir, "throughput", tasks));
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.status().message().c_str());
    return out;
  }
  auto st = WaitDone(c, *id);
  out.tasks_per_s = double(st.tasks_done) / (double(st.finished_ms - st.submitted_ms) / 1000.0);

  // 2. Round trip of one-task jobs.
  const std::string one = WriteNoopSpec(dir, "one", 1);
  std::vector<double> rt_ms, submit_ms, status_ms;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = Clock::now();
    auto j = c.Submit(one);
    if (!j.ok()) return out;
    submit_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    WaitDone(c, *j);
    rt_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    const auto t1 = Clock::now();
    (void)c.Status(*j);
    status_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t1).count());
  }
  std::sort(rt_ms.begin(), rt_ms.end());
  std::sort(submit_ms.begin(), submit_ms.end());
  std::sort(status_ms.begin(), status_ms.end());
  out.rt_median_ms = rt_ms[rt_ms.size() / 2];
  out.rt_p99_ms = rt_ms[rt_ms.size() * 99 / 100];
  out.submit_median_ms = submit_ms[submit_ms.size() / 2];
  out.status_median_ms = status_ms[status_ms.size() / 2];

  // 3. Memory for a big job.
  if (big > 0) {
    auto bid = c.Submit(WriteNoopSpec(dir, "big", big));
    if (!bid.ok()) return out;
    auto bst = WaitDone(c, *bid);
    out.big_tasks_per_s = double(bst.tasks_done) / (double(bst.finished_ms - bst.submitted_ms) / 1000.0);
    out.peak_rss_kb = coordinator.PeakRssKb();
  }
  out.ok = true;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const long tasks = argc > 1 ? std::stol(argv[1]) : 100'000;
  const long big = argc > 2 ? std::stol(argv[2]) : 1'000'000;
  char tmpl[] = "/tmp/coupler-bench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  // Plaintext first, then keys, then plaintext again: a drift in the machine's speed during
  // the run shows as a difference between the two plaintext runs.
  const Run plain1 = Measure(dir, true, tasks, 0);
  const Run keys = Measure(dir, false, tasks, big);
  const Run plain2 = Measure(dir, true, tasks, 0);
  if (!plain1.ok || !keys.ok || !plain2.ok) return 1;
  const double raw = RawZmqTasksPerSecond(tasks);
  const double plain_tps = (plain1.tasks_per_s + plain2.tasks_per_s) / 2;
  std::printf("| measure | keys (CURVE) | --insecure (runs 1, 2) |\n|---|---:|---:|\n");
  std::printf("| noop tasks/s, %ld-task job, 2 workers x 2 slots (coordinator's clock) | %.0f | %.0f, %.0f |\n",
              tasks, keys.tasks_per_s, plain1.tasks_per_s, plain2.tasks_per_s);
  std::printf("| keys / --insecure throughput | %.2f | |\n", keys.tasks_per_s / plain_tps);
  std::printf("| one-task job round trip, median (ms) | %.3f | %.3f, %.3f |\n", keys.rt_median_ms,
              plain1.rt_median_ms, plain2.rt_median_ms);
  std::printf("| one-task job round trip, p99 (ms) | %.3f | %.3f, %.3f |\n", keys.rt_p99_ms,
              plain1.rt_p99_ms, plain2.rt_p99_ms);
  std::printf("| of which submit -> job id, median (ms) | %.3f | %.3f, %.3f |\n",
              keys.submit_median_ms, plain1.submit_median_ms, plain2.submit_median_ms);
  std::printf("| one status request, median (ms) | %.3f | %.3f, %.3f |\n", keys.status_median_ms,
              plain1.status_median_ms, plain2.status_median_ms);
  std::printf("| raw ZeroMQ echo tasks/s, 64 in flight per peer (same run) | %.0f | |\n", raw);
  std::printf("| ours (keys) / raw ZeroMQ | %.2f | |\n", keys.tasks_per_s / raw);
  std::printf("| %ld-task job (keys): tasks/s | %.0f | |\n", big, keys.big_tasks_per_s);
  std::printf("| coordinator peak RSS after it (MiB) | %.1f | |\n", double(keys.peak_rss_kb) / 1024.0);
  fs::remove_all(dir);
  return 0;
}
