// Garbage on the wire: random bytes, a wrong protocol version, an oversize message and
// truncated envelopes sent from raw ZeroMQ DEALER sockets to both coordinator ports. The
// coordinator drops and counts each one, and keeps serving workers and clients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include <zmq.hpp>

#include "coordinator/coordinator.h"
#include "runtime/net/curve_keys.h"
#include "runtime/net/endpoint.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/envelope.h"
#include "runtime/wire/messages.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

// The malformed messages both ports get: each must be dropped (and counted) on its own.
std::vector<std::string> BadMessages(const std::string& valid) {
  std::vector<std::string> bad;

  std::mt19937 rng(1234);
  std::string random(300, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  random[0] = '\xff';  // never "CPLR" by chance
  bad.push_back(random);

  std::string wrong_version = valid;
  wrong_version[4] = static_cast<char>(wire::kProtocolVersion + 1);  // little-endian u16 at 4
  wrong_version[5] = 0;
  bad.push_back(wrong_version);

  // A well-formed header over the 64 MiB cap, with every byte it announces present.
  const size_t payload = (size_t{64} << 20) + 4096;
  std::string oversize(wire::kHeaderSize + payload, '\0');
  wire::Header h;
  h.type = wire::MessageType::kSubmitJob;
  h.payload_size = static_cast<uint32_t>(payload);
  wire::WriteHeader(h, oversize.data());
  bad.push_back(std::move(oversize));

  bad.push_back(valid.substr(0, valid.size() - 2));  // payload cut short
  bad.push_back(valid.substr(0, 7));                 // header cut short
  return bad;
}

// An authenticated peer (the local worker or client key): garbage must be survived from those
// too, and an unauthenticated one does not get a message through at all.
zmq::socket_t Dealer(zmq::context_t& ctx, const std::string& endpoint, const fs::path& key_dir,
                     net::KeyRole role) {
  Result<net::PeerKeys> keys = net::LoadPeerKeys(key_dir.string(), role);
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  Result<zmq::socket_t> s = net::ConnectDealer(ctx, endpoint, keys.ok() ? &*keys : nullptr);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : zmq::socket_t();
}

TEST(MalformedMessagesTest, CoordinatorDropsAndCountsGarbageAndKeepsServing) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const auto before = cluster.Coordinator();
  ASSERT_TRUE(before) << cluster.Logs();

  zmq::context_t ctx(1);
  zmq::socket_t to_workers_port = Dealer(ctx, cluster.endpoint(),
                                         cluster.keys() / "local-worker", net::KeyRole::kWorker);
  zmq::socket_t to_clients_port = Dealer(ctx, net::ClientEndpointFor(cluster.endpoint()),
                                         cluster.keys() / "local-client", net::KeyRole::kClient);

  wire::Heartbeat beat;
  beat.sender_id = "intruder";
  const std::string valid_worker_msg = wire::Encode(beat);
  wire::StatusRequest status_request;
  status_request.job_id = "j-000001";
  const std::string valid_client_msg = wire::Encode(status_request);
  ASSERT_TRUE(wire::Decode(valid_worker_msg).ok());
  ASSERT_TRUE(wire::Decode(valid_client_msg).ok());

  uint64_t sent = 0;
  for (const std::string& m : BadMessages(valid_worker_msg)) {
    ASSERT_TRUE(to_workers_port.send(zmq::buffer(m), zmq::send_flags::none));
    ++sent;
  }
  for (const std::string& m : BadMessages(valid_client_msg)) {
    ASSERT_TRUE(to_clients_port.send(zmq::buffer(m), zmq::send_flags::none));
    ++sent;
  }
  // A worker message must be exactly one frame after the identity.
  ASSERT_TRUE(to_workers_port.send(zmq::buffer(valid_worker_msg), zmq::send_flags::sndmore));
  ASSERT_TRUE(to_workers_port.send(zmq::buffer(valid_worker_msg), zmq::send_flags::none));
  ++sent;

  // Every one is counted as dropped, and status keeps answering meanwhile.
  std::optional<CoordinatorView> after;
  const bool counted = WaitUntil(
      [&] {
        after = cluster.Coordinator();
        return after && after->messages_dropped >= before->messages_dropped + sent;
      },
      60s, 100ms);
  ASSERT_TRUE(after) << "status stopped answering\n" << cluster.Logs();
  EXPECT_TRUE(counted) << "dropped " << after->messages_dropped - before->messages_dropped
                       << " of the " << sent << " bad messages";
  EXPECT_GT(after->messages_received, before->messages_received + sent);
  EXPECT_TRUE(cluster.coordinator().running()) << cluster.Logs();
  // Each bad request on the client port was answered with an Error naming the problem, so a
  // client is never left thinking no coordinator is there.
  size_t errors = 0;
  const size_t client_bad = BadMessages(valid_client_msg).size();
  WaitUntil(
      [&] {
        zmq::message_t m;
        while (to_clients_port.recv(m, zmq::recv_flags::dontwait)) {
          Result<wire::Message> reply = wire::Decode(m.to_string());
          if (reply.ok() && std::holds_alternative<wire::Error>(*reply)) ++errors;
        }
        return errors >= client_bad;
      },
      30s, 50ms);
  EXPECT_EQ(errors, client_bad);

  // Still serving: a job submitted now completes on the worker that was there all along.
  const fs::path spec = cluster.dir() / "after.yaml";
  WriteFile(spec, "name: it-after-garbage\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: n\n"
                  "    op: noop\n"
                  "    params: {tasks: 4, sleep_ms: 50}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->done, 4u);
  EXPECT_EQ(cluster.Workers()["w1"].first, "alive");
}

}  // namespace
}  // namespace coupler::itest

