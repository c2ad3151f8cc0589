#include "cli/client_args.h"

#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "runtime/net/endpoint.h"

namespace coupler::cli {
namespace {

// How the endpoint tried came about, for an error about reaching it: a coordinator started
// with its own --clients endpoint is not at the derived one.
std::string EndpointHint(const ClientConnection& c) {
  return c.clients.empty()
             ? " (the client endpoint of a coordinator whose workers endpoint is " +
                   c.coordinator + "; for one started with --clients ENDPOINT, pass --clients "
                   "ENDPOINT)"
             : " (--clients " + c.clients + ")";
}

}  // namespace

CLI::App* ClientCommand(CLI::App& app, const char* name, const char* help,
                        ClientConnection& connection) {
  CLI::App* c = app.add_subcommand(name, help);
  c->add_option("--coordinator", connection.coordinator,
                "the coordinator's workers endpoint; clients reach it at the port + 1 "
                "(ipc: PATH.clients) unless --clients is given")
      ->capture_default_str();
  c->add_option("--clients", connection.clients,
                "the coordinator's client endpoint, used as given (the one it was started "
                "with --clients, or the clients= line of its --ready-file)");
  c->add_option("--keys", connection.security.keys_dir,
                "client key set: NAME.key + coordinator.pub (default: $COUPLER_KEYS, then the "
                "local keys of a coordinator of this user on this machine)");
  c->add_flag("--insecure", connection.security.insecure,
              "plaintext, to a coordinator started --insecure");
  return c;
}

// Named outright rather than learned from a local file, so it works from any machine and
// never picks up another coordinator's leftovers.
std::string ClientEndpoint(const ClientConnection& c) {
  return c.clients.empty() ? net::ClientEndpointFor(c.coordinator) : c.clients;
}

Result<std::unique_ptr<client::Client>> ConnectClient(const ClientConnection& c) {
  auto client = client::Client::Connect(ClientEndpoint(c), std::chrono::seconds(10), c.security);
  // No keys published for that endpoint: most often nobody listens there.
  if (client.status().code() == StatusCode::kNotFound) {
    return Status(StatusCode::kNotFound, client.status().message() + EndpointHint(c));
  }
  return client;
}

std::string ClientFailureText(const ClientConnection& c, const Status& s) {
  std::string message = s.message();
  if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded) {
    message += EndpointHint(c);
  }
  return message;
}

int FailClient(const ClientConnection& c, const Status& s) {
  std::fprintf(stderr, "coupler: %s\n", ClientFailureText(c, s).c_str());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

}  // namespace coupler::cli
