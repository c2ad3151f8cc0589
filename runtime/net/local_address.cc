#include "runtime/net/local_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/io/unique_fd.h"
#include "runtime/net/endpoint.h"

namespace coupler::net {

Result<std::string> LocalAddressToward(const std::string& endpoint) {
  const std::optional<Endpoint> ep = ParseEndpoint(endpoint);
  if (!ep) return InvalidArgument("not a ZeroMQ endpoint: " + endpoint);
  if (ep->transport != "tcp") return std::string("127.0.0.1");
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string port = ep->port == "*" || ep->port.empty() ? "9" : ep->port;
  if (const int rc = ::getaddrinfo(ep->host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Unavailable("cannot resolve " + ep->host + ": " + ::gai_strerror(rc));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    io::UniqueFd fd(::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd.valid() || ::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      error = std::strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      error = std::strerror(errno);
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = local.ss_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (::inet_ntop(local.ss_family, raw, text, sizeof(text)) == nullptr) continue;
    ::freeaddrinfo(found);
    return std::string(text);
  }
  ::freeaddrinfo(found);
  return Unavailable("no route to " + ep->host + ": " + error);
}

}  // namespace coupler::net
