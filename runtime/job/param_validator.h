// Types one node's params against its op's schema: unknown names, missing required ones,
// wrong types, ranges, choices, placeholders, and files that must exist.
#pragma once

#include "runtime/job/validator.h"

namespace coupler::job {

void ValidateParams(NodeSpec& node, const ops::OpDef& op, const ValidationEnv& env,
                    Diagnostics& diags);

// Renders a typed param the way a user would write it (lists as "a,b").
std::string ParamToString(const ParamValue& v);

}  // namespace coupler::job
