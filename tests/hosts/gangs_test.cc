// Gangs across hosts, end to end on the test bed: coordinator on hostA, one single-slot worker
// on each of hostB, hostC and hostD, nothing but the product's own settings (no ssh, no launch
// agent of the bed, no MCA parameters from the test):
//  - a user's 3-rank MPI program (mpi_exec) runs one rank per host and the ranks talk;
//  - the digits pipeline trains its 2-rank group across two hosts, held-out accuracy >= 0.95;
//  - a rank's host cut off mid-training fails the attempt as soon as its worker is declared
//    dead (no hang), the retry runs on the hosts left, resumes from the checkpoint and the job
//    succeeds; once the link is back the cut host's stalled daemon and rank end.
// A fake `ssh` first on the workers' PATH proves no launch goes through ssh. Every test skips
// without root (network namespaces need it; CI runs as root).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <set>

#include "runtime/io/shard_file.h"
#include "tests/hosts/gang_helpers.h"
#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/test_bed.h"

namespace coupler::itest {
namespace {

const fs::path kDigits = kSourceDir / "data" / "digits.csv";

// A folder of fake `ssh` and `rsh` that note their arguments in `marker` and fail: put first
// on a worker's PATH, any launch that falls back to them leaves the marker behind.
std::map<std::string, std::string> NoSshEnv(const fs::path& dir, const fs::path& marker) {
  const fs::path bin = dir / "fake-ssh-bin";
  fs::create_directories(bin);
  for (const char* name : {"ssh", "rsh"}) {
    WriteFile(bin / name, "#!/bin/sh\necho \"" + std::string(name) + " $*\" >> " +
                              marker.string() + "\nexit 1\n");
    fs::permissions(bin / name, fs::perms::owner_all);
  }
  const char* path = std::getenv("PATH");
  return {{"PATH", bin.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")}};
}

// The pool of every test here: coordinator on hostA; wB, wC, wD with one slot each on hostB,
// hostC, hostD. False (with the reason in the cluster's logs) if they did not all come up.
bool StartPool(TestBed& bed, HostsCluster& cluster, const std::map<std::string, std::string>& env) {
  if (!cluster.StartCoordinator(bed.host("hostA"))) return false;
  for (const char* h : {"B", "C", "D"}) {
    cluster.StartWorker(bed.host(std::string("host") + h), std::string("w") + h, 1, {}, env);
  }
  return cluster.WaitWorkersAlive(3, 90s);
}

std::set<std::string> PoolAddresses(const TestBed& bed) {
  return {bed.host("hostB").address(), bed.host("hostC").address(), bed.host("hostD").address()};
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 1000.0;
}

TEST(GangsTest, MpiExecRunsOneRankOnEachOfThreeHostsWithoutSsh) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC", "hostD"})) << bed.error();
  HostsCluster cluster(bed);
  const fs::path marker = cluster.dir() / "ssh-was-used";
  ASSERT_TRUE(StartPool(bed, cluster, NoSshEnv(cluster.dir(), marker))) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "small.csv", 30, 2);
  const fs::path spec = cluster.dir() / "three-hosts.yaml";
  WriteFile(spec, std::string("name: three-hosts\nworkdir: work\nnodes:\n"
                              "  - {id: import, op: import_csv, inputs: [small.csv], params: {shards: 3}}\n"
                              "  - id: program\n    op: mpi_exec\n    inputs: [import]\n    ranks: 3\n"
                              "    params:\n"
                              "      command: \"mpirun --allow-run-as-root --oversubscribe --timeout 100"
                              " -np {ranks} --hostfile {hostfile} ") +
                      COUPLER_RANK_ADDRESS_BINARY + " {output}\"\n      timeout: 120\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job, 180s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();

  const fs::path out = cluster.dir() / "work" / "latest" / "program";
  const auto ranks = RankFiles(out);
  ASSERT_EQ(ranks.size(), 3u) << ReadFile(out / "hostfile") << cluster.Logs();
  std::set<std::string> addresses;
  for (const auto& [rank, v] : ranks) {
    addresses.insert(v.at("address"));
    EXPECT_EQ(v.at("size"), "3") << "rank " << rank;
    EXPECT_EQ(v.at("sum"), "3") << "rank " << rank << ": the Allreduce did not add up";
  }
  // One rank per host: all three differ, and they are exactly the workers' hosts.
  EXPECT_EQ(addresses, PoolAddresses(bed));
  const NodeView program = st->node("program");
  EXPECT_EQ(program.ranks, 3u);
  EXPECT_EQ(std::set<std::string>(program.hosts.begin(), program.hosts.end()), PoolAddresses(bed))
      << Join(program.hosts);
  EXPECT_EQ(program.hosts.size(), 3u) << Join(program.hosts);
  EXPECT_FALSE(fs::exists(marker)) << "a launch went through ssh: " << ReadFile(marker);
}

// The digits pipeline of examples/digits-pipeline.yaml, with its data, on `config`
// (examples/train-digits.yaml unless given).
void WriteDigitsPipeline(const fs::path& spec,
                         const fs::path& config = kSourceDir / "examples" / "train-digits.yaml") {
  WriteFile(spec, "name: digits-hosts\nworkdir: work\nnodes:\n"
                  "  - id: import\n    op: import_csv\n    inputs: [" + kDigits.string() + "]\n"
                  "    params: {shards: 8, header: true, label_column: label}\n"
                  "  - {id: stats, op: column_stats, inputs: [import]}\n"
                  "  - {id: standardize, op: standardize, inputs: [import, stats]}\n"
                  "  - id: train\n    op: train\n    inputs: [standardize]\n    ranks: 2\n"
                  "    retries: 2\n    params:\n"
                  "      config: " + config.string() + "\n"
                  "      precision: bf16\n      accumulate: 2\n"
                  "  - id: evaluate\n    op: evaluate\n    inputs: [standardize, train]\n"
                  "    params: {label_column: label}\n");
}

// The held-out accuracy evaluate wrote (its reduce's single row).
double EvaluatedAccuracy(const fs::path& work) {
  auto table = io::ReadShardFile((work / "evaluate" / PartName(0)).string());
  if (!table.ok() || table->Find("accuracy") == nullptr) return -1;
  return table->Find("accuracy")->values<double>()[0];
}

TEST(GangsTest, DigitsPipelineTrainsItsGroupAcrossTwoHosts) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  ASSERT_TRUE(fs::exists(kDigits)) << kDigits << " is missing: run scripts/fetch-digits.sh";
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC", "hostD"})) << bed.error();
  HostsCluster cluster(bed);
  const fs::path marker = cluster.dir() / "ssh-was-used";
  ASSERT_TRUE(StartPool(bed, cluster, NoSshEnv(cluster.dir(), marker))) << cluster.Logs();

  const fs::path spec = cluster.dir() / "digits.yaml";
  WriteDigitsPipeline(spec);
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job, 240s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();

  const NodeView train = st->node("train");
  EXPECT_EQ(train.ranks, 2u);
  EXPECT_EQ(train.attempts, 1u);
  ASSERT_EQ(train.hosts.size(), 2u) << Join(train.hosts);
  EXPECT_NE(train.hosts[0], train.hosts[1]) << "the group did not span two hosts";
  for (const auto& h : train.hosts) EXPECT_EQ(PoolAddresses(bed).count(h), 1u) << h;

  const fs::path work = cluster.dir() / "work" / "latest";
  const std::string metrics = ReadFile(work / "train" / "metrics.json");
  EXPECT_NE(metrics.find(R"("world_size":2)"), std::string::npos) << metrics;
  const double accuracy = EvaluatedAccuracy(work);
  std::cout << "held-out accuracy " << accuracy << " with the group on " << Join(train.hosts)
            << "\n";
  EXPECT_GE(accuracy, 0.95) << metrics;
  EXPECT_FALSE(fs::exists(marker)) << "a launch went through ssh: " << ReadFile(marker);
}

bool HasCheckpoint(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() != ".tmp") return true;
  }
  return false;
}

