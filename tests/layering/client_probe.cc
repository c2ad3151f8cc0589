// A program that links only coupler_client (and through it coupler_runtime), as an embedder of
// the client would: `coupler submit` must not need the scheduler, the store, MPI or NCCL.
// link_check.sh inspects what this binary pulled in. Run with an endpoint, it asks a coordinator
// for its status once.
#include <chrono>
#include <cstdio>

#include "client/client.h"

int main(int argc, char** argv) {
  if (argc < 2) return 0;
  auto client = coupler::client::Client::Connect(argv[1], std::chrono::seconds(2));
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  auto reply = (*client)->Status();
  std::printf("%s\n", reply.ok() ? "ok" : reply.status().ToString().c_str());
  return reply.ok() ? 0 : 1;
}
