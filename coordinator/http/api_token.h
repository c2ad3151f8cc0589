// The HTTP side's bearer tokens, each in a file of the state directory, made at first start
// (128 random bits) and kept across restarts so scripts and bookmarks keep working; compared in
// constant time. The API token (`http-token`, 0600) is the credential of whoever owns the state:
// it submits, cancels and drains. The metrics token (`metrics-token`, 0640) reads /metrics and
// nothing else, so a scraper running as another user (Debian's `prometheus`) is given it by
// `chgrp prometheus metrics-token`, never the API token.
#pragma once

#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::coordinator::http {

// "{state_dir}/http-token" and "{state_dir}/metrics-token".
std::string ApiTokenPath(const std::string& state_dir);
std::string MetricsTokenPath(const std::string& state_dir);

// Who may read a token file besides its owner: nobody (the API token), or the file's group
// (the metrics token). A file readable beyond that is refused.
enum class TokenReaders { kOwner, kOwnerAndGroup };

// Reads a token file: InvalidArgument naming it and the chmod that fixes it when more users
// can read it than `readers` allows, or when it holds no usable token.
Result<std::string> ReadToken(const std::string& path, TokenReaders readers);

// Reads the token, creating it first (mode 0600 or 0640) when there is none.
Result<std::string> EnsureToken(const std::string& path, TokenReaders readers);
inline Result<std::string> EnsureApiToken(const std::string& state_dir) {
  return EnsureToken(ApiTokenPath(state_dir), TokenReaders::kOwner);
}

// Equal without leaking, through timing, how long a common prefix a guess has.
bool TokensEqual(std::string_view a, std::string_view b);

}  // namespace coupler::coordinator::http
