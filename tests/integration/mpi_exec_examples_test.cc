// The Python examples of mpi_exec as users run them: examples/ddp-pipeline.yaml (PyTorch DDP
// over gloo on 2 ranks) and examples/mpi4py-pipeline.yaml (an mpi4py allreduce), each under
// `coupler run --workers 2`, and the DDP group's per-rank output through `coupler logs`. They
// need Debian's python3-torch and python3-mpi4py for /usr/bin/python3, which CI installs.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <utility>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

// Why /usr/bin/python3 cannot import `module`, or "" when it can.
std::string MissingModule(const std::string& module, const fs::path& scratch) {
  const CommandResult r = RunToEnd({kPython, "-c", "import " + module}, scratch, 120s);
  if (r.exit_code == 0) return "";
  return std::string(kPython) + " cannot import " + module +
         " (install it with COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh): " + r.err;
}

// CI installs the optional group (scripts/test.sh sets COUPLER_PYTHON_EXAMPLES there): a
// missing module fails there and is skipped elsewhere.
#define REQUIRE_PYTHON_MODULE(module, scratch)                    \
  do {                                                            \
    const std::string why = MissingModule(module, scratch);       \
    if (!why.empty()) {                                           \
      if (std::getenv("CI") != nullptr) FAIL() << why;            \
      GTEST_SKIP() << why;                                        \
    }                                                             \
  } while (0)

// The example laid out as shipped (examples/NAME-pipeline.yaml beside examples/NAME/, and
// data/ one folder up), under `root`: the spec's relative paths are the ones users run, only
// its workdir moved into the test's folder. Returns the spec's path.
fs::path CopyExample(const std::string& name, const fs::path& root) {
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  EXPECT_TRUE(fs::exists(csv)) << csv << " is missing: run scripts/fetch-digits.sh";
  fs::create_directories(root / "examples");
  fs::create_directory_symlink(kSourceDir / "data", root / "data");
  fs::create_directory_symlink(kSourceDir / "examples" / name, root / "examples" / name);
  std::string spec = ReadFile(kSourceDir / "examples" / (name + "-pipeline.yaml"));
  const std::string workdir_line = "workdir: ../coupler-work/" + name + "-pipeline";
  const size_t at = spec.find(workdir_line);
  EXPECT_NE(at, std::string::npos) << spec;
  if (at != std::string::npos) {
    spec.replace(at, workdir_line.size(), "workdir: " + (root / "work").string());
  }
  const fs::path path = root / "examples" / (name + "-pipeline.yaml");
  WriteFile(path, spec);
  return path;
}

rapidjson::Document ParseJsonFile(const fs::path& path) {
  rapidjson::Document d;
  d.Parse(ReadFile(path).c_str());
  return d;
}

// The sum of one CSV column and the row count, as the test's own reading of the file.
std::pair<double, int> CsvColumnSum(const fs::path& csv, const std::string& column) {
  std::istringstream in(ReadFile(csv));
  std::string line;
  std::getline(in, line);
  std::istringstream header(line);
  int index = -1;
  int i = 0;
  for (std::string name; std::getline(header, name, ','); ++i) {
    if (name == column) index = i;
  }
  EXPECT_GE(index, 0) << column << " is not a column of " << csv;
  double sum = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++rows;
    std::istringstream row(line);
    std::string cell;
    for (int c = 0; std::getline(row, cell, ','); ++c) {
      if (c == index) sum += std::stod(cell);
    }
  }
  return {sum, rows};
}

// What result.json must show for a group that trained: 2 ranks, a loss that fell from the
// first epoch to the last, a held-out accuracy far above chance (10 classes), and replicas
// that DDP kept equal.
void ExpectTrainedOnTwoRanks(const fs::path& result) {
  ASSERT_TRUE(fs::exists(result)) << result;
  const rapidjson::Document r = ParseJsonFile(result);
  ASSERT_TRUE(r.IsObject()) << ReadFile(result);
  EXPECT_EQ(r["world_size"].GetInt(), 2) << ReadFile(result);
  const auto& losses = r["epoch_losses"].GetArray();
  ASSERT_GE(losses.Size(), 2u);
  EXPECT_LT(losses[losses.Size() - 1].GetDouble(), 0.7 * losses[0].GetDouble())
      << ReadFile(result);
  EXPECT_GT(r["test_accuracy"].GetDouble(), 0.6) << ReadFile(result);
  EXPECT_GT(r["test_rows"].GetInt(), 300);
  EXPECT_TRUE(r["replicas_equal"].GetBool()) << ReadFile(result);
}

