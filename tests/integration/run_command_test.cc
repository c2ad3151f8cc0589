// `coupler run`: the embedded coordinator and workers run the preprocess-only example end to
// end and print a summary.
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(RunCommandTest, PreprocessOnlyExampleSucceedsOnTwoWorkers) {
  ASSERT_TRUE(fs::exists(kSourceDir / "data" / "digits.csv"))
      << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  TempDir scratch;
  // Outputs of an earlier run may be there already: only files written by this run count.
  const auto start = fs::file_time_type::clock::now() - 2s;
  const CommandResult r =
      RunToEnd({kCoupler, "run", "examples/preprocess-only.yaml", "--workers", "2"},
               scratch.path(), 120s, kSourceDir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // "job j-000001 (preprocess-only) succeeded: 97/97 tasks, 97 attempts, ..."
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m, std::regex(R"(job j-[0-9]+ \(preprocess-only\) succeeded: ([0-9]+)/([0-9]+) tasks)")))
      << r.out;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_GT(std::stoi(m[2]), 0);
  // The last node's output is there: 16 shards of bfloat16 features.
  for (int s = 0; s < 16; ++s) {
    const fs::path part = kSourceDir / "coupler-work" / "preprocess-only" / "half" / PartName(s);
    std::error_code ec;
    const auto written = fs::last_write_time(part, ec);
    EXPECT_FALSE(ec) << part << ": " << ec.message();
    EXPECT_GE(written, start) << part << " was not written by this run";
  }
}

}  // namespace
}  // namespace coupler::itest
