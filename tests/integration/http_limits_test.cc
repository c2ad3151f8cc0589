// The coordinator's HTTP side under hostile clients that hold no token: a JSON body nested
// 200,000 deep, hundreds of connections that send nothing (or half a request) while the
// liveness probe asks /healthz, and a 100 MB chunked body. Each is answered or closed within
// its limit, and the coordinator answers afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

using Clock = std::chrono::steady_clock;

// The coordinator's cap on a request body (coordinator/http/http_server.cc: a 16 MiB spec and
// the JSON around it).
constexpr uint64_t kBodyCap = (16u << 20) + (64u << 10);

// A TCP connection to 127.0.0.1:port, closed with the object; -1 when it could not connect.
class Conn {
 public:
  explicit Conn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(Conn&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Everything the server sends until it closes or `timeout` passes.
  std::string ReadAll(std::chrono::milliseconds timeout) {
    std::string out;
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

// "HTTP/1.1 413 Payload Too Large\r\n..." → 413; 0 when there is no status line.
int StatusOf(const std::string& reply) {
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12) return 0;
  return std::atoi(reply.c_str() + 9);
}

std::string BodyOf(const std::string& reply) {
  const size_t at = reply.find("\r\n\r\n");
  return at == std::string::npos ? "" : reply.substr(at + 4);
}

// Peak resident memory of a process (VmHWM in /proc/PID/status), in bytes.
uint64_t PeakRss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

class HttpLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Cluster::Options o;
    o.coordinator_args = {"--http", "127.0.0.1:0"};
    cluster_.emplace(o);
    ASSERT_TRUE(cluster_->StartCoordinator()) << cluster_->Logs();
    const std::string url = cluster_->HttpUrl();
    ASSERT_FALSE(url.empty()) << "no http= line in the ready file\n" << cluster_->Logs();
    port_ = std::atoi(url.c_str() + url.rfind(':') + 1);
    ASSERT_GT(port_, 0) << url;
    token_ = cluster_->ApiToken();
    ASSERT_FALSE(token_.empty());
  }

