// A mixed graph end to end: `coupler run examples/digits-pipeline.yaml --workers 2` runs the
// loose preprocessing, the train node as one gang of 2 ranks under mpirun (launched by one worker
// over the slots the coordinator reserved on both), and the loose evaluation of the model on
// the held-out rows.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <utility>

#include "runtime/io/shard_file.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(TrainPipelineTest, DigitsPipelineTrainsAsOneGroupAndEvaluatesHeldOutRows) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv"))
      << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  TempDir scratch;
  const auto start = fs::file_time_type::clock::now() - 2s;
  const CommandResult r =
      RunToEnd({kCoupler, "run", "examples/digits-pipeline.yaml", "--workers", "2"},
               scratch.path(), 240s, kSourceDir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex(R"(job j-[0-9]+ \(digits-pipeline\) succeeded: ([0-9]+)/([0-9]+) tasks)")))
      << r.out;
  EXPECT_EQ(m[1], m[2]);
  // The train node ran once, as one task of 2 ranks.
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n +train +done +1/1 tasks \(group of 2 ranks\), 1 attempts)")))
      << r.out;

  // "evaluate: held-out accuracy 0.9722 (350/360 rows)": 20% of 1797 rows are held out.
  ASSERT_TRUE(std::regex_search(
      r.out, m, std::regex(R"(evaluate: held-out accuracy ([0-9.]+) \(([0-9]+)/([0-9]+) rows\))")))
      << r.out;
  EXPECT_GE(std::stod(m[1]), 0.95) << r.out;
  EXPECT_EQ(m[3], "359");
  // Below it, the precisions side by side (quantize calibrated the int8 row): INT8 within a
  // point of fp32, with under a third of its weight bytes.
  std::map<std::string, std::pair<double, double>> by_precision;  // accuracy, size ratio
  const std::regex row(R"(\n  (fp32|bf16|int8) +([01]\.[0-9]{4}) +[-+][0-9.]+ pt +[0-9,]+ +[0-9.]+x +[0-9,]+ +([0-9.]+)x)");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), row);
       it != std::sregex_iterator(); ++it) {
    by_precision[(*it)[1]] = {std::stod((*it)[2]), std::stod((*it)[3])};
  }
  ASSERT_EQ(by_precision.size(), 3u) << r.out;
  EXPECT_EQ(by_precision["fp32"].first, std::stod(m[1]));
  EXPECT_NEAR(by_precision["int8"].first, by_precision["fp32"].first, 0.01) << r.out;
  EXPECT_LT(by_precision["int8"].second, 0.33) << r.out;
  EXPECT_NEAR(by_precision["bf16"].second, 0.5, 0.05) << r.out;

  // The node directories hold what the group and the evaluation wrote, in this run.
  const fs::path work = kSourceDir / "coupler-work" / "digits-pipeline" / "latest";
  for (const fs::path& file : {work / "train" / "weights.npy", work / "train" / "metrics.json",
                               work / "evaluate" / PartName(0)}) {
    std::error_code ec;
    const auto written = fs::last_write_time(file, ec);
    EXPECT_FALSE(ec) << file << ": " << ec.message();
    EXPECT_GE(written, start) << file << " was not written by this run";
  }
  auto accuracy = io::ReadShardFile((work / "evaluate" / PartName(0)).string());
  ASSERT_TRUE(accuracy.ok()) << accuracy.status().ToString();
  ASSERT_NE(accuracy->Find("accuracy"), nullptr);
  const double evaluated = accuracy->Find("accuracy")->values<double>()[0];
  EXPECT_GE(evaluated, 0.95);
  // The group's rank 0 scored the same held-out rows (in the training precision, bf16 here):
  // the two agree to within a few rows.
  const std::string metrics = ReadFile(work / "train" / "metrics.json");
  ASSERT_TRUE(std::regex_search(metrics, m, std::regex(R"("test_accuracy":([0-9.eE+-]+))")))
      << metrics;
  EXPECT_NEAR(evaluated, std::stod(m[1]), 0.02) << metrics;
  EXPECT_NE(metrics.find(R"("world_size":2)"), std::string::npos) << metrics;
}

