// Which exit statuses of a command are worth another attempt (worker/ops/exit_code_rule.h), and
// the spec's exit-code lists (a list of integers 1..255, checked at plan time).
#include "worker/ops/exit_code_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/spec_test_util.h"

namespace coupler::worker {
namespace {

using ::testing::HasSubstr;

TEST(ExitCodeRuleTest, OnlyTheNoRetryCodeIsFinalByDefault) {
  const ExitCodeRule rule;
  EXPECT_EQ(rule.NotRetried(65), "exit status 65 asks not to be retried");
  EXPECT_EQ(rule.NotRetried(1), std::nullopt);
  EXPECT_EQ(rule.NotRetried(2), std::nullopt);
}

TEST(ExitCodeRuleTest, ListsAddCodesOrNarrowWhatIsRetried) {
  wire::TaskParams params(std::map<std::string, job::ParamValue>{
      {"no_retry_exit_codes", std::vector<std::string>{"1"}},
      {"retry_on_exit_codes", std::vector<std::string>{"1", "75"}}});
  Result<ExitCodeRule> rule = ExitCodeRuleFrom(params);
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  EXPECT_EQ(rule->NotRetried(1), "exit status 1 is in no_retry_exit_codes");  // first wins
  EXPECT_EQ(rule->NotRetried(75), std::nullopt);
  EXPECT_EQ(rule->NotRetried(2), "exit status 2 is not in retry_on_exit_codes");
  EXPECT_EQ(rule->NotRetried(65), "exit status 65 asks not to be retried");

  const Status failed = Aborted("command exited with status 2: boom");
  const Status final_one = ApplyExitCodeRule(*rule, true, 2, failed);
  EXPECT_EQ(final_one.code(), StatusCode::kInvalidData);
  EXPECT_THAT(final_one.message(), HasSubstr("boom (not retried: exit status 2 is not in"));
  EXPECT_EQ(ApplyExitCodeRule(*rule, true, 75, failed).code(), StatusCode::kAborted);
  EXPECT_EQ(ApplyExitCodeRule(*rule, false, 0, failed).code(), StatusCode::kAborted)
      << "a signal or a timeout is no exit code";
}

TEST(ExitCodeRuleTest, TheSpecTakesIntegersFrom1To255) {
  auto spec = [](const std::string& codes) {
    return "name: j\nworkdir: /tmp/w\nnodes:\n"
           "  - {id: a, op: noop, params: {tasks: 1}}\n"
           "  - {id: b, op: exec, inputs: [a], params: {command: \"true\", "
           "no_retry_exit_codes: " + codes + "}}\n";
  };
  const job::LoadedJob ok = job::testing::Load(spec("[1, 75]"));
  ASSERT_TRUE(ok.ok()) << job::testing::Errors(ok);
  EXPECT_EQ(std::get<std::vector<std::string>>(ok.graph->nodes[1].params.at("no_retry_exit_codes")),
            (std::vector<std::string>{"1", "75"}));
  EXPECT_TRUE(job::testing::Load(spec("3")).ok());  // one code is a list of one
  EXPECT_THAT(job::testing::Errors(job::testing::Load(spec("[1, 256]"))), HasSubstr("256"));
  EXPECT_THAT(job::testing::Errors(job::testing::Load(spec("[one]"))),
              HasSubstr("expected a list of integers"));
  EXPECT_THAT(job::testing::Errors(job::testing::Load(spec("[\"1\"]"))),
              HasSubstr("expected a list of integers"));
}

}  // namespace
}  // namespace coupler::worker
