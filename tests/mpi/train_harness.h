// Shared by the `coupler train` end-to-end tests: launch the real binary under mpirun with a
// scratch directory, read back its metrics JSON and its weights .npy.
#pragma once

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <sys/types.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/io/shard_file.h"
#include "tests/integration/process_harness.h"

namespace coupler::train_test {

namespace fs = std::filesystem;
using itest::CommandResult;

inline fs::path Digits() { return fs::path(COUPLER_SOURCE_DIR) / "data" / "digits.csv"; }
inline fs::path Config() { return fs::path(COUPLER_SOURCE_DIR) / "examples" / "train-digits.yaml"; }

// `mpirun -np N coupler train examples/train-digits.yaml` plus `extra`, with checkpoints kept
// inside the scratch directory unless the caller sets checkpoint_dir itself.
inline CommandResult Train(int np, const itest::TempDir& dir, std::vector<std::string> extra,
                           std::chrono::seconds timeout = std::chrono::seconds(300)) {
  std::vector<std::string> argv = {COUPLER_MPIEXEC, "--allow-run-as-root", "--oversubscribe",
                                   "--timeout", "300", "-np", std::to_string(np),
                                   COUPLER_BINARY, "train", Config().string(),
                                   "--set", "checkpoint_dir=" + (dir / "ckpt").string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return itest::RunToEnd(argv, dir.path(), timeout);
}

inline rapidjson::Document ReadMetrics(const fs::path& path) {
  rapidjson::Document doc;
  doc.Parse(itest::ReadFile(path).c_str());
  EXPECT_FALSE(doc.HasParseError()) << path;
  return doc;
}

inline std::vector<float> ReadWeights(const fs::path& path) {
  auto table = io::ReadShardFile(path.string());
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  if (!table.ok() || table->num_columns() != 1) return {};
  auto values = table->column(0).values<float>();
  return {values.begin(), values.end()};
}

inline double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return 1e30;
  double diff = 0;
  double norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// Ranks of the job: children of mpirun running `coupler train`, keyed by OMPI_COMM_WORLD_RANK.
inline std::vector<std::pair<int, pid_t>> TrainRanks(pid_t mpirun) {
  std::vector<std::pair<int, pid_t>> ranks;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    if (ppid != mpirun) continue;
    std::ifstream env(entry.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(env, var, '\0')) {
      if (var.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0) {
        ranks.emplace_back(std::stoi(var.substr(21)), std::stoi(name));
      }
    }
  }
  return ranks;
}

#define COUPLER_REQUIRE_DIGITS()                                                          \
  if (!std::filesystem::exists(::coupler::train_test::Digits()))                          \
  GTEST_SKIP() << "data/digits.csv is missing: run scripts/fetch-digits.sh (scripts/test.sh " \
                  "does)"

}  // namespace coupler::train_test
