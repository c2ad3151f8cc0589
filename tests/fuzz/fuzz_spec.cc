// Fuzzes the job-spec path end to end: any bytes → precheck, YAML parse, validation and, when
// valid, planning. Nothing may crash, hang or trip a sanitizer; the filesystem is faked.
// Run it with -max_len=2097152 (docs/fuzzing.md), and cap nothing here: the inputs that once
// crashed the spec path, a 1 MB nesting and a 100 KB placeholder, were all in their size.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/job/job_loader.h"
#include "runtime/plan/planner.h"

namespace {

coupler::job::PathInfo FakeProbe(const std::string& path) {
  using Kind = coupler::job::PathInfo::Kind;
  if (path.ends_with(".csv") || path.ends_with("train.yaml")) return {Kind::kFile, 0};
  if (path.ends_with("shards")) return {Kind::kDirectory, 3};
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  coupler::job::ValidationEnv env;
  env.probe = FakeProbe;
  coupler::job::LoadedJob job = coupler::job::LoadJobText(text, "fuzz.yaml", "/specs", env);
  (void)job.diags.ToString();
  if (job.ok()) {
    auto plan = coupler::plan::PlanJob(*job.graph);
    // A graph the validator accepted must always plan.
    if (!plan.ok()) __builtin_trap();
  }
  return 0;
}
