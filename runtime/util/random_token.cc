#include "runtime/util/random_token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>

#include "runtime/check.h"

namespace coupler::util {

std::string RandomToken() {
  uint8_t bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    COUPLER_CHECK(n > 0) << "getrandom failed: errno " << errno;
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(bytes));
  for (const uint8_t b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace coupler::util
