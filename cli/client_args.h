// The options every client command takes (--coordinator, --clients, --keys, --insecure) and
// how they become a connected client: one place, so `submit`, `status`, ... and `autoscale`
// reach a coordinator, and explain failing to, the same way.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "client/client.h"
#include "runtime/status.h"

namespace coupler::cli {

struct ClientConnection {
  std::string coordinator = "tcp://127.0.0.1:7100";
  std::string clients;  // the client endpoint itself; empty: derived from `coordinator`
  client::ClientSecurity security;
};

// A subcommand of `app` with the connection options bound to `connection`, which must outlive
// the parse (the commands keep it in a shared_ptr their callback holds).
CLI::App* ClientCommand(CLI::App& app, const char* name, const char* help,
                        ClientConnection& connection);

// The client endpoint: --clients as given, else the one a coordinator listening for workers
// on --coordinator binds by default.
std::string ClientEndpoint(const ClientConnection& c);

Result<std::unique_ptr<client::Client>> ConnectClient(const ClientConnection& c);

// Prints the failure (naming the endpoint tried when it was not reached) and returns the exit
// code: 2 for bad input (an unknown job or worker), 1 otherwise.
int FailClient(const ClientConnection& c, const Status& s);

// The failure's message with the endpoint hint FailClient adds, for a command that reports
// and carries on.
std::string ClientFailureText(const ClientConnection& c, const Status& s);

}  // namespace coupler::cli
