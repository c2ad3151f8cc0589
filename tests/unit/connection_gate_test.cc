// Which HTTP connections the coordinator keeps (coordinator/http/connection_gate.h): past a
// cap the oldest one waiting for a request makes room; one serving a request never does.
#include "coordinator/http/connection_gate.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace coupler::coordinator::http {
namespace {

// One end of a socket pair per connection: an evicted one is shut down, which the other end
// reads as the end of the stream.
class Sockets {
 public:
  ~Sockets() {
    for (int fd : fds_) ::close(fd);
  }
  int Add() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fds_.push_back(sv[0]);
    fds_.push_back(sv[1]);
    peers_.push_back(sv[1]);
    return sv[0];
  }
  // The client of connection i sends `text`.
  void Send(size_t i, const std::string& text) {
    EXPECT_EQ(::send(peers_[i], text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  }
  // The connection's socket was shut down by the gate.
  bool ShutDown(size_t i) const {
    pollfd p{peers_[i], POLLIN, 0};
    char c;
    return ::poll(&p, 1, 0) == 1 && ::recv(peers_[i], &c, 1, MSG_DONTWAIT) == 0;
  }

 private:
  std::vector<int> fds_;
  std::vector<int> peers_;
};

TEST(ConnectionGateTest, APeerOverItsCapClosesItsOldestWaitingConnection) {
  ConnectionGate gate(10, 2);
  Sockets s;
  std::vector<ConnectionGate::Ticket> held;
  held.push_back(*gate.Admit("10.0.0.1", s.Add()));
  held.push_back(*gate.Admit("10.0.0.1", s.Add()));
  held[0].SetWaiting(false);  // serving a request: stays
  ASSERT_TRUE(gate.Admit("10.0.0.1", s.Add()).has_value());
  EXPECT_FALSE(s.ShutDown(0));
  EXPECT_TRUE(s.ShutDown(1));
  EXPECT_EQ(gate.counts().evicted, 1u);
  // Another address has its own places.
  EXPECT_TRUE(gate.Admit("10.0.0.2", s.Add()).has_value());
  EXPECT_EQ(gate.counts().refused, 0u);
}

// Threads admit their connections in whatever order they start: a probe admitted before the
// idle connections opened ahead of it must not be closed for them while its request waits,
// unread, in its socket.
TEST(ConnectionGateTest, AConnectionWhoseRequestHasArrivedIsNotClosedAsIdle) {
  ConnectionGate gate(100, 3);
  Sockets s;
  std::vector<ConnectionGate::Ticket> held;
  held.push_back(*gate.Admit("10.0.0.1", s.Add()));  // the probe: its request sent, not read yet
  s.Send(0, "GET /healthz HTTP/1.1\r\nHost: coupler\r\n\r\n");
  for (int i = 1; i <= 10; ++i) {
    std::optional<ConnectionGate::Ticket> t = gate.Admit("10.0.0.1", s.Add());
    ASSERT_TRUE(t.has_value()) << i;
    held.push_back(std::move(*t));
  }
  EXPECT_FALSE(s.ShutDown(0)) << "the probe was closed as if idle";
  EXPECT_TRUE(s.ShutDown(1));
  EXPECT_EQ(gate.counts().evicted, 8u);
}

// A thread that has read a request's first bytes and parses its header (the liveness probe in
// the middle of being served) is not closed for connections admitted after it, for the grace
// period; half a header held past it is closeable again.
TEST(ConnectionGateTest, AConnectionReadingItsHeaderIsNotClosedDuringTheGrace) {
  for (const bool grace_passed : {false, true}) {
    ConnectionGate gate(100, 2, grace_passed ? std::chrono::milliseconds(0)
                                             : std::chrono::milliseconds(60000));
    Sockets s;
    std::vector<ConnectionGate::Ticket> held;
    held.push_back(*gate.Admit("10.0.0.1", s.Add()));  // the probe, its bytes read
    held.back().SetReading();
    held.push_back(*gate.Admit("10.0.0.1", s.Add()));  // idle
    ASSERT_TRUE(gate.Admit("10.0.0.1", s.Add()).has_value());
    EXPECT_EQ(s.ShutDown(0), grace_passed) << "grace passed: " << grace_passed;
    EXPECT_EQ(s.ShutDown(1), !grace_passed) << "grace passed: " << grace_passed;
    // Serving, then waiting for its next request: idle again.
    held[0].SetWaiting(false);
    held[0].SetWaiting(true);
  }
}

TEST(ConnectionGateTest, OverTheTotalTheNewOneIsRefusedOnlyWhenAllAreServing) {
  ConnectionGate gate(2, 2);
  Sockets s;
  std::vector<ConnectionGate::Ticket> held;
  held.push_back(*gate.Admit("a", s.Add()));
  held.push_back(*gate.Admit("b", s.Add()));
  ASSERT_TRUE(gate.Admit("c", s.Add()).has_value());  // "a" waited longest: closed
  EXPECT_TRUE(s.ShutDown(0));
  held[1].SetWaiting(false);
  std::optional<ConnectionGate::Ticket> d = gate.Admit("d", s.Add());
  ASSERT_TRUE(d.has_value());  // the place "c" held, released when its ticket went
  d->SetWaiting(false);
  EXPECT_FALSE(gate.Admit("e", s.Add()).has_value());
  EXPECT_EQ(gate.counts().refused, 1u);
  EXPECT_EQ(gate.counts().open, 2u);
}

TEST(ConnectionGateTest, ShutdownAllClosesEveryConnectionAndAdmitsNoMore) {
  ConnectionGate gate(10, 10);
  Sockets s;
  std::optional<ConnectionGate::Ticket> t = gate.Admit("a", s.Add());
  ASSERT_TRUE(t.has_value());
  t->SetWaiting(false);
  gate.ShutdownAll();
  EXPECT_TRUE(s.ShutDown(0));
  EXPECT_FALSE(gate.Admit("a", s.Add()).has_value());
}

}  // namespace
}  // namespace coupler::coordinator::http
