#include "coordinator/http/token_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "runtime/logging.h"

namespace coupler::coordinator::http {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<TokenFile> TokenFile::Open(std::string path, TokenReaders readers) {
  COUPLER_ASSIGN_OR_RETURN(std::string token, EnsureToken(path, readers));
  struct stat st{};
  Identity seen;
  if (::stat(path.c_str(), &st) == 0) {
    seen = {st.st_dev, st.st_ino, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, st.st_size};
  }
  return TokenFile(std::move(path), readers, std::move(token), seen);
}

TokenFile::TokenFile(std::string path, TokenReaders readers, std::string token, Identity seen)
    : path_(std::move(path)), readers_(readers), token_(std::move(token)), seen_(seen),
      checked_ms_(SteadyMs()) {}

TokenFile::TokenFile(TokenFile&& other) noexcept
    : path_(std::move(other.path_)), readers_(other.readers_), token_(std::move(other.token_)),
      seen_(other.seen_), checked_ms_(other.checked_ms_) {}

void TokenFile::RefreshLocked() const {
  const int64_t now = SteadyMs();
  if (now - checked_ms_ < kRecheckMs) return;
  checked_ms_ = now;
  struct stat st{};
  Identity current;
  if (::stat(path_.c_str(), &st) == 0) {
    current = {st.st_dev, st.st_ino, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, st.st_size};
  }
  if (current == seen_) return;
  seen_ = current;
  Result<std::string> token = ReadToken(path_, readers_);
  auto log = Logger("coordinator");
  if (!token.ok()) {
    // Logged once per change of the file, not per request.
    log->error("HTTP token {} changed and cannot be used: {}; requests with it are refused until "
               "it is fixed",
               path_, token.status().message());
    token_.clear();
    return;
  }
  if (*token != token_) log->info("HTTP token {} changed: the new one is in force", path_);
  token_ = std::move(*token);
}

bool TokenFile::Matches(std::string_view guess) const {
  std::lock_guard<std::mutex> lock(mu_);
  RefreshLocked();
  return !token_.empty() && TokensEqual(guess, token_);
}

std::string TokenFile::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  RefreshLocked();
  return token_;
}

}  // namespace coupler::coordinator::http
