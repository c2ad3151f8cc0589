// `coupler plan` as a user runs it: a real process, its exit code, stdout and stderr.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/run_command.h"
#include "tests/unit/store_test_util.h"

namespace coupler {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using store::testing::TempDir;
using testing::RunCoupler;

std::string WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

size_t LineCount(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// `coupler plan PATH` as its own child, with the child's peak resident memory (wait4 reports
// it for that child alone). The alarm is the deadline: it survives exec and kills a hang.
struct MeasuredRun {
  int exit_code = -1;
  std::string err;
  long peak_rss_kib = 0;
};

MeasuredRun PlanMeasured(const std::string& spec, const fs::path& scratch) {
  const std::string err_path = (scratch / "stderr").string();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, STDERR_FILENO);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::alarm(120);
    ::execl(COUPLER_BINARY, COUPLER_BINARY, "plan", spec.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  MeasuredRun r;
  int status = 0;
  rusage usage{};
  if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.peak_rss_kib = usage.ru_maxrss;
  }
  r.err = testing::Slurp(err_path);
  return r;
}

TEST(PlanCommandTest, PrintsTheDigitsPipelineWithLooseAndTightNodes) {
  auto r = RunCoupler({"plan", "examples/digits-pipeline.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job digits-pipeline: 6 nodes"));
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(train\s+train\s+tight\s+1\s+2\s+gpu\+fast-interconnect)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(import\s+import_csv\s+loose\s+8\s+1\s+cpu)")))
      << r.out;
}

TEST(PlanCommandTest, JsonOutputIsMachineReadable) {
  auto r = RunCoupler({"plan", "--json", "examples/digits-pipeline.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(R"({"job":"digits-pipeline")"));
  EXPECT_THAT(r.out, HasSubstr(R"("id":"train","op":"train","coupling":"tight")"));
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(PlanCommandTest, MissingFileIsBadInput) {
  auto r = RunCoupler({"plan", "no/such/job.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no/such/job.yaml: error: cannot read the spec file"));
  EXPECT_TRUE(r.out.empty());
}

TEST(PlanCommandTest, WorkersWithABadSpecIsBadInputWithoutAskingTheCoordinator) {
  auto r = RunCoupler({"plan", "no/such/job.yaml", "--workers", "--coordinator", "tcp://127.0.0.1:9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no/such/job.yaml: error: cannot read the spec file"));
  EXPECT_TRUE(r.out.empty());
}

// Nothing listens on the discard port, so no coordinator left its keys for it: the preview
// fails in one line instead of hanging.
TEST(PlanCommandTest, WorkersWithoutACoordinatorFailsWithOneLine) {
  auto r = RunCoupler(
      {"plan", "examples/digits-pipeline.yaml", "--workers", "--coordinator", "tcp://127.0.0.1:9"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("coupler: no keys for the coordinator at tcp://127.0.0.1:10"));
  EXPECT_THAT(r.err, HasSubstr("is `coupler coordinator` running there"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(PlanCommandTest, CoordinatorWithoutWorkersIsBadInput) {
  auto r = RunCoupler({"plan", "examples/digits-pipeline.yaml", "--coordinator", "tcp://127.0.0.1:9"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(PlanCommandTest, UnknownOptionIsBadInput) {
  auto r = RunCoupler({"plan", "--jsn", "examples/digits-pipeline.yaml"});
  EXPECT_EQ(r.exit_code, 2);
}

// Every spec in tests/specs/invalid/ is rejected with exit 2, nothing on stdout, and every
// `# expect: TEXT` line of the spec found in stderr.
TEST(PlanCommandTest, EveryInvalidSpecFailsWithItsExpectedMessage) {
  const fs::path dir = fs::path(COUPLER_SOURCE_DIR) / "tests/specs/invalid";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string rel = "tests/specs/invalid/" + entry.path().filename().string();
    std::ifstream in(entry.path());
    std::vector<std::string> expects;
    for (std::string line; std::getline(in, line);) {
      const std::string tag = "# expect: ";
      auto at = line.find(tag);
      if (at != std::string::npos) expects.push_back(line.substr(at + tag.size()));
    }
    ASSERT_FALSE(expects.empty()) << rel << " has no '# expect:' line";
    auto r = RunCoupler({"plan", rel});
    EXPECT_EQ(r.exit_code, 2) << rel << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << rel << " printed on stdout: " << r.out;
    for (const auto& e : expects) EXPECT_THAT(r.err, HasSubstr(e)) << rel;
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

// Half a million brackets in 1 MB: refused at the 65th level with its position, in one line,
// instead of a crash in a parser or in the tree's destructor.
TEST(PlanCommandTest, RefusesAJsonSpecNestedHalfAMillionDeep) {
  TempDir dir;
  const std::string spec = WriteFile(dir.path() / "deep.json",
                                     R"({"name":"x","nodes":)" + std::string(500'000, '[') +
                                         std::string(500'000, ']') + "}");
  auto r = RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, StartsWith(spec + ":1:84: error: nested more than 64 levels deep"));
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(PlanCommandTest, RefusesAYamlFlowSpecNestedHalfAMillionDeep) {
  TempDir dir;
  const std::string spec =
      WriteFile(dir.path() / "deep.yaml", "name: x\nnodes: " + std::string(500'000, '[') +
                                              std::string(500'000, ']') + "\n");
  auto r = RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, StartsWith(spec + ":2:71: error: nested more than 64 levels deep"));
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
}

// Block nesting ("- - - ...") has no bracket to count: the indentation is the depth.
TEST(PlanCommandTest, RefusesAYamlBlockSpecNestedHalfAMillionDeep) {
  TempDir dir;
  std::string text = "name: x\nnodes:\n";
  for (int i = 0; i < 500'000; ++i) text += "- ";
  const std::string spec = WriteFile(dir.path() / "deep.yaml", text + "x\n");
  auto r = RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, StartsWith(spec + ":3:127: error: nested more than 64 levels deep"));
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
}

// "Billion laughs" in 540 bytes: nine levels of nine aliases each would be 387 million values.
// It is refused where the copies pass their budget, before they are made.
TEST(PlanCommandTest, RefusesAYamlAliasBombWithoutTheMemory) {
  TempDir dir;
  std::string text = "name: bomb\nnodes: []\n";
  text += "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const char prev = static_cast<char>(c - 1);
    text += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) text += std::string(k ? ", " : "") + "*" + prev;
    text += "]\n";
  }
  ASSERT_LE(text.size(), 600u);
  // What `coupler plan` costs anyway (its libraries: more with CUDA than without).
  const MeasuredRun small = PlanMeasured(
      WriteFile(dir.path() / "small.yaml", "name: small\nnodes:\n  - {id: a, op: noop}\n"),
      dir.path());
  ASSERT_EQ(small.exit_code, 0) << small.err;
  MeasuredRun r = PlanMeasured(WriteFile(dir.path() / "bomb.yaml", text), dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("error: anchors and aliases (&name, *name) up to here copy more "
                               "than 100,000 values"));
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  // Building the aliases' values before refusing them cost some 400 MiB more.
  EXPECT_LT(r.peak_rss_kib, small.peak_rss_kib + 64 * 1024)
      << "peak RSS " << r.peak_rss_kib << " KiB, " << small.peak_rss_kib << " KiB for a small spec";
}

// A command of 100 KB that looks like one placeholder: read in one linear pass, refused by
// name (shortened), not a stack overflow.
TEST(PlanCommandTest, RefusesAHugePlaceholderInOneLine) {
  TempDir dir;
  const std::string spec = WriteFile(
      dir.path() / "long.yaml", "name: x\nnodes:\n  - {id: a, op: noop}\n  - id: b\n    op: exec\n"
                                "    inputs: [a]\n    params: {command: \"cat {" +
                                    std::string(100'000, 'x') + "}\"}\n");
  auto r = RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("error: node 'b': field 'params.command': unknown placeholder "
                               "{xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...}; known: {input}, {output}, "
                               "{shard}"));
  EXPECT_EQ(LineCount(r.err), 1u) << r.err.substr(0, 1000);
}

TEST(PlanCommandTest, PlansACommandWithAHugeUnclosedBrace) {
  TempDir dir;
  const std::string spec = WriteFile(
      dir.path() / "long.yaml", "name: x\nnodes:\n  - {id: a, op: noop}\n  - id: b\n    op: exec\n"
                                "    inputs: [a]\n    params: {command: \"echo {" +
                                    std::string(100'000, 'x') + " {output}\"}\n");
  auto r = RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 1000);
  EXPECT_THAT(r.out, HasSubstr("job x: 2 nodes"));
}

// Over the size cap: refused by its size before it is read (the file is sparse), with the
// size in the message.
TEST(PlanCommandTest, RefusesASpecOverTheSizeLimit) {
  TempDir dir;
  const std::string spec = (dir.path() / "huge.yaml").string();
  { std::ofstream(spec) << "name: x\n"; }
  fs::resize_file(spec, 70ull << 20);
  auto r = RunCoupler({"plan", spec});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, spec + ": error: spec is 70.0 MiB, over the 16 MiB limit\n");
  EXPECT_TRUE(r.out.empty());
}

TEST(PlanCommandTest, EveryValidSpecPlans) {
  for (const char* dir : {"examples", "tests/specs/valid"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(COUPLER_SOURCE_DIR) / dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("train-", 0) == 0) continue;  // training configs, not job specs
      if (entry.path().extension() != ".yaml" && entry.path().extension() != ".json") continue;
      auto r = RunCoupler({"plan", std::string(dir) + "/" + name});
      EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.err;
    }
  }
}

}  // namespace
}  // namespace coupler