TEST(MpiExecExamplesTest, TheDdpExampleTrainsOnTwoRanksUnderCouplerRun) {
  TempDir scratch;
  REQUIRE_PYTHON_MODULE("torch", scratch.path());
  const fs::path spec = CopyExample("ddp", scratch.path());
  // Not started in the spec's folder: the script's path comes from the spec, not the cwd.
  const CommandResult r = RunToEnd({kCoupler, "run", spec.string(), "--workers", "2"},
                                   scratch.path(), 240s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\(ddp-pipeline\) succeeded)"))) << r.out;
  const fs::path node = scratch.path() / "work" / "latest" / "train";
  ExpectTrainedOnTwoRanks(node / "result.json");
  // {launch} gave mpirun --output-filename: each rank's own lines in its own file.
  for (const std::string rank : {"0", "1"}) {
    bool found = false;
    for (const auto& e : fs::recursive_directory_iterator(node / "logs")) {
      if (e.path().filename() == "stdout" && e.path().parent_path().filename() == "rank." + rank) {
        found = true;
        EXPECT_NE(ReadFile(e.path()).find("rank " + rank + "/2: held-out accuracy"),
                  std::string::npos)
            << e.path() << ": " << ReadFile(e.path());
      }
    }
    EXPECT_TRUE(found) << "no rank." << rank << "/stdout under " << node / "logs";
  }
}

TEST(MpiExecExamplesTest, CouplerLogsShowsEachDdpRanksOutput) {
  Cluster c;
  REQUIRE_PYTHON_MODULE("torch", c.dir());
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  c.StartWorker("w1", 1);
  c.StartWorker("w2", 1);
  ASSERT_TRUE(c.WaitWorkersAlive(2)) << c.Logs();
  const fs::path spec = CopyExample("ddp", c.dir() / "copy");
  std::string why;
  const std::string job = c.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << c.Logs();
  const auto done = c.WaitJobFinished(job, 240s);
  ASSERT_TRUE(done.has_value()) << c.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << c.Logs();
  ExpectTrainedOnTwoRanks(c.dir() / "copy" / "work" / "latest" / "train" / "result.json");

  const CommandResult logs = c.Cli({"logs", job, "train"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  // The group's combined output first, then one block per rank's own file.
  for (const std::string rank : {"0", "1"}) {
    const std::regex block("==> train/task [0-9]+ attempt 0 rank\\." + rank +
                           "/stdout <==\n(rank " + rank + "/2: [^\n]*\n)*rank " + rank +
                           "/2: held-out accuracy [01]\\.[0-9]+\n");
    EXPECT_TRUE(std::regex_search(logs.out, block)) << logs.out;
  }
  EXPECT_TRUE(std::regex_search(logs.out,
                                std::regex(R"(==> train/task [0-9]+ attempt 0 stdout <==\n)")))
      << logs.out;
}

TEST(MpiExecExamplesTest, TheMpi4pyExampleAllreducesAColumnSumUnderCouplerRun) {
  TempDir scratch;
  REQUIRE_PYTHON_MODULE("mpi4py", scratch.path());
  const fs::path spec = CopyExample("mpi4py", scratch.path());
  const CommandResult r = RunToEnd({kCoupler, "run", spec.string(), "--workers", "2"},
                                   scratch.path(), 180s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path total = scratch.path() / "work" / "latest" / "sum" / "total.json";
  ASSERT_TRUE(fs::exists(total)) << r.out;
  const rapidjson::Document t = ParseJsonFile(total);
  ASSERT_TRUE(t.IsObject()) << ReadFile(total);
  EXPECT_EQ(t["ranks"].GetInt(), 2);
  EXPECT_EQ(t["shards"].GetInt(), 8);
  const auto [sum, rows] = CsvColumnSum(kSourceDir / "data" / "digits.csv", "p20");
  EXPECT_GT(sum, 0);
  EXPECT_EQ(t["rows"].GetInt(), rows) << ReadFile(total);
  EXPECT_EQ(t["total"].GetDouble(), sum) << ReadFile(total);
}

}  // namespace
}  // namespace coupler::itest
