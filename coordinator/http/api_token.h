// The HTTP API's bearer token: the credential of whoever owns the coordinator's state
// directory. Made at first start (128 random bits, a 0600 file the owner alone reads), kept
// across restarts so scripts and bookmarks keep working, compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::coordinator::http {

// "{state_dir}/http-token".
std::string ApiTokenPath(const std::string& state_dir);

// Reads the token, creating it first when there is none. Refuses a token file other local
// users can read (InvalidArgument naming it and the chmod that fixes it).
Result<std::string> EnsureApiToken(const std::string& state_dir);

// Equal without leaking, through timing, how long a common prefix a guess has.
bool TokensEqual(std::string_view a, std::string_view b);

}  // namespace coupler::coordinator::http
