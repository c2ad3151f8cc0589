#include "runtime/net/endpoint.h"

#include <gtest/gtest.h>

namespace coupler::net {
namespace {

TEST(EndpointTest, OnlyLoopbackAddressesAreLoopback) {
  for (const char* ep : {"tcp://127.0.0.1:7100", "tcp://127.3.4.5:1", "tcp://localhost:7100",
                         "tcp://[::1]:7100", "ipc:///tmp/c", "inproc://x"}) {
    EXPECT_TRUE(IsLoopback(ep)) << ep;
  }
  // The substring test these replace took every one of these for loopback, or could be fooled.
  for (const char* ep : {"tcp://0.0.0.0:7100", "tcp://*:7100", "tcp://[::]:7100",
                         "tcp://10.0.0.1:7100", "tcp://127.0.0.1.nip.io:7100",
                         "tcp://lo:7100", "tcp://eth0:7100", "tcp://10.0.0.1;127.0.0.1:7100",
                         "tcp://localhost.example.com:1", "tcp://[::ffff:10.0.0.1]:1",
                         "tcp://127.0.0.1", "127.0.0.1:7100", "pgm://127.0.0.1:1", ""}) {
    EXPECT_FALSE(IsLoopback(ep)) << ep;
  }
}

TEST(EndpointTest, ParsesTcpHostAndPort) {
  auto e = ParseEndpoint("tcp://[::1]:7100");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, "7100");
  e = ParseEndpoint("tcp://127.0.0.1:*");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->port, "*");
  EXPECT_FALSE(ParseEndpoint("tcp://127.0.0.1:99999x"));
  e = ParseEndpoint("ipc:///run/c.clients");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, "/run/c.clients");
}

}  // namespace
}  // namespace coupler::net
