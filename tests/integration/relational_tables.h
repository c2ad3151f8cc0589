// What the relational tests share: pandas (the reference) and the generated table
// (tests/relational/pandas_check.py make: a skewed string key, gaps, big ints) imported as a
// folder of shards by a worker started for it and stopped after, so the workers a test measures
// or kills run only the op under test.
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {

inline constexpr char kPython[] = "/usr/bin/python3";
inline const fs::path kPandasCheck = kSourceDir / "tests" / "relational" / "pandas_check.py";

// Skips the test (fails it under CI, which installs pandas) when /usr/bin/python3 lacks pandas.
#define REQUIRE_PANDAS(scratch)                                                              \
  do {                                                                                       \
    const CommandResult probe = RunToEnd({kPython, "-c", "import pandas"}, scratch, 120s);   \
    if (probe.exit_code != 0) {                                                              \
      const std::string why = std::string(kPython) +                                         \
                              " cannot import pandas (COUPLER_PYTHON_EXAMPLES=1 "            \
                              "scripts/install-deps.sh installs it): " + probe.err;          \
      if (std::getenv("CI") != nullptr) FAIL() << why;                                       \
      GTEST_SKIP() << why;                                                                   \
    }                                                                                        \
  } while (0)

// Makes `csv` (`rows` rows from `seed`) and imports it into `shards` shards under the cluster's
// folder "imported" with a worker of its own, stopped after; returns the folder of the shards
// ("" after a failed assertion: check HasFatalFailure). The coordinator must be running.
inline fs::path ImportGeneratedTable(Cluster& cluster, const fs::path& csv, int rows, int seed,
                                     int shards) {
  const CommandResult made = RunToEnd(
      {kPython, kPandasCheck.string(), "make", csv.string(), std::to_string(rows), std::to_string(seed)},
      cluster.dir(), 120s);
  EXPECT_EQ(made.exit_code, 0) << made.out << made.err;
  if (made.exit_code != 0) return {};
  Process& importer = cluster.StartWorker("importer", 1);
  WriteFile(cluster.dir() / "import.yaml",
            "name: import\nworkdir: imported\nnodes:\n"
            "  - id: import\n    op: import_csv\n    inputs: [" + csv.string() + "]\n"
            "    params: {shards: " + std::to_string(shards) +
            ", dtypes: {amount: float64, user: string, tag: string}}\n");
  const std::string job = cluster.Submit(cluster.dir() / "import.yaml");
  EXPECT_FALSE(job.empty()) << cluster.Logs();
  const auto imported = job.empty() ? std::nullopt : cluster.WaitJobFinished(job, 300s);
  importer.Kill();
  EXPECT_TRUE(imported && imported->state == "succeeded") << cluster.Logs();
  if (!imported || imported->state != "succeeded") return {};
  return cluster.dir() / "imported" / "latest" / "import";
}

// The shards copied into `dir` (a test may turn one into a FIFO there).
inline void CopyShards(const fs::path& from, const fs::path& dir, int shards) {
  fs::create_directories(dir);
  for (int s = 0; s < shards; ++s) fs::copy_file(from / PartName(s), dir / PartName(s));
}

}  // namespace coupler::itest
