// Fuzzes the JSON body of `POST /api/v1/jobs` as the coordinator reads it: any bytes → the
// nesting check, rapidjson, the submission's fields, and the spec inside through the spec
// reader and validator (filesystem faked). Nothing may crash, hang or trip a sanitizer; the
// inputs that once crashed the route were JSON nested 200,000 deep.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "coordinator/http/submission_json.h"
#include "runtime/job/job_loader.h"

namespace {

coupler::job::PathInfo FakeProbe(const std::string& path) {
  using Kind = coupler::job::PathInfo::Kind;
  if (path.ends_with(".csv")) return {Kind::kFile, 0};
  if (path.ends_with("shards")) return {Kind::kDirectory, 3};
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  coupler::wire::SubmitJob submit;
  if (!coupler::coordinator::http::ReadSubmissionJson(body, submit).ok()) return 0;
  coupler::job::ValidationEnv env;
  env.probe = FakeProbe;
  coupler::job::LoadedJob job = coupler::job::LoadJobText(submit.spec_text, "request.yaml", "/specs", env);
  (void)job.diags.ToString();
  return 0;
}
