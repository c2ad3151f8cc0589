// Helpers for spec tests: load YAML text against a fake filesystem, so validation and planning
// tests need no files.
#pragma once

#include <string>

#include "runtime/job/job_loader.h"

namespace coupler::job::testing {

// /data/digits.csv is a file; /data/shards (4 .npy), /data/empty (0 .npy) and
// /cfg/train.yaml exist; everything else is missing. Specs resolve against /specs.
inline PathInfo FakeProbe(const std::string& p) {
  if (p == "/data/digits.csv" || p == "/cfg/train.yaml") return {PathInfo::Kind::kFile, 0};
  if (p == "/data/shards") return {PathInfo::Kind::kDirectory, 4};
  if (p == "/data/empty") return {PathInfo::Kind::kDirectory, 0};
  return {};
}

inline LoadedJob Load(const std::string& yaml) {
  ValidationEnv env;
  env.probe = FakeProbe;
  return LoadJobText(yaml, "job.yaml", "/specs", env);
}

// All diagnostics as one string, for EXPECT_THAT(..., HasSubstr(...)).
inline std::string Errors(const LoadedJob& j) { return j.diags.ToString(); }

}  // namespace coupler::job::testing
