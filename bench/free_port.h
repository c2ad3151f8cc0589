// Free loopback ports for the coordinators that benchmarks and tests start: probed, and picked
// below the kernel's ephemeral range (32768 and up on Linux), so an outgoing connection does not
// take one between the probe and the bind. A port derived from the pid alone landed in that
// range and collided ("cannot listen on tcp://127.0.0.1:45278: Address already in use").
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <random>

namespace coupler::bench {

// True when nothing listens on 127.0.0.1:port (probed the way ZeroMQ binds: SO_REUSEADDR).
inline bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  listen(fd, 1) == 0;
  close(fd);
  return ok;
}

// A port P with P and P + 1 both free (the coordinator takes P for workers, P + 1 for clients);
// -1 when none was found. A caller that loses a race anyway retries with another.
inline int FreePortPair() {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(20000, 31998);
  for (int i = 0; i < 1000; ++i) {
    const int p = pick(rng);
    if (PortFree(p) && PortFree(p + 1)) return p;
  }
  return -1;
}

}  // namespace coupler::bench
