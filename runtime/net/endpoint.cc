#include "runtime/net/endpoint.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <iterator>
#include <string>

namespace coupler::net {

std::optional<Endpoint> ParseEndpoint(const std::string& endpoint) {
  const auto sep = endpoint.find("://");
  if (sep == std::string::npos || sep == 0) return std::nullopt;
  Endpoint e;
  e.transport = endpoint.substr(0, sep);
  const std::string rest = endpoint.substr(sep + 3);
  if (e.transport != "tcp") {
    if (rest.empty()) return std::nullopt;
    e.path = rest;
    return e;
  }
  // tcp://[source;]host:port — a source address part would let the peer side differ.
  if (rest.find(';') != std::string::npos) return std::nullopt;
  std::string host;
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return std::nullopt;
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string::npos) return std::nullopt;  // bare IPv6 needs brackets
  }
  if (host.empty() || port.empty()) return std::nullopt;
  if (port != "*") {
    if (port.size() > 5) return std::nullopt;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
  }
  e.host = host;
  e.port = port;
  return e;
}

bool IsLoopback(const std::string& endpoint) {
  const std::optional<Endpoint> e = ParseEndpoint(endpoint);
  if (!e) return false;
  if (e->transport == "ipc" || e->transport == "inproc") return true;
  if (e->transport != "tcp") return false;
  if (e->host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, e->host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, e->host.c_str(), &v6) == 1) {
    static const in6_addr kLoop = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoop.s6_addr));
  }
  return false;
}

std::string ClientEndpointFor(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0) return endpoint + ".clients";
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) return endpoint;
  const std::string port = endpoint.substr(colon + 1);
  if (port == "*" || port.empty()) return endpoint;
  try {
    return endpoint.substr(0, colon + 1) + std::to_string(std::stoi(port) + 1);
  } catch (const std::exception&) {
    return endpoint;
  }
}

}  // namespace coupler::net
