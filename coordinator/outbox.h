// What handling a message sends, as the parts that decide (JobControl, PoolControl) hand it to
// the event loop, which alone owns the sockets: answers to clients, messages to workers by id,
// and messages to one connection on the worker socket (a peer not registered yet, a refused
// one, a gang's launch agent). Each list keeps its order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/message_type.h"

namespace coupler::coordinator {

// A client's request, as the loop names where its answer goes.
struct ClientRef {
  std::string identity;  // its route ("h..." for the HTTP API's)
  bool delimiter = false;
};

struct Outbox {
  struct ClientMessage {
    ClientRef to;
    std::string payload;
  };
  struct WorkerMessage {
    std::string worker_id;
    std::string payload;
  };
  struct RouteMessage {
    std::string route;
    std::string payload;
  };
  std::vector<ClientMessage> clients;
  std::vector<WorkerMessage> workers;
  std::vector<RouteMessage> routes;

  void Reply(const ClientRef& to, std::string payload) { clients.push_back({to, std::move(payload)}); }
  void Error(const ClientRef& to, const Status& status, wire::MessageType about);
  void ToWorker(std::string worker_id, std::string payload) {
    workers.push_back({std::move(worker_id), std::move(payload)});
  }
  void ToRoute(std::string route, std::string payload) {
    routes.push_back({std::move(route), std::move(payload)});
  }
};

}  // namespace coupler::coordinator
