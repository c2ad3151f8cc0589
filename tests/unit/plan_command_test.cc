// `coupler plan` as a user runs it: a real process, its exit code, stdout and stderr.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/unit/run_command.h"

namespace coupler {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunCoupler;

TEST(PlanCommandTest, PrintsTheDigitsPipelineWithLooseAndTightNodes) {
  auto r = RunCoupler({"plan", "examples/digits-pipeline.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job digits-pipeline: 5 nodes"));
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
