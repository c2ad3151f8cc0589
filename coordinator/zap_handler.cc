#include "coordinator/zap_handler.h"

#include <zmq_addon.hpp>

#include <cstdint>
#include <string>

#include "runtime/logging.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

std::string Z85(const zmq::message_t& raw_key) {
  if (raw_key.size() != 32) return {};
  char out[41];
  if (zmq_z85_encode(out, static_cast<const uint8_t*>(raw_key.data()), 32) == nullptr) return {};
  return out;
}

}  // namespace

const std::map<std::string, std::string>& AllowLists::Load(const std::string& dir) {
  Cached& c = cache_[dir];
  std::error_code ec;
  const fs::file_time_type mtime = fs::last_write_time(dir, ec);
  if (c.loaded && !ec && mtime == c.mtime) return c.keys;
  Result<std::map<std::string, std::string>> keys = net::ReadAllowList(dir);
  if (!keys.ok()) {
    // A damaged list admits nobody new rather than whoever it half-lists.
    Logger("coordinator")->error("allow-list {}: {}", dir, keys.status().message());
    c.keys.clear();
  } else {
    c.keys = std::move(*keys);
  }
  c.mtime = ec ? fs::file_time_type{} : mtime;
  c.loaded = !ec;
  return c.keys;
}

std::optional<std::string> AllowLists::Find(const std::string& domain,
                                            const std::string& public_z85) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string dir = domain == kWorkersDomain   ? keys_.workers_dir()
                          : domain == kClientsDomain ? keys_.clients_dir()
                                                     : std::string();
  if (dir.empty()) return std::nullopt;
  const auto& keys = Load(dir);
  auto it = keys.find(public_z85);
  if (it == keys.end()) return std::nullopt;
  return it->second;
}

bool AllowLists::IsAdmin(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& clients = Load(keys_.clients_dir());
  const auto& admins = Load(keys_.admins_dir());
  for (const auto& [key, client_name] : clients) {
    if (client_name == name) return admins.count(key) > 0;
  }
  return false;
}

ZapHandler::ZapHandler(std::shared_ptr<AllowLists> lists, zmq::socket_t socket,
                       zmq::socket_t wake, zmq::socket_t waker)
    : lists_(std::move(lists)),
      socket_(std::move(socket)),
      wake_(std::move(wake)),
      waker_(std::move(waker)) {}

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& ctx,
                                                      std::shared_ptr<AllowLists> lists) {
  zmq::socket_t socket;
  zmq::socket_t wake;
  zmq::socket_t waker;
  try {
    socket = zmq::socket_t(ctx, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
    // One handler per context (kZapEndpoint is fixed), so one wake endpoint per context too.
    const std::string wake_endpoint =
        "inproc://coupler.zap.wake." + std::to_string(reinterpret_cast<uintptr_t>(ctx.handle()));
    wake = zmq::socket_t(ctx, zmq::socket_type::pull);
    wake.set(zmq::sockopt::linger, 0);
    wake.bind(wake_endpoint);
    waker = zmq::socket_t(ctx, zmq::socket_type::push);
    waker.set(zmq::sockopt::linger, 0);
    waker.connect(wake_endpoint);
  } catch (const zmq::error_t& e) {
    return Internal(std::string("cannot start the ZAP handler on ") + kZapEndpoint + ": " +
                    e.what());
  }
  std::unique_ptr<ZapHandler> h(new ZapHandler(std::move(lists), std::move(socket),
                                               std::move(wake), std::move(waker)));
  h->thread_ = std::thread([p = h.get()] { p->Loop(); });
  return h;
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  try {
    (void)waker_.send(zmq::const_buffer("", 0), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // The loop still sees stop_ at its next poll timeout.
  }
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::Loop() {
  while (!stop_.load()) {
    zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                               {wake_.handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(100));
    } catch (const zmq::error_t&) {
      continue;  // EINTR
    }
    if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
    std::vector<zmq::message_t> request;
    try {
      if (!zmq::recv_multipart(socket_, std::back_inserter(request), zmq::recv_flags::dontwait)) {
        continue;
      }
    } catch (const zmq::error_t&) {
      continue;
    }
    Answer(request);
  }
}

void ZapHandler::Answer(std::vector<zmq::message_t>& request) {
  // RFC 27: version, request id, domain, address, routing id, mechanism, credentials...
  std::string status = "500";
  std::string text = "malformed ZAP request";
  std::string user;
  std::string request_id;
  if (request.size() >= 6 && request[0].to_string() == "1.0") {
    request_id = request[1].to_string();
    const std::string domain = request[2].to_string();
    const std::string address = request[3].to_string();
    const std::string mechanism = request[5].to_string();
    const std::string key = mechanism == "CURVE" && request.size() >= 7 ? Z85(request[6]) : "";
    std::optional<std::string> name = key.empty() ? std::nullopt : lists_->Find(domain, key);
    if (name) {
      status = "200";
      text = "OK";
      user = *name;
    } else {
      status = "400";
      text = key.empty() ? "CURVE required" : "key not authorized for " + domain;
      ++refused_;
      const std::string who = key.empty() ? mechanism : key;
      if (logged_.insert(domain + "/" + who).second) {
        // Once per key: a refused peer that keeps retrying must not flood the log.
        Logger("coordinator")
            ->warn("refused a {} handshake from {}: key {} is not in authorized/{}/", domain,
                   address.empty() ? "a local peer" : address,
                   key.empty() ? "(none, mechanism " + mechanism + ")" : key.substr(0, 8) + "...",
                   domain);
      }
    }
  }
  try {
    socket_.send(zmq::buffer(std::string("1.0")), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t(), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    Logger("coordinator")->error("ZAP reply: {}", e.what());
  }
}

}  // namespace coupler::coordinator
