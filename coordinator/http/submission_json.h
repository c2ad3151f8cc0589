// The JSON form of `POST /api/v1/jobs`: {"spec": TEXT or OBJECT, "submission_id", "priority",
// "path", "cwd"}, read into a submission. Apart from the route so that it is fuzzed on its own
// (tests/fuzz/fuzz_http_json.cc): it is the first parser every HTTP submission's bytes reach.
#pragma once

#include <string_view>

#include "runtime/status.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator::http {

// Fills `submit`'s spec text and the optional fields from `body`; InvalidArgument saying what is
// wrong otherwise (nesting past the spec readers' depth is refused before any parse).
Status ReadSubmissionJson(std::string_view body, wire::SubmitJob& submit);

}  // namespace coupler::coordinator::http
