// Which of this machine's addresses faces a given peer: what a worker advertises by default
// (the local address of its connection to the coordinator), so its peers reach it the way it
// reaches them. Hosts are told apart by these addresses, never by hostnames.
#pragma once

#include <string>

#include "runtime/status.h"

namespace coupler::net {

// The local IP address the kernel would send from toward the host of `endpoint` (a connected
// UDP socket's name: no packet is sent). "127.0.0.1" for ipc:// and inproc://. Unavailable
// when the host cannot be resolved or reached (no route).
Result<std::string> LocalAddressToward(const std::string& endpoint);

}  // namespace coupler::net