// 1797 rows less the 359 held out, in global batches of 64.
constexpr int kStepsPerEpoch = 1438 / 64;

TEST(GangsTest, CuttingARanksHostFailsTheAttemptAndTheRetryResumesOnTheHostsLeft) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  ASSERT_TRUE(fs::exists(kDigits)) << kDigits << " is missing: run scripts/fetch-digits.sh";
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC", "hostD"})) << bed.error();
  HostsCluster::Options options;
  // Shorter than anything that could end the attempt, so the cut worker is dead (and not
  // offered to the retry) by the time its gang fails.
  options.dead_after_ms = 2500;
  HostsCluster cluster(bed, options);
  const fs::path marker = cluster.dir() / "ssh-was-used";
  ASSERT_TRUE(StartPool(bed, cluster, NoSshEnv(cluster.dir(), marker))) << cluster.Logs();

  // The example's config, long enough that the cut lands mid-run (22,000 steps: about 8 s
  // here unloaded), with a checkpoint every kCheckpointEvery steps.
  constexpr int kEpochs = 1000;
  constexpr int kCheckpointEvery = 200;
  const fs::path config = cluster.dir() / "train-long.yaml";
  WriteFile(config, "label_column: label\ntest_fraction: 0.2\nlayers: [64, 128, 10]\n"
                    "optimizer: adamw\nlr: 0.003\nepochs: " + std::to_string(kEpochs) + "\n"
                    "global_batch: 64\nmicro_batch: 16\naccumulate: 2\nprecision: fp32\n"
                    "seed: 1234\ncheckpoint_every: " + std::to_string(kCheckpointEvery) + "\n");
  const fs::path spec = cluster.dir() / "digits.yaml";
  WriteDigitsPipeline(spec, config);
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // The group runs on two hosts and rank 0 has written a checkpoint: cut the other rank's host.
  const fs::path checkpoints = cluster.dir() / "work" / "latest" / "train" / "checkpoints";
  std::vector<std::string> first_hosts;
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (!HasCheckpoint(checkpoints)) return false;
        if (auto v = cluster.Job(job)) first_hosts = v->node("train").hosts;
        return first_hosts.size() == 2;
      },
      180s, 50ms))
      << "the group never ran with a checkpoint\n" << cluster.Logs();
  const std::string cut_name = HostNameOf(bed, first_hosts[1]);
  ASSERT_FALSE(cut_name.empty()) << Join(first_hosts);
  const Host& cut_host = bed.host(cut_name);
  const std::string cut_worker = "w" + cut_name.substr(4);  // hostC -> wC
  ASSERT_TRUE(bed.CutLink(cut_host)) << bed.Logs();
  const auto cut = Clock::now();

  // The cut worker is declared dead; the attempt fails (the node's attempts count goes up, or
  // the job ends); then the retry's hosts are known, and the link comes back while the retry
  // runs (the cut host's stalled rank spins on a core this machine's retry needs).
  // The processes on the cut host other than its worker.
  auto stale = [&] {
    std::vector<pid_t> left;
    for (pid_t p : bed.Pids(cut_host)) {
      if (p != cluster.worker(cut_worker).pid()) left.push_back(p);
    }
    return left;
  };
  std::optional<Clock::duration> dead_after, failed_after, stale_gone_after;
  std::optional<Clock::time_point> restored;
  std::vector<std::string> retry_hosts;
  std::optional<JobView> last;
  WaitUntil(
      [&] {
        if (!dead_after && cluster.Workers()[cut_worker].state == "lost") {
          dead_after = Clock::now() - cut;
        }
        if (auto v = cluster.Job(job)) last = v;
        if (!last) return false;
        const NodeView train = last->node("train");
        if (!failed_after && (train.attempts >= 2 || last->finished())) {
          failed_after = Clock::now() - cut;
        }
        if (train.attempts >= 2 && train.hosts.size() == 2) retry_hosts = train.hosts;
        if (!retry_hosts.empty() && !restored && bed.RestoreLink(cut_host)) {
          restored = Clock::now();
        }
        if (restored && !stale_gone_after && stale().empty()) {
          stale_gone_after = Clock::now() - *restored;
        }
        return last->finished();
      },
      240s, 100ms);
  const auto finished_after = Clock::now() - cut;
  if (!restored) {
    ASSERT_TRUE(bed.RestoreLink(cut_host)) << bed.Logs();
    restored = Clock::now();
  }
  std::cout << "cut " << cut_name << " (" << cut_host.address() << ") of the group on "
            << Join(first_hosts) << "; " << cut_worker << " declared dead "
            << (dead_after ? std::to_string(Seconds(*dead_after)) : std::string("never"))
            << " s and the attempt failed "
            << (failed_after ? std::to_string(Seconds(*failed_after)) : std::string("never"))
            << " s after the cut; retry on " << Join(retry_hosts) << "; link restored "
            << Seconds(*restored - cut) << " s and the job finished " << Seconds(finished_after)
            << " s after the cut\n";
  ASSERT_TRUE(last && last->finished()) << "the job hung after the cut\n" << cluster.Logs();
  ASSERT_EQ(last->state, "succeeded") << last->error << "\n" << cluster.Logs();
  ASSERT_TRUE(failed_after.has_value());
  EXPECT_TRUE(dead_after.has_value()) << cut_worker << " was never declared dead";
  // The coordinator ends the lost host's launch when it declares its worker dead, so the group
  // ends then, not at the gang agent's own silence timeout (20 s) nor the collectives' (300 s):
  // the attempt's error is the launcher's word on the lost host, not Open MPI's banner.
  std::string coordinator_log;
  for (const auto& e : fs::directory_iterator(cluster.logs())) {
    if (e.path().filename().string().starts_with("coordinator-") && e.path().extension() == ".err") {
      coordinator_log += ReadFile(e.path());
    }
  }
  EXPECT_THAT(coordinator_log, ::testing::HasSubstr("attempt 0 failed on"));
  EXPECT_THAT(coordinator_log, ::testing::HasSubstr("coupler: lost " + cut_host.address() +
                                                    ": its worker " + cut_worker +
                                                    " was declared dead"))
      << "the cut group did not fail on its lost host";

  const NodeView train = last->node("train");
  EXPECT_EQ(train.attempts, 2u) << "the cut group should have been retried once";
  if (retry_hosts.empty()) retry_hosts = train.hosts;
  ASSERT_EQ(retry_hosts.size(), 2u) << Join(retry_hosts);
  std::set<std::string> expected = PoolAddresses(bed);
  expected.erase(cut_host.address());
  EXPECT_EQ(std::set<std::string>(retry_hosts.begin(), retry_hosts.end()), expected)
      << "the retry was not placed on the hosts left: " << Join(retry_hosts);

  // The retry continued from a checkpoint: it ran fewer steps than the whole schedule.
  const fs::path work = cluster.dir() / "work" / "latest";
  const std::string metrics = ReadFile(work / "train" / "metrics.json");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics, m, std::regex(R"("steps":([0-9.eE+-]+))"))) << metrics;
  const double steps = std::stod(m[1]);
  EXPECT_GT(steps, 0) << metrics;
  EXPECT_LE(steps, kEpochs * kStepsPerEpoch - kCheckpointEvery)
      << "not resumed from a checkpoint: " << metrics;
  EXPECT_GE(EvaluatedAccuracy(work), 0.9) << metrics;
  EXPECT_FALSE(fs::exists(marker)) << "a launch went through ssh: " << ReadFile(marker);

  // Once the link is back, the cut host's part of the failed attempt (its MPI daemon and rank,
  // stalled through the cut) ends, leaving only its worker, which has registered again.
  std::vector<pid_t> left;
  const bool cleaned = WaitUntil(
      [&] {
        left = stale();
        if (left.empty() && !stale_gone_after) stale_gone_after = Clock::now() - *restored;
        return left.empty();
      },
      90s, 200ms);
  std::string what;
  for (pid_t p : left) {
    std::string cmd = ReadFile("/proc/" + std::to_string(p) + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    what += std::to_string(p) + ": " + cmd.substr(0, 200) + "\n";
  }
  if (cleaned) {
    std::cout << "the cut host's stale processes ended " << Seconds(*stale_gone_after)
              << " s after the restore\n";
  }
  EXPECT_TRUE(cleaned) << "still running on " << cut_name << " 90 s after the restore:\n"
                       << what << cluster.Logs();
  EXPECT_EQ(cluster.WaitWorkerState(cut_worker, "alive", 60s).state, "alive");
}

}  // namespace
}  // namespace coupler::itest
