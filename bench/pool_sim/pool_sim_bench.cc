// bench_pool_sim: the coordinator's envelope against simulated workers (sim_pool.h) on the real
// wire with keys on. One coordinator (the real binary), N simulated workers x S slots in this
// process, then:
//   1. connect: how long until all N are registered and alive;
//   2. dispatch: a job of T noop tasks (tasks take no time), tasks/s by the coordinator's
//      clock, while a client asks `status` for the job every 20 ms (p50/p99 of those);
//   3. memory: the coordinator's peak RSS after the job;
//   4. restart: a second job of T tasks, the coordinator killed (SIGKILL) a quarter in and
//      started again: time from its start to the pool being registered again, and to the job
//      dealing at its full rate again; every task committed once.
//
//   bench_pool_sim WORKERS SLOTS TASKS [THREADS]
// Prints a Markdown table (docs/scale.md). COUPLER_BENCH_KEEP=1 keeps the run's folder (the
// coordinator's state and event log, named in its first line) to read afterwards.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_child.h"
#include "bench/free_port.h"
#include "bench/noop_jobs.h"
#include "bench/pool_sim/sim_pool.h"
#include "client/client.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using coupler::bench::Child;

namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

size_t Alive(coupler::client::Client& c) {
  auto w = c.Workers();
  if (!w.ok()) return 0;
  size_t n = 0;
  for (const auto& s : *w) n += s.state == coupler::pool::WorkerState::kAlive ? 1 : 0;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: bench_pool_sim WORKERS SLOTS TASKS [THREADS]\n");
    return 2;
  }
  const size_t workers = std::stoul(argv[1]);
  const uint32_t slots = static_cast<uint32_t>(std::stoul(argv[2]));
  const long tasks = std::stol(argv[3]);
  const size_t threads = argc > 4 ? std::stoul(argv[4]) : 1;
  const fs::path dir = fs::temp_directory_path() / ("coupler-poolsim-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const int port = coupler::bench::FreePortPair();
  const std::string listen = "tcp://127.0.0.1:" + std::to_string(port);
  const fs::path state = dir / "state";
  const std::vector<std::string> coordinator_args = {"coordinator", "--listen", listen, "--state",
                                                     state.string(), "--dead-after-ms", "20000"};
  auto coordinator = std::make_unique<Child>(coordinator_args, true);
  std::unique_ptr<coupler::client::Client> client;
  for (int i = 0; i < 100 && !client; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto c = coupler::client::Client::Connect("tcp://127.0.0.1:" + std::to_string(port + 1),
                                              std::chrono::seconds(5));
    if (c.ok()) client = std::move(*c);
  }
  if (!client) {
    std::fprintf(stderr, "no coordinator\n");
    return 1;
  }
  coupler::bench::SimPoolOptions sim;
  sim.coordinator = listen;
  sim.keys_dir = (state / "keys").string();
  sim.workers = workers;
  sim.slots = slots;
  sim.prefetch = slots;
  sim.threads = threads;
  sim.heartbeat_ms = 1000;
  const auto t0 = Clock::now();
  auto pool = coupler::bench::SimPool::Start(sim);
  if (!pool.ok()) {
    std::fprintf(stderr, "%s\n", pool.status().ToString().c_str());
    return 1;
  }
  while (Alive(*client) < workers && Clock::now() - t0 < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double connect_ms = Ms(Clock::now() - t0);
  const size_t alive = Alive(*client);

  // 2. Dispatch, with status asked every 20 ms.
  auto id = client->Submit(coupler::bench::WriteNoopSpec(dir, "dispatch", tasks));
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.status().ToString().c_str());
    return 1;
  }
  std::vector<double> status_ms;
  coupler::wire::JobStatus done;
  for (;;) {
    const auto s0 = Clock::now();
    auto r = client->Status(*id);
    status_ms.push_back(Ms(Clock::now() - s0));
    if (r.ok() && !r->jobs.empty() && coupler::job::IsFinished(r->jobs[0].state)) {
      done = r->jobs[0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double rate = double(done.tasks_done) / (double(done.finished_ms - done.submitted_ms) / 1000.0);
  const long rss_kb = coordinator->PeakRssKb();

  // 4. Restart mid-job.
  auto second = client->Submit(coupler::bench::WriteNoopSpec(dir, "restart", tasks));
  if (!second.ok()) return 1;
  for (;;) {
    auto r = client->Status(*second);
    if (r.ok() && !r->jobs.empty() && r->jobs[0].tasks_done >= static_cast<uint64_t>(tasks / 4)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(coordinator->pid(), SIGKILL);
  (void)coordinator->Wait(std::chrono::seconds(30));
  client.reset();
  const auto r0 = Clock::now();
  coordinator = std::make_unique<Child>(coordinator_args, true);
  for (int i = 0; i < 600 && !client; ++i) {
    auto c = coupler::client::Client::Connect("tcp://127.0.0.1:" + std::to_string(port + 1),
                                              std::chrono::seconds(5));
    if (c.ok()) client = std::move(*c);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!client) return 1;
  while (Alive(*client) < workers && Clock::now() - r0 < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double rejoin_ms = Ms(Clock::now() - r0);
  // Full dispatch again: the first 200 ms window after the restart that deals at least 90% of
  // the pre-crash rate.
  double full_ms = -1;
  uint64_t last_done = 0;
  auto last_t = Clock::now();
  coupler::wire::JobStatus end;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto r = client->Status(*second);
    if (!r.ok() || r->jobs.empty()) continue;
    const auto now = Clock::now();
    const uint64_t d = r->jobs[0].tasks_done;
    const double window_rate = double(d - std::min(d, last_done)) / (Ms(now - last_t) / 1000.0);
    if (full_ms < 0 && last_done > 0 && window_rate >= 0.9 * rate) full_ms = Ms(last_t - r0);
    last_done = d;
    last_t = now;
    if (coupler::job::IsFinished(r->jobs[0].state)) {
      end = r->jobs[0];
      break;
    }
  }
  uint64_t twice = 0;
  for (const auto& [task, n] : (*pool)->Starts()) twice += n > 1 ? 1 : 0;
  (*pool)->Stop();

  std::printf("| measure | %zu workers x %u slots, keys |\n|---|---:|\n", workers, slots);
  std::printf("| workers registered and alive | %zu in %.0f ms |\n", alive, connect_ms);
  std::printf("| noop tasks/s, %ld-task job (coordinator's clock) | %.0f |\n", tasks, rate);
  std::printf("| status during dispatch, p50 / p99 (ms) | %.2f / %.2f (%zu requests) |\n",
              Percentile(status_ms, 0.5), Percentile(status_ms, 0.99), status_ms.size());
  std::printf("| coordinator peak RSS after it (MiB) | %.1f |\n", double(rss_kb) / 1024.0);
  std::printf("| kill -9 mid-job: restart to all workers registered again (ms) | %.0f |\n", rejoin_ms);
  std::printf("| kill -9 mid-job: restart to dealing at >= 90%% of the rate again (ms) | %.0f |\n", full_ms);
  std::printf("| that job: %s, %lu of %lu tasks, %lu attempts; tasks started twice | %lu |\n",
              std::string(coupler::job::JobPhaseName(end.state)).c_str(),
              static_cast<unsigned long>(end.tasks_done), static_cast<unsigned long>(end.tasks_total),
              static_cast<unsigned long>(end.attempts), static_cast<unsigned long>(twice));
  coordinator.reset();
  if (std::getenv("COUPLER_BENCH_KEEP") == nullptr) fs::remove_all(dir);
  return end.state == coupler::job::JobPhase::kSucceeded ? 0 : 1;
}
