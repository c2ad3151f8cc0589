#include "coordinator/http/submission_json.h"

#include <string>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "runtime/job/json_nesting.h"

namespace coupler::coordinator::http {

Status ReadSubmissionJson(std::string_view body, wire::SubmitJob& submit) {
  // rapidjson's DOM parser recurses once per level: a body nested 200,000 deep would overflow
  // the serving thread's stack. Refused on the text first, at the spec readers' own bound (one
  // more level for the submission's object around the spec).
  if (Status nesting = job::CheckJsonNesting(body, job::kMaxSpecDepth + 1); !nesting.ok()) {
    return InvalidArgument("the JSON body is " + nesting.message());
  }
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  if (d.HasParseError() || !d.IsObject()) {
    return InvalidArgument("the body is not a JSON object: send {\"spec\": ..., \"submission_id\": ...}");
  }
  if (!d.HasMember("spec")) return InvalidArgument("the body has no \"spec\"");
  const auto& spec = d["spec"];
  if (spec.IsString()) {
    submit.spec_text.assign(spec.GetString(), spec.GetStringLength());
  } else if (spec.IsObject()) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    spec.Accept(w);
    submit.spec_text.assign(buf.GetString(), buf.GetSize());
  } else {
    return InvalidArgument("\"spec\" must be the spec's text (YAML or JSON) or a JSON object");
  }
  auto text = [&](const char* key, std::string& out) -> Status {
    if (!d.HasMember(key)) return Status::Ok();
    if (!d[key].IsString()) return InvalidArgument(std::string("\"") + key + "\" must be a string");
    out.assign(d[key].GetString(), d[key].GetStringLength());
    return Status::Ok();
  };
  COUPLER_RETURN_IF_ERROR(text("submission_id", submit.submission_id));
  COUPLER_RETURN_IF_ERROR(text("path", submit.spec_path));
  COUPLER_RETURN_IF_ERROR(text("cwd", submit.cwd));
  if (d.HasMember("priority")) {
    if (!d["priority"].IsInt()) return InvalidArgument("\"priority\" must be an integer");
    submit.priority = d["priority"].GetInt();
  }
  return Status::Ok();
}

}  // namespace coupler::coordinator::http
