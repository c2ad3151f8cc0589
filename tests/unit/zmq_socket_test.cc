#include "runtime/net/zmq_socket.h"

#include <gtest/gtest.h>

namespace coupler::net {
namespace {

using namespace std::chrono_literals;

// A ROUTER on a loopback port and a DEALER connected to it, in one context.
class ZmqSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<zmq::socket_t> r = BindRouter(ctx_, "tcp://127.0.0.1:*");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    router_ = std::move(*r);
    Result<zmq::socket_t> d = ConnectDealer(ctx_, LastEndpoint(router_));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dealer_ = std::move(*d);
  }

  zmq::context_t ctx_{1};
  zmq::socket_t router_;
  zmq::socket_t dealer_;
};

TEST_F(ZmqSocketTest, NothingWaitingIsNoMessageNotAnError) {
  auto routed = TryRecvRouted(router_);
  ASSERT_TRUE(routed.ok()) << routed.status().ToString();
  EXPECT_FALSE(routed->has_value());
  auto reply = RecvFor(dealer_, 20ms);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_FALSE(reply->has_value());
}

TEST_F(ZmqSocketTest, ReceivesWhatWasSent) {
  ASSERT_TRUE(Send(dealer_, "hello").ok());

  std::optional<RoutedMessage> got;
  for (int i = 0; i < 200 && !got; ++i) {
    PollReadable({&router_}, 10ms);
    auto m = TryRecvRouted(router_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    got = std::move(*m);
  }
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->payload, "hello");
  EXPECT_EQ(got->frames, 2u);
  ASSERT_TRUE(SendRouted(router_, got->identity, "world").ok());
  auto reply = RecvFor(dealer_, 2000ms);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ(**reply, "world");
}

TEST_F(ZmqSocketTest, ReceiveAfterContextShutdownSaysSo) {
  ctx_.shutdown();

  auto routed = TryRecvRouted(router_);
  ASSERT_FALSE(routed.ok());
  EXPECT_TRUE(IsContextShutDown(routed.status())) << routed.status().ToString();
  auto plain = TryRecv(dealer_);
  ASSERT_FALSE(plain.ok());
  EXPECT_TRUE(IsContextShutDown(plain.status())) << plain.status().ToString();
  auto waited = RecvFor(dealer_, 20ms);
  ASSERT_FALSE(waited.ok());
  EXPECT_TRUE(IsContextShutDown(waited.status()));
}

TEST_F(ZmqSocketTest, ReceiveOnAClosedSocketIsAnError) {
  dealer_.close();

  auto plain = TryRecv(dealer_);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(IsContextShutDown(plain.status()));
  // Not passed off as a timeout.
  auto waited = RecvFor(dealer_, 20ms);
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coupler::net
