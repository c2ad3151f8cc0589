// The digits training group across two hosts vs on one, with real coupler processes on the
// multi-host test bed (tests/hosts/test_bed.h: network namespaces on a private bridge, so it
// needs root). Coordinator on hostA; either one worker with 2 slots on hostB (the gang of 2 is
// local to hostB) or one 1-slot worker on each of hostB and hostC (the gang spans them, its
// remote daemon launched through `coupler gang-agent`). Each run is a job of import + a 2-rank
// train node (examples/train-digits.yaml, fp32, global batch 64 = 16 x 2 accumulate x 2 ranks);
// samples/s is what the group's rank 0 measured (the train node's metrics.json), so process
// start-up and placement are not in it. Placements alternate, `repeats` runs each; the table
// shows every run's figure and the median, and the median's ratio to the one-host one.
//   sudo build/bin/bench_hosts_train [epochs=100] [repeats=3]
// Both "hosts" share the machine's cores: the ratio prices the network path (veth + bridge and
// Open MPI's TCP transport instead of shared memory), not extra compute.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/hosts/gang_helpers.h"
#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/test_bed.h"

namespace {

using namespace coupler::itest;

struct Run {
  bool ok = false;
  double samples_per_s = 0;
  std::vector<std::string> hosts;
  std::string error;
};

// One job on a fresh deployment: `two_hosts` picks the placement.
Run TrainOnce(TestBed& bed, bool two_hosts, int epochs) {
  Run run;
  HostsCluster cluster(bed);
  if (!cluster.StartCoordinator(bed.host("hostA"))) {
    run.error = "coordinator did not start\n" + cluster.Logs();
    return run;
  }
  if (two_hosts) {
    cluster.StartWorker(bed.host("hostB"), "wB", 1);
    cluster.StartWorker(bed.host("hostC"), "wC", 1);
  } else {
    cluster.StartWorker(bed.host("hostB"), "wB", 2);
  }
  if (!cluster.WaitWorkersAlive(two_hosts ? 2 : 1, 90s)) {
    run.error = "workers did not come up\n" + cluster.Logs();
    return run;
  }
  const fs::path spec = cluster.dir() / "train.yaml";
  WriteFile(spec, "name: bench-hosts-train\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" +
                      (kSourceDir / "data" / "digits.csv").string() +
                      "], params: {shards: 2, label_column: label}}\n"
                      "  - id: train\n    op: train\n    inputs: [import]\n    ranks: 2\n"
                      "    params: {config: " +
                      (kSourceDir / "examples" / "train-digits.yaml").string() +
                      ", epochs: " + std::to_string(epochs) + ", precision: fp32}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  if (job.empty()) {
    run.error = "submit failed: " + why;
    return run;
  }
  const auto st = cluster.WaitJobFinished(job, 280s);
  if (!st || st->state != "succeeded") {
    run.error = "job " + (st ? st->state + ": " + st->error : std::string("never finished")) +
                "\n" + cluster.Logs();
    return run;
  }
  run.hosts = st->node("train").hosts;
  const std::string metrics = ReadFile(cluster.dir() / "work" / "train" / "metrics.json");
  std::smatch m;
  if (!std::regex_search(metrics, m, std::regex(R"("samples_per_s":([0-9.eE+-]+))"))) {
    run.error = "no samples_per_s in metrics.json: " + metrics;
    return run;
  }
  run.samples_per_s = std::stod(m[1]);
  run.ok = true;
  return run;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 100;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  if (epochs < 1 || repeats < 1) {
    std::fprintf(stderr, "usage: bench_hosts_train [epochs=100] [repeats=3]\n");
    return 2;
  }
  if (auto why = TestBed::SkipReason(); !why.empty()) {
    std::fprintf(stderr, "bench_hosts_train: %s\n", why.c_str());
    return 1;
  }
  if (!fs::exists(kSourceDir / "data" / "digits.csv")) {
    std::fprintf(stderr, "bench_hosts_train: data/digits.csv is missing: run scripts/fetch-digits.sh\n");
    return 1;
  }
  TestBed bed;
  if (!bed.Start({"hostA", "hostB", "hostC"})) {
    std::fprintf(stderr, "bench_hosts_train: %s\n", bed.error().c_str());
    return 1;
  }
  std::map<bool, std::vector<double>> rates;
  std::map<bool, std::vector<std::string>> hosts;
  for (int r = 0; r < repeats; ++r) {
    for (const bool two : {false, true}) {
      const Run run = TrainOnce(bed, two, epochs);
      if (!run.ok) {
        std::fprintf(stderr, "bench_hosts_train: %s run failed: %s\n", two ? "2-host" : "1-host",
                     run.error.c_str());
        return 1;
      }
      rates[two].push_back(run.samples_per_s);
      hosts[two] = run.hosts;
    }
  }
  const int steps = epochs * (1438 / 64);
  std::printf("digits MLP [64,128,10], 2 ranks, fp32, global batch 64, %d steps, %d run(s) each\n\n",
              steps, repeats);
  std::printf("| placement | hosts | samples/s (median) | runs | ratio |\n|---|---|---:|---|---:|\n");
  const double base = Median(rates[false]);
  for (const bool two : {false, true}) {
    std::string runs;
    for (const double v : rates[two]) {
      runs += (runs.empty() ? "" : ", ") + std::to_string(static_cast<long>(v));
    }
    const double med = Median(rates[two]);
    std::printf("| %s | %s | %ld | %s | %.2f |\n", two ? "2 hosts (1 rank each)" : "1 host (2 ranks)",
                Join(hosts[two]).c_str(), static_cast<long>(med), runs.c_str(),
                base > 0 ? med / base : 0.0);
  }
  return 0;
}