namespace coupler::itest {
namespace {

uint64_t RssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

// A client that sends status requests and never reads the replies: they are dropped past a
// small per-client queue and counted, instead of piling up in the coordinator's memory.
TEST(MalformedMessagesTest, RepliesToAClientThatNeverReadsAreBoundedAndCounted) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // Some jobs, so each status reply has some weight.
  for (int i = 0; i < 20; ++i) {
    const fs::path spec = cluster.dir() / ("j" + std::to_string(i) + ".yaml");
    WriteFile(spec, "name: j" + std::to_string(i) + "\nworkdir: work\nnodes:\n"
                    "  - {id: a, op: noop, params: {tasks: 2}}\n  - {id: b, op: noop, inputs: [a]}\n");
    ASSERT_FALSE(cluster.Submit(spec).empty()) << cluster.Logs();
  }
  const uint64_t rss_before = RssKb(cluster.coordinator().pid());
  zmq::context_t ctx(1);
  zmq::socket_t flood = Dealer(ctx, net::ClientEndpointFor(cluster.endpoint()),
                               cluster.keys() / "local-client", net::KeyRole::kClient);
  flood.set(zmq::sockopt::rcvhwm, 1);  // reads nothing, holds almost nothing
  const std::string request = wire::Encode(wire::StatusRequest{});
  constexpr int kRequests = 30'000;
  int sent = 0;
  for (; sent < kRequests; ++sent) {
    if (!flood.send(zmq::buffer(request), zmq::send_flags::dontwait)) {
      std::this_thread::sleep_for(1ms);  // the coordinator's inbound queue is full for now
      --sent;
    }
  }
  std::optional<CoordinatorView> c;
  ASSERT_TRUE(WaitUntil(
      [&] {
        c = cluster.Coordinator();
        return c && c->messages_received >= static_cast<uint64_t>(kRequests);
      },
      120s, 200ms))
      << cluster.Logs();
  EXPECT_GT(c->replies_dropped, 0u);
  const uint64_t rss_after = RssKb(cluster.coordinator().pid());
  // Kept, the 30,000 replies would be hundreds of MiB.
  EXPECT_LT(rss_after, rss_before + 64 * 1024) << rss_before << " kB before, " << rss_after << " kB after";
}

}  // namespace
}  // namespace coupler::itest
