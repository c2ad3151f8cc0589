// ZeroMQ endpoint strings read as addresses: is it reachable only from this machine, and what
// names it for key discovery. Parsed, never matched as substrings: "tcp://127.0.0.1.evil:1"
// and "tcp://10.0.0.1:7100?x=://127." are not loopback.
#pragma once

#include <optional>
#include <string>

namespace coupler::net {

struct Endpoint {
  std::string transport;  // "tcp", "ipc", "inproc", ...
  std::string host;       // tcp: the address or name, without brackets; else empty
  std::string port;       // tcp: digits or "*"; else empty
  std::string path;       // ipc/inproc: what follows "://"
};
std::optional<Endpoint> ParseEndpoint(const std::string& endpoint);

// True only for ipc:// and inproc:// (this machine by construction) and tcp on 127.0.0.0/8,
// ::1 or "localhost". Wildcards (*, 0.0.0.0, ::), interface names and anything unparsable
// count as reachable from the network.
bool IsLoopback(const std::string& endpoint);

// Where clients reach the coordinator listening for workers on `endpoint`:
// "tcp://h:7100" → "tcp://h:7101"; "ipc:///run/c" → "ipc:///run/c.clients"; "*" ports stay "*".
std::string ClientEndpointFor(const std::string& endpoint);

}  // namespace coupler::net