// The same mixed graph submitted to a standing coordinator with two 1-slot workers (`submit
// --wait`, which ends with the accuracy as `coupler run` does): `status` shows the train node as
// one group of 2 ranks, in text and JSON.
TEST(TrainPipelineTest, StatusShowsTheTrainNodeAsOneGroupOfTwoRanks) {
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  const fs::path spec = cluster.dir() / "mixed.yaml";
  WriteFile(spec, "name: it-mixed\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [" + csv.string() + "],"
                  " params: {shards: 4, label_column: label}}\n"
                  "  - {id: stats, op: column_stats, inputs: [import]}\n"
                  "  - {id: standardize, op: standardize, inputs: [import, stats]}\n"
                  "  - id: train\n    op: train\n    inputs: [standardize]\n    ranks: 2\n"
                  "    params: {config: " + (kSourceDir / "examples" / "train-digits.yaml").string() +
                  ", epochs: 5, accumulate: 2, lr: 0.002, seed: 11}\n"
                  "  - {id: evaluate, op: evaluate, inputs: [standardize, train]}\n");
  const CommandResult waited = cluster.Cli({"submit", spec.string(), "--wait"}, 180s);
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err << cluster.Logs();
  // `submit --wait` ends as `coupler run` does: the summary, then each evaluate node's accuracy.
  EXPECT_TRUE(std::regex_search(
      waited.out, std::regex(R"(\nevaluate: held-out accuracy [01]\.[0-9]{4} \([0-9]+/[0-9]+ rows\)\n)")))
      << waited.out;
  std::smatch submitted;
  ASSERT_TRUE(std::regex_search(waited.err, submitted, std::regex(R"(submitted (j-[0-9]+))")))
      << waited.err;
  const std::string job = submitted[1];
  const auto final_status = cluster.Job(job);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << cluster.Logs();
  const NodeView train = final_status->node("train");
  EXPECT_EQ(train.state, "done");
  EXPECT_EQ(train.tasks, 1u);
  EXPECT_EQ(train.ranks, 2u);
  EXPECT_EQ(final_status->node("evaluate").ranks, 0u);
  const CommandResult text = cluster.Cli({"status", job});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // ... and, from the node's steps.jsonl, its last step: 5 epochs of the digits' training rows.
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\n +train +done +1/1 +1 attempts  group of 2 ranks on 127\.0\.0\.1  step [0-9]+  epoch 5  loss [0-9.e+-]+  )")))
      << text.out;
  EXPECT_TRUE(fs::exists(cluster.dir() / "work" / "latest" / "evaluate" / PartName(0))) << cluster.Logs();
  // The node's lr and seed (train op params: a sweep is one graph) reached the run.
  const std::string model = ReadFile(cluster.dir() / "work" / "latest" / "train" / "model.json");
  EXPECT_NE(model.find("\"seed\":11,"), std::string::npos) << model;  // numbers as numbers
  EXPECT_NE(model.find("\"layers\":[64,128,10]"), std::string::npos) << model;
  // The run's final checkpoint records the settings it ran with (train/resume_plan.h).
  bool checkpoint_seen = false;
  for (const auto& e : fs::directory_iterator(cluster.dir() / "work" / "latest" / "train" / "checkpoints")) {
    checkpoint_seen = true;
    const std::string bytes = ReadFile(e.path());
    EXPECT_NE(bytes.find("lr=0.002; "), std::string::npos) << e.path();
    EXPECT_NE(bytes.find("seed=11; "), std::string::npos) << e.path();
  }
  EXPECT_TRUE(checkpoint_seen) << "the finished run left no checkpoint";
}

// A gang larger than every worker's slots together waits, says why, and holds nothing: loose
// work of the same job still finishes.
TEST(TrainPipelineTest, AGangThatCannotFitWaitsWithAReason) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  const fs::path spec = cluster.dir() / "big.yaml";
  WriteFile(spec, "name: it-big-gang\nworkdir: work\nnodes:\n"
                  "  - {id: group, op: mpi_exec, ranks: 4, params: {command: 'true'}}\n"
                  "  - {id: loose, op: noop, params: {tasks: 20}}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  std::optional<JobView> last;
  const bool waiting = WaitUntil(
      [&] {
        last = cluster.Job(job);
        return last && last->node("loose").state == "done" &&
               last->node("group").reason.find("cannot be placed yet") != std::string::npos;
      },
      60s, 100ms);
  ASSERT_TRUE(waiting) << (last ? last->node("group").reason : "no status") << cluster.Logs();
  EXPECT_EQ(last->state, "running");
  EXPECT_EQ(last->node("group").state, "ready");
  EXPECT_EQ(last->node("group").ranks, 4u);
  EXPECT_EQ(last->node("group").reason,
            "cannot be placed yet: needs 4 ranks, the 2 alive workers have 2 slots in all");
  EXPECT_EQ(cluster.Cli({"cancel", job}).exit_code, 0);
}

// A group whose ranks fail is retried as a whole (with --resume) and then fails the job with
// the rank's own error line, not mpirun's banner.
TEST(TrainPipelineTest, AFailingGroupIsRetriedAndReportsTheRanksError) {
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  TempDir scratch;
  WriteFile(scratch.path() / "bad.yaml",
            "name: bad-train\nworkdir: out\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [" + csv.string() + "],"
            " params: {shards: 2, label_column: label}}\n"
            "  - id: train\n    op: train\n    inputs: [import]\n    ranks: 2\n    retries: 1\n"
            "    params: {config: " + (kSourceDir / "examples" / "train-digits.yaml").string() +
            ", micro_batch: 7}\n");
  const CommandResult r = RunToEnd({kCoupler, "run", "bad.yaml", "--workers", "2"},
                                   scratch.path(), 120s, scratch.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("train                failed    0/1 tasks (group of 2 ranks), 2 attempts"),
            std::string::npos)
      << r.out;
  // The error on stderr, once (the summary on stdout does not repeat the job's error).
  const std::string error =
      "failed after 2 attempts: train: mpirun (2 ranks) exited with status 2: "
      "coupler train: rank 0: training failed: InvalidArgument: global_batch 64 "
      "!= micro_batch 7 x accumulate 2 x ranks 2 = 28";
  EXPECT_NE(r.err.find("coupler: job j-000001 failed: node 'train': task 2 (gang) " + error),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find(error), std::string::npos) << r.out;
}

}  // namespace
}  // namespace coupler::itest
