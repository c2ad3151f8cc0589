// Whole-process dispatch benchmark: a real `coupler coordinator` and 2 `coupler worker`
// processes (2 slots each) on loopback TCP.
//   1. throughput: a 100,000-task noop job, timed by the coordinator (submitted → finished);
//   2. round trip: 200 one-task jobs in a row, submit → seen succeeded (median, p99);
//   3. memory: the coordinator's peak RSS after a 1,000,000-task job;
//   baseline: raw ZeroMQ in this process, ROUTER + 2 DEALER threads echoing 64-byte tasks
//   with 64 in flight each — the transport's ceiling on this machine, same run.
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
#include "coordinator/client.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using coupler::bench::Child;

std::string WriteSpec(const fs::path& dir, const std::string& name, long tasks) {
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << "name: " << name << "\nworkdir: " << (dir / "work").string()
                   << "\nnodes:\n  - {id: n, op: noop, params: {tasks: " << tasks << "}}\n";
  return p.string();
}

// Long-polls the job's status: the coordinator answers when the job finishes.
coupler::wire::JobStatus WaitDone(coupler::coordinator::Client& c, const std::string& id) {
  for (;;) {
    auto r = c.Status(id, std::chrono::milliseconds(5000));
    if (r.ok() && !r->jobs.empty() && r->jobs[0].state != "queued" && r->jobs[0].state != "running") {
      return r->jobs[0];
    }
  }
}

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

}  // namespace

int main(int argc, char** argv) {
  const long tasks = argc > 1 ? std::stol(argv[1]) : 100'000;
  const long big = argc > 2 ? std::stol(argv[2]) : 1'000'000;
  char tmpl[] = "/tmp/coupler-bench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const int port = 20000 + static_cast<int>(getpid() % 20000);
  const std::string listen = "tcp://127.0.0.1:" + std::to_string(port);
  {
    Child coordinator({"coordinator", "--listen", listen, "--state", (dir / "state").string()});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Child w1({"worker", "--coordinator", listen, "--slots", "2", "--id", "b1"});
    Child w2({"worker", "--coordinator", listen, "--slots", "2", "--id", "b2"});
    auto client = coupler::coordinator::Client::Connect("tcp://127.0.0.1:" + std::to_string(port + 1));
    if (!client.ok()) return 1;
    auto& c = **client;
    for (int i = 0; i < 100; ++i) {  // wait for both workers
      auto w = c.Workers();
      if (w.ok() && w->size() == 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }

    // 1. Throughput.
    auto id = c.Submit(WriteSpec(dir, "throughput", tasks));
    if (!id.ok()) {
      std::fprintf(stderr, "%s\n", id.status().message().c_str());
      return 1;
    }
    auto st = WaitDone(c, *id);
    const double secs = double(st.finished_ms - st.submitted_ms) / 1000.0;
    const double ours = double(st.tasks_done) / secs;

    // 2. Round trip of one-task jobs.
    const std::string one = WriteSpec(dir, "one", 1);
    std::vector<double> rt_ms, submit_ms, status_ms;
    for (int i = 0; i < 200; ++i) {
      const auto t0 = Clock::now();
      auto j = c.Submit(one);
      if (!j.ok()) return 1;
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

    // 3. Memory for a big job.
    auto bid = c.Submit(WriteSpec(dir, "big", big));
    if (!bid.ok()) return 1;
    auto bst = WaitDone(c, *bid);
    const double bsecs = double(bst.finished_ms - bst.submitted_ms) / 1000.0;
    const long rss = coordinator.PeakRssKb();

    const double raw = RawZmqTasksPerSecond(tasks);
    std::printf("| measure | value |\n|---|---:|\n");
    std::printf("| noop tasks/s, %ld-task job, 2 workers x 2 slots (coordinator's clock) | %.0f |\n", tasks, ours);
    std::printf("| raw ZeroMQ echo tasks/s, 64 in flight per peer (same run) | %.0f |\n", raw);
    std::printf("| ours / raw ZeroMQ | %.2f |\n", ours / raw);
    std::printf("| one-task job round trip, median (ms) | %.3f |\n", rt_ms[rt_ms.size() / 2]);
    std::printf("| one-task job round trip, p99 (ms) | %.3f |\n", rt_ms[rt_ms.size() * 99 / 100]);
    std::printf("| of which submit → job id, median (ms) | %.3f |\n", submit_ms[submit_ms.size() / 2]);
    std::printf("| one status request, median (ms) | %.3f |\n", status_ms[status_ms.size() / 2]);
    std::printf("| %ld-task job: tasks/s | %.0f |\n", big, double(bst.tasks_done) / bsecs);
    std::printf("| coordinator peak RSS after it (MiB) | %.1f |\n", double(rss) / 1024.0);
  }
  fs::remove_all(dir);
  return 0;
}
