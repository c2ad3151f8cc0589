#include "coordinator/http/api_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/io/unique_fd.h"
#include "runtime/util/random_token.h"

namespace coupler::coordinator::http {
namespace {

constexpr size_t kMaxTokenFile = 256;

}  // namespace

Result<std::string> ReadToken(const std::string& path, TokenReaders readers) {
  io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Unavailable("cannot read " + path + ": " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return Internal("cannot stat " + path + ": " + std::strerror(errno));
  if (readers == TokenReaders::kOwner && (st.st_mode & 077) != 0) {
    return InvalidArgument(path + " is readable by other users: anyone who reads it can submit "
                           "work; run chmod 600 " + path);
  }
  if (readers == TokenReaders::kOwnerAndGroup && (st.st_mode & 027) != 0) {
    return InvalidArgument(path + " is readable by users outside its group (or writable by its "
                           "group): anyone who reads it can scrape the pool's metrics; run "
                           "chmod 640 " + path);
  }
  char buf[kMaxTokenFile];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) return Internal("cannot read " + path + ": " + std::strerror(errno));
  std::string token(buf, static_cast<size_t>(n));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (token.size() < 16) return InvalidArgument(path + " holds no usable token (remove it to make a new one)");
  return token;
}

std::string ApiTokenPath(const std::string& state_dir) { return state_dir + "/http-token"; }
std::string MetricsTokenPath(const std::string& state_dir) { return state_dir + "/metrics-token"; }

Result<std::string> EnsureToken(const std::string& path, TokenReaders readers) {
  const mode_t mode = readers == TokenReaders::kOwner ? 0600 : 0640;
  // O_EXCL: of two coordinators starting on one state, one writes the token and both read it.
  io::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (fd.valid()) {
    // The umask may have taken the group's read away; the mode is part of the contract.
    if (::fchmod(fd.get(), mode) != 0) {
      const std::string why = std::strerror(errno);
      ::unlink(path.c_str());
      return Internal("cannot chmod " + path + ": " + why);
    }
    const std::string token = util::RandomToken();
    const std::string line = token + "\n";
    if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        ::fsync(fd.get()) != 0) {
      const std::string why = std::strerror(errno);
      ::unlink(path.c_str());
      return Internal("cannot write " + path + ": " + why);
    }
    return token;
  }
  if (errno != EEXIST) return Internal("cannot create " + path + ": " + std::strerror(errno));
  return ReadToken(path, readers);
}

bool TokensEqual(std::string_view a, std::string_view b) {
  // Every byte of the longer one is looked at whatever matched before; only the length leaks,
  // and every token has the same length.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace coupler::coordinator::http
