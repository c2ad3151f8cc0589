// How deep a JSON text nests, checked on the text before a recursive parser sees it: the
// HTTP API parses submission bodies with rapidjson's DOM, which recurses once per level.
// The bound is the spec readers' own (spec_limits.h), so one number holds for every reader.
#pragma once

#include <string_view>

#include "runtime/job/spec_limits.h"
#include "runtime/status.h"

namespace coupler::job {

// InvalidArgument with NestingTooDeepMessage() when `text` opens arrays and objects more than
// `max_depth` inside one another. Lexical (brackets outside strings; nothing is built), so it
// runs in constant stack on text of any depth, well-formed or not.
Status CheckJsonNesting(std::string_view text, int max_depth = kMaxSpecDepth);

}  // namespace coupler::job
