// Growing the pool mid-job: a real `coupler coordinator` and `coupler worker` processes
// (1 slot each) on loopback TCP, running one noop job whose tasks sleep, so the workers, not
// the coordinator, bound the rate.
//   1. tasks/s over a window with 2 workers;
//   2. a third worker starts; once it runs a task, tasks/s over an equal window with 3;
//   3. `coupler drain` on the third worker; the job must still end with every task done once
//      (attempts == total), i.e. growing and shrinking the pool loses and repeats nothing.
// Rates pair each done count with the coordinator's clock from the same status reply, so a
// slow status round trip on a loaded machine does not skew them.
// Usage: bench_pool [tasks=2500] [sleep_ms=20] [window_s=6]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_child.h"
#include "bench/free_port.h"
#include "client/client.h"

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

using coupler::bench::Child;

struct Sample {
  uint64_t done = 0;
  uint64_t coordinator_ms = 0;
  bool finished = false;
  coupler::wire::JobStatus job;
};

std::optional<Sample> Read(coupler::client::Client& c, const std::string& id,
                           milliseconds wait = milliseconds(0)) {
  auto r = c.Status(id, wait);
  if (!r.ok() || r->jobs.empty()) return std::nullopt;
  const auto& j = r->jobs[0];
  return Sample{j.tasks_done, r->coordinator.uptime_ms, j.state != coupler::job::JobPhase::kQueued && j.state != coupler::job::JobPhase::kRunning,
                j};
}

// Tasks/s over `window`, measured on the coordinator's clock.
std::optional<double> Rate(coupler::client::Client& c, const std::string& id,
                           std::chrono::seconds window) {
  const auto a = Read(c, id);
  std::this_thread::sleep_for(window);
  const auto b = Read(c, id);
  if (!a || !b || b->finished || b->coordinator_ms <= a->coordinator_ms) return std::nullopt;
  return double(b->done - a->done) * 1000.0 / double(b->coordinator_ms - a->coordinator_ms);
}

// Polls `ready` every 50 ms for up to `timeout`.
template <typename F>
bool Poll(F ready, milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

int Fail(const char* what) {
  std::fprintf(stderr, "bench_pool: %s\n", what);
  return 1;
}

int Run(const fs::path& dir, long tasks, long sleep_ms, std::chrono::seconds window) {
  const int port = coupler::bench::FreePortPair();
  const std::string listen = "tcp://127.0.0.1:" + std::to_string(port);
  Child coordinator({"coordinator", "--listen", listen, "--state", (dir / "state").string()},
                    /*quiet=*/true);
  auto client = coupler::client::Client::Connect("tcp://127.0.0.1:" + std::to_string(port + 1));
  if (!client.ok()) return Fail("cannot reach the coordinator");
  auto& c = **client;
  auto alive = [&c](size_t want, const std::string& running_id) {
    auto w = c.Workers();
    if (!w.ok()) return false;
    size_t n = 0;
    bool running = running_id.empty();
    for (const auto& s : *w) {
      n += s.state == coupler::pool::WorkerState::kAlive ? 1 : 0;
      if (s.id == running_id && s.running > 0) running = true;
    }
    return n >= want && running;
  };
  Child w1({"worker", "--coordinator", listen, "--slots", "1", "--id", "p1"}, /*quiet=*/true);
  Child w2({"worker", "--coordinator", listen, "--slots", "1", "--id", "p2"}, /*quiet=*/true);
  if (!Poll([&] { return alive(2, ""); }, milliseconds(30000))) return Fail("workers did not join");

  const fs::path spec = dir / "pool.yaml";
  std::ofstream(spec) << "name: pool\nworkdir: " << (dir / "work").string()
                      << "\nnodes:\n  - {id: n, op: noop, params: {tasks: " << tasks
                      << ", sleep_ms: " << sleep_ms << "}}\n";
  auto id = c.Submit(spec.string());
  if (!id.ok()) return Fail(id.status().message().c_str());
  // Warm up: both workers busy and their task timing (adaptive prefetch) settled.
  if (!Poll([&] { auto s = Read(c, *id); return s && s->done >= 20; }, milliseconds(60000))) {
    return Fail("the job did not start");
  }
  const auto two = Rate(c, *id, window);
  if (!two) return Fail("the job ended during the 2-worker window: give it more tasks");

  Child w3({"worker", "--coordinator", listen, "--slots", "1", "--id", "p3"}, /*quiet=*/true);
  if (!Poll([&] { return alive(3, "p3"); }, milliseconds(30000))) {
    return Fail("the third worker never ran a task");
  }
  const auto three = Rate(c, *id, window);
  if (!three) return Fail("the job ended during the 3-worker window: give it more tasks");

  Child drain({"drain", "p3", "--coordinator", listen}, /*quiet=*/true);
  const auto drained = drain.Wait(milliseconds(30000));
  if (!drained || *drained != 0) return Fail("`coupler drain p3` failed");
  // A drained worker leaves once it has finished what it holds.
  const bool p3_left = w3.Wait(milliseconds(60000)).has_value();

  std::optional<Sample> end;
  const bool ended = Poll([&] {
    end = Read(c, *id, milliseconds(5000));  // long poll: answers when the job ends
    return end && end->finished;
  }, milliseconds(600000));
  if (!ended) return Fail("the job did not end within 10 minutes");
  const auto& j = end->job;
  const uint64_t lost = j.tasks_total - j.tasks_done;
  const uint64_t rerun = j.attempts > j.tasks_total ? j.attempts - j.tasks_total : 0;

  std::printf("| measure | value |\n|---|---:|\n");
  std::printf("| noop tasks/s, %ld ms tasks, 2 workers x 1 slot (%lld s window) | %.1f |\n",
              sleep_ms, static_cast<long long>(window.count()), *two);
  std::printf("| same job, after a 3rd worker joined (%lld s window) | %.1f |\n",
              static_cast<long long>(window.count()), *three);
  std::printf("| 3 workers / 2 workers | %.2f |\n", *three / *two);
  std::printf("| job state after draining the 3rd worker | %s |\n", std::string(coupler::job::JobPhaseName(j.state)).c_str());
  std::printf("| tasks / done / attempts | %llu / %llu / %llu |\n",
              static_cast<unsigned long long>(j.tasks_total),
              static_cast<unsigned long long>(j.tasks_done),
              static_cast<unsigned long long>(j.attempts));
  std::printf("| drained worker left by itself | %s |\n", p3_left ? "yes" : "no");
  std::printf("\ntasks lost: %llu, re-run: %llu\n", static_cast<unsigned long long>(lost),
              static_cast<unsigned long long>(rerun));
  return j.state == coupler::job::JobPhase::kSucceeded && lost == 0 && rerun == 0 && p3_left ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const long tasks = argc > 1 ? std::stol(argv[1]) : 2500;
  const long sleep_ms = argc > 2 ? std::stol(argv[2]) : 20;
  const std::chrono::seconds window(argc > 3 ? std::stol(argv[3]) : 6);
  char tmpl[] = "/tmp/coupler-pool-bench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const int rc = Run(dir, tasks, sleep_ms, window);
  fs::remove_all(dir);
  return rc;
}
