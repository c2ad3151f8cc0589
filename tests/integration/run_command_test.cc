// `coupler run`: the embedded coordinator and workers run the preprocess-only example end to
// end and print a summary.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "kernels/device.h"
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
    const fs::path part =
        kSourceDir / "coupler-work" / "preprocess-only" / "latest" / "half" / PartName(s);
    std::error_code ec;
    const auto written = fs::last_write_time(part, ec);
    EXPECT_FALSE(ec) << part << ": " << ec.message();
    EXPECT_GE(written, start) << part << " was not written by this run";
  }
}

// A node that asks for GPU memory, run where no GPU can take it: the tasks still succeed on the
// CPU twins, and both the run summary and `status` say that they ran on the CPU.
TEST(RunCommandTest, GpuTasksThatRanOnTheCpuAreFlagged) {
  if (kernels::HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present: the tasks would use it";
  TempDir scratch;
  {
    std::ofstream csv(scratch.path() / "small.csv");
    csv << "x,y\n";
    for (int r = 0; r < 40; ++r) csv << r - 20 << "," << r % 7 << "\n";
    std::ofstream spec(scratch.path() / "gpu-clip.yaml");
    spec << "name: gpu-clip\nworkdir: out\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [small.csv], params: {shards: 2}}\n"
            "  - id: clipped\n    op: clip\n    inputs: [import]\n"
            "    params: {min: -5.0, max: 5.0}\n    resources: {gpu_memory: 64MiB}\n";
  }
  const CommandResult r = RunToEnd({kCoupler, "run", "gpu-clip.yaml", "--workers", "1"},
                                   scratch.path(), 120s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("devices: cpu: 4 tasks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: 2 task(s) asked for a GPU and ran on the CPU"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace coupler::itest
