#include "cli/doctor_preflight.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <zmq.hpp>

#include "runtime/job/run_dir.h"
#include "runtime/net/endpoint.h"
#include "runtime/net/handshake_monitor.h"
#include "runtime/net/key_discovery.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/messages.h"

namespace coupler::cli {
namespace {

namespace fs = std::filesystem;

// A file descriptor closed when it goes.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A TCP connect to the endpoint's host and port within `timeout`: "" when it connected, else why.
std::string TcpConnect(const std::string& endpoint, std::chrono::milliseconds timeout, double* ms) {
  const std::optional<net::Endpoint> e = net::ParseEndpoint(endpoint);
  if (!e || e->transport != "tcp" || e->host.empty() || e->port.empty() || e->port == "*") {
    return "not a tcp://HOST:PORT endpoint";
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int r = ::getaddrinfo(e->host.c_str(), e->port.c_str(), &hints, &found); r != 0) {
    return std::string("cannot resolve ") + e->host + ": " + ::gai_strerror(r);
  }
  std::string why = "no address";
  const auto start = std::chrono::steady_clock::now();
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    pollfd p{fd.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) {
      why = "no answer within " + std::to_string(timeout.count()) + " ms (a firewall dropping it?)";
      continue;
    }
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
    if (ready < 0 || error != 0) {
      why = std::strerror(ready < 0 ? errno : error);
      continue;
    }
    *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ::freeaddrinfo(found);
    return "";
  }
  ::freeaddrinfo(found);
  return why;
}

void ProbeKey(const PreflightOptions& o, doctor::PreflightFacts& f) {
  Result<std::optional<net::PeerKeys>> keys =
      net::FindPeerKeys(o.coordinator, net::KeyRole::kWorker, o.keys_dir, o.insecure);
  if (!keys.ok()) {
    f.key = doctor::KeyVerdict::kNoKeys;
    f.key_detail = keys.status().message();
    return;
  }
  f.insecure = !keys->has_value();
  if (keys->has_value()) {
    f.key_name = (*keys)->own.name;
    f.keys_from = o.keys_dir.empty() ? "found as a worker finds it" : o.keys_dir;
  }
  zmq::context_t ctx(1);
  net::HandshakeMonitor monitor;
  Result<zmq::socket_t> dealer = net::ConnectDealer(
      ctx, o.coordinator, keys->has_value() ? &**keys : nullptr, &monitor, o.coordinator);
  if (!dealer.ok()) {
    f.key = doctor::KeyVerdict::kSilent;
    f.key_detail = dealer.status().message();
    return;
  }
  dealer->set(zmq::sockopt::linger, 0);
  // A heartbeat from a connection it does not know: the coordinator answers RegisterAgain and
  // does nothing else, so the probe registers nothing and takes no work.
  wire::Heartbeat beat;
  beat.sender_id = "coupler-doctor";
  (void)dealer->send(zmq::buffer(wire::Encode(beat)), zmq::send_flags::dontwait);
  const auto deadline = std::chrono::steady_clock::now() + o.timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::optional<Status> failed = monitor.Poll()) {
      f.key = failed->code() == StatusCode::kPermissionDenied ? doctor::KeyVerdict::kRefused
                                                              : doctor::KeyVerdict::kWrongServer;
      f.key_detail = failed->message();
      return;
    }
    Result<std::optional<std::string>> reply = net::RecvFor(*dealer, std::chrono::milliseconds(100));
    if (reply.ok() && reply->has_value()) {
      f.key = doctor::KeyVerdict::kAnswered;
      f.reply_version = wire::PeekVersion(**reply);
      return;
    }
  }
  if (monitor.cut_short() > 0 && !monitor.succeeded()) {
    // A CURVE server ends a handshake that names another server key before any key is checked.
    f.key = doctor::KeyVerdict::kWrongServer;
    f.key_detail = "every handshake (" + std::to_string(monitor.cut_short()) + ") was cut short";
    return;
  }
  f.key = doctor::KeyVerdict::kSilent;
}

void ProbeWorkdir(const std::string& dir, doctor::PreflightFacts& f) {
  f.workdir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    f.workdir_error = dir + " is not a directory here" + (ec ? ": " + ec.message() : "");
    return;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const fs::path probe = fs::path(dir) / (".coupler-doctor-" + std::string(host) + "-" +
                                          std::to_string(::getpid()));
  {
    std::ofstream out(probe);
    out << "coupler doctor\n";
    out.close();
    if (!out) {
      f.workdir_error = "cannot write in " + dir + " here: " + std::strerror(errno);
      return;
    }
  }
  fs::remove(probe, ec);
  // The newest job marker the coordinator wrote (runtime/job/workdir_marker.h), readable here:
  // in a job's run directory, DIR/runs/<job>/, or in DIR itself (a job's own run_dir).
  fs::file_time_type newest{};
  auto look_in = [&](const fs::path& folder) {
    std::error_code walk;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, walk)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with(".coupler-job-")) continue;
      std::ifstream in(e.path());
      std::string token;
      if (!std::getline(in, token) || token.empty()) continue;
      const fs::file_time_type when = e.last_write_time(walk);
      if (f.newest_marker_job.empty() || when > newest) {
        newest = when;
        f.newest_marker_job = name.substr(std::strlen(".coupler-job-"));
      }
    }
  };
  look_in(dir);
  const fs::path runs = fs::path(dir) / job::kRunsFolder;
  for (const fs::directory_entry& run : fs::directory_iterator(runs, ec)) {
    if (run.is_directory(ec)) look_in(run.path());
  }
}

void ProbeMpiPorts(doctor::PreflightFacts& f) {
  const char* min = std::getenv("OMPI_MCA_btl_tcp_port_min_v4");
  if (min == nullptr || std::atoi(min) <= 0) return;
  f.mpi_port_min = static_cast<uint32_t>(std::atoi(min));
  const char* range = std::getenv("OMPI_MCA_btl_tcp_port_range_v4");
  // Open MPI's default range: every port from the minimum up.
  f.mpi_port_range = range != nullptr && std::atoi(range) > 0 ? static_cast<uint32_t>(std::atoi(range))
                                                            : 65536 - f.mpi_port_min;
  f.mpi_ports_tried = std::min<uint32_t>(f.mpi_port_range, 8);
  for (uint32_t port = f.mpi_port_min; port < f.mpi_port_min + f.mpi_ports_tried; ++port) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (fd.get() >= 0 && ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 &&
        errno == EADDRINUSE) {
      f.mpi_ports_busy.push_back(port);
    }
  }
}

}  // namespace

doctor::PreflightFacts ProbeCoordinator(const PreflightOptions& o) {
  doctor::PreflightFacts f;
  f.endpoint = o.coordinator;
  f.tcp_error = TcpConnect(o.coordinator, o.timeout, &f.tcp_ms);
  if (f.tcp_error.empty()) ProbeKey(o, f);
  if (!o.workdir.empty()) ProbeWorkdir(o.workdir, f);
  ProbeMpiPorts(f);
  return f;
}

}  // namespace coupler::cli
