// A bearer token the HTTP threads check requests against, kept in its file (api_token.h) and
// read again when the file changes: an operator rotates a token by replacing the file, and
// the coordinator honours the new one, and no longer the old, within a second, without a
// restart. A replacement it must refuse (readable by too many users, too short) leaves the
// token unusable, never the old one in force: whoever replaced it meant the old one revoked.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "coordinator/http/api_token.h"
#include "runtime/status.h"

namespace coupler::coordinator::http {

class TokenFile {
 public:
  // Creates the file when there is none (EnsureToken) and reads it.
  static Result<TokenFile> Open(std::string path, TokenReaders readers);

  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&&) = delete;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  // True when `guess` is the token the file holds now (false for every guess while it holds
  // none that can be used). Thread-safe; looks at the file at most every kRecheckMs.
  bool Matches(std::string_view guess) const;
  // The token in force ("" while none is): what the page's cookie is set to.
  std::string Current() const;
  const std::string& path() const { return path_; }

  static constexpr int64_t kRecheckMs = 1000;

 private:
  // What tells a replaced or rewritten file from the one read last.
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    int64_t mtime_ns = 0;
    off_t size = 0;
    bool operator==(const Identity&) const = default;
  };
  TokenFile(std::string path, TokenReaders readers, std::string token, Identity seen);
  void RefreshLocked() const;

  std::string path_;
  TokenReaders readers_;
  mutable std::mutex mu_;
  mutable std::string token_;
  mutable Identity seen_;
  mutable int64_t checked_ms_ = 0;
};

}  // namespace coupler::coordinator::http
