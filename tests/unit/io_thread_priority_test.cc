// net::LowerIoThreadPriority: the I/O thread a socket's affinity picks is found by the name
// ZeroMQ gives it and runs at a higher nice value; the context's other I/O thread, and another
// context's threads of the same index, keep theirs.
#include "runtime/net/io_thread_priority.h"

#include <gtest/gtest.h>

#include <zmq.hpp>

#include "runtime/net/zmq_socket.h"

namespace coupler::net {
namespace {

TEST(IoThreadPriorityTest, OnlyTheNamedContextsChosenThreadYields) {
  zmq::context_t ctx(2);
  ctx.set(zmq::ctxopt::thread_name_prefix, 321);
  zmq::context_t other(2);
  other.set(zmq::ctxopt::thread_name_prefix, 322);
  // The threads start with each context's first socket.
  auto a = BindRouter(ctx, "tcp://127.0.0.1:*", {}, 0, 2u);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = BindRouter(other, "tcp://127.0.0.1:*", {}, 0, 2u);
  ASSERT_TRUE(b.ok()) << b.status().ToString();

  ASSERT_TRUE(LowerIoThreadPriority(321, 1, 10).ok());
  Result<int> lowered = IoThreadNice(321, 1);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  Result<int> kept = IoThreadNice(321, 0);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  Result<int> elsewhere = IoThreadNice(322, 1);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status().ToString();
  EXPECT_EQ(*lowered, std::min(*kept + 10, 19));
  EXPECT_EQ(*elsewhere, *kept);

  // Capped at 19, the lowest priority there is.
  ASSERT_TRUE(LowerIoThreadPriority(321, 1, 30).ok());
  EXPECT_EQ(*IoThreadNice(321, 1), 19);
}

TEST(IoThreadPriorityTest, AThreadThatIsNotThereIsNamedInTheError) {
  const Status s = LowerIoThreadPriority(999, 7, 10, std::chrono::milliseconds(20));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("999/ZMQbg/IO/7"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace coupler::net