  // One request on a fresh connection; the whole reply (the server closes after it).
  std::string Request(const std::string& head, std::string_view body = {},
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(30'000)) {
    Conn c(port_);
    if (!c.ok()) return "";
    if (!c.Send(head) || !c.Send(body)) return c.ReadAll(timeout);
    return c.ReadAll(timeout);
  }

  std::string PostJson(const std::string& body, bool with_token) {
    std::string head = "POST /api/v1/jobs HTTP/1.1\r\nHost: coupler\r\nConnection: close\r\n"
                       "Content-Type: application/json\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n";
    if (with_token) head += "Authorization: Bearer " + token_ + "\r\n";
    return Request(head + "\r\n", body);
  }

  int Healthz() {
    return StatusOf(Request("GET /healthz HTTP/1.1\r\nHost: coupler\r\nConnection: close\r\n\r\n"));
  }

  Cluster& c() { return *cluster_; }

  std::optional<Cluster> cluster_;
  int port_ = 0;
  std::string token_;
};

TEST_F(HttpLimitsTest, ADeeplyNestedJsonBodyIsA400AndTheCoordinatorLivesOn) {
  constexpr size_t kLevels = 200'000;
  // Without the token, the body is never parsed: 401 whatever it holds.
  EXPECT_EQ(StatusOf(PostJson(std::string(kLevels, '['), false)), 401);
  ASSERT_TRUE(c().coordinator().running()) << c().Logs();

  const std::string arrays = std::string(kLevels, '[') + std::string(kLevels, ']');
  std::string objects;
  for (size_t i = 0; i < kLevels; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kLevels, '}');
  // The spec object itself nested too deep, inside a well-formed submission.
  std::string spec;
  for (size_t i = 0; i < kLevels; ++i) spec += "{\"a\":";
  spec = "{\"spec\":" + spec + "1" + std::string(kLevels, '}') + "}";
  for (const std::string* body : std::vector<const std::string*>{&arrays, &objects, &spec}) {
    const std::string reply = PostJson(*body, true);
    EXPECT_EQ(StatusOf(reply), 400) << reply.substr(0, 300);
    EXPECT_NE(BodyOf(reply).find("nested more than"), std::string::npos) << reply.substr(0, 300);
    ASSERT_TRUE(c().coordinator().running()) << c().Logs();
  }
  EXPECT_EQ(Healthz(), 200);
  // A submission nested as a real one is still parsed (and refused by the planner for what it
  // lacks, not for its shape).
  const std::string plain = PostJson("{\"spec\":{\"name\":\"x\",\"nodes\":[{\"id\":\"a\"}]}}", true);
  EXPECT_EQ(StatusOf(plain), 400) << plain;
  EXPECT_EQ(BodyOf(plain).find("nested more than"), std::string::npos) << plain;
}

TEST_F(HttpLimitsTest, IdleConnectionsNeverStarveHealthz) {
  std::vector<Conn> idle;
  for (int i = 0; i < 200; ++i) {
    Conn conn(port_);
    ASSERT_TRUE(conn.ok()) << i;
    idle.push_back(std::move(conn));
  }
  // Half a request line, half a header: a client that stalls mid-request.
  const std::vector<std::string> partial = {"GE", "GET /healthz HT", "GET /healthz HTTP/1.1\r\n",
                                            "GET /healthz HTTP/1.1\r\nHost: cou",
                                            "POST /api/v1/jobs HTTP/1.1\r\nContent-Length: 100\r\n"};
  for (int round = 0; round < 4; ++round) {
    for (const std::string& text : partial) {
      Conn conn(port_);
      ASSERT_TRUE(conn.ok());
      ASSERT_TRUE(conn.Send(text));
      idle.push_back(std::move(conn));
    }
  }
  // The liveness probe, from the same address as all of them.
  const auto start = Clock::now();
  const std::string reply =
      Request("GET /healthz HTTP/1.1\r\nHost: coupler\r\nConnection: close\r\n\r\n", {},
              std::chrono::milliseconds(5000));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_EQ(StatusOf(reply), 200) << reply;
  EXPECT_LT(took.count(), 1000) << "the probe waited behind idle connections";
  ASSERT_TRUE(c().coordinator().running()) << c().Logs();
  // Past the per-address cap, waiting connections were closed to make room, and counted.
  const std::string metrics = Request("GET /metrics HTTP/1.1\r\nHost: coupler\r\nConnection: close\r\n"
                                      "Authorization: Bearer " + token_ + "\r\n\r\n");
  const size_t at = metrics.find("\ncoupler_http_connections_evicted_total ");
  ASSERT_NE(at, std::string::npos) << metrics.substr(0, 300);
  EXPECT_GT(std::atoi(metrics.c_str() + at + 40), 0) << metrics.substr(at, 60);
}

TEST_F(HttpLimitsTest, AHugeChunkedBodyIsRefusedWithinTheCap) {
  const pid_t pid = c().coordinator().pid();
  // Settled first: the loop's first snapshot and the HTTP threads are up.
  ASSERT_EQ(Healthz(), 200);
  const uint64_t baseline = PeakRss(pid);
  ASSERT_GT(baseline, 0u);

  constexpr size_t kTotal = 100u << 20;
  constexpr size_t kChunk = 64u << 10;
  char size_line[32];
  std::snprintf(size_line, sizeof(size_line), "%zx\r\n", kChunk);
  const std::string chunk = size_line + std::string(kChunk, 'a') + "\r\n";
  // 100 MB chunked, sent as fast as the server takes it; what the server answers meanwhile
  // (or that it closed) ends the sending.
  auto send_chunked = [&](bool with_token) {
    Conn conn(port_);
    if (!conn.ok()) return std::string("no connection");
    std::string head = "POST /api/v1/jobs HTTP/1.1\r\nHost: coupler\r\nContent-Type: application/json\r\n"
                       "Transfer-Encoding: chunked\r\n";
    if (with_token) head += "Authorization: Bearer " + token_ + "\r\n";
    if (!conn.Send(head + "\r\n")) return std::string("closed at the head");
    size_t sent = 0;
    while (sent < kTotal) {
      pollfd p{conn.fd(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) break;  // an answer (or a close) came
      if (!conn.Send(chunk)) break;
      sent += kChunk;
    }
    if (sent >= kTotal) conn.Send("0\r\n\r\n");
    std::string reply = conn.ReadAll(std::chrono::milliseconds(30'000));
    return reply.empty() ? "closed after " + std::to_string(sent >> 20) + " MiB" : reply;
  };
  const std::string anonymous = send_chunked(false);
  EXPECT_EQ(StatusOf(anonymous), 401) << anonymous.substr(0, 300);
  const std::string reply = send_chunked(true);
  // 413, or closed after the cap: either way never read whole.
  if (StatusOf(reply) != 0) {
    EXPECT_EQ(StatusOf(reply), 413) << reply.substr(0, 300);
  } else {
    EXPECT_NE(reply.find("closed"), std::string::npos) << reply;
  }
  ASSERT_TRUE(c().coordinator().running()) << c().Logs();
  const uint64_t peak = PeakRss(pid);
  EXPECT_LE(peak, baseline + kBodyCap + (64u << 20))
      << "baseline " << (baseline >> 20) << " MiB, peak " << (peak >> 20) << " MiB";
  EXPECT_EQ(Healthz(), 200);
}

}  // namespace
}  // namespace coupler::itest
