#include "runtime/net/zmq_socket.h"

#include <gtest/gtest.h>

namespace coupler::net {
namespace {

using namespace std::chrono_literals;

TEST(ZmqSocketTest, NothingWaitingIsNoMessageNotAnError) {
  zmq::context_t ctx(1);
  Result<zmq::socket_t> router = BindRouter(ctx, "tcp://127.0.0.1:*");
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  Result<zmq::socket_t> dealer = ConnectDealer(ctx, LastEndpoint(*router));
  ASSERT_TRUE(dealer.ok()) << dealer.status().ToString();

  auto routed = TryRecvRouted(*router);
  ASSERT_TRUE(routed.ok()) << routed.status().ToString();
  EXPECT_FALSE(routed->has_value());
  auto reply = RecvFor(*dealer, 20ms);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_FALSE(reply->has_value());
}

TEST(ZmqSocketTest, ReceivesWhatWasSent) {
  zmq::context_t ctx(1);
  Result<zmq::socket_t> router = BindRouter(ctx, "tcp://127.0.0.1:*");
  ASSERT_TRUE(router.ok());
  Result<zmq::socket_t> dealer = ConnectDealer(ctx, LastEndpoint(*router));
  ASSERT_TRUE(dealer.ok());
  ASSERT_TRUE(Send(*dealer, "hello").ok());

  std::optional<RoutedMessage> got;
  for (int i = 0; i < 200 && !got; ++i) {
    PollReadable({&*router}, 10ms);
    auto m = TryRecvRouted(*router);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    got = std::move(*m);
  }
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->payload, "hello");
  EXPECT_EQ(got->frames, 2u);
  ASSERT_TRUE(SendRouted(*router, got->identity, "world").ok());
  auto reply = RecvFor(*dealer, 2000ms);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ(**reply, "world");
}

TEST(ZmqSocketTest, ReceiveAfterContextShutdownSaysSo) {
  zmq::context_t ctx(1);
  Result<zmq::socket_t> router = BindRouter(ctx, "tcp://127.0.0.1:*");
  ASSERT_TRUE(router.ok());
  Result<zmq::socket_t> dealer = ConnectDealer(ctx, LastEndpoint(*router));
  ASSERT_TRUE(dealer.ok());
  ctx.shutdown();

  auto routed = TryRecvRouted(*router);
  ASSERT_FALSE(routed.ok());
  EXPECT_TRUE(IsContextShutDown(routed.status())) << routed.status().ToString();
  auto plain = TryRecv(*dealer);
  ASSERT_FALSE(plain.ok());
  EXPECT_TRUE(IsContextShutDown(plain.status())) << plain.status().ToString();
  auto waited = RecvFor(*dealer, 20ms);
  ASSERT_FALSE(waited.ok());
  EXPECT_TRUE(IsContextShutDown(waited.status()));
}

TEST(ZmqSocketTest, ReceiveOnAClosedSocketIsAnError) {
  zmq::context_t ctx(1);
  Result<zmq::socket_t> dealer = ConnectDealer(ctx, "tcp://127.0.0.1:1");
  ASSERT_TRUE(dealer.ok());
  dealer->close();

  auto plain = TryRecv(*dealer);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(IsContextShutDown(plain.status()));
  // Not passed off as a timeout.
  auto waited = RecvFor(*dealer, 20ms);
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coupler::net
