// GPU health in placement, against a real coordinator and the real CLI with keys on. The
// worker is played on the wire with the worker key (this machine has no GPU and no driver:
// what a worker samples through NVML is tested against the stand-in library, GpuMonitorTest):
// its heartbeat reports an XID on GPU 1, and the coordinator fences that GPU (listed with why,
// told to the worker in its heartbeats), keeps the fence through kill -9 and a restart, and
// lifts it only for an admin's `coupler worker clear-gpu`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <zmq.hpp>

#include "runtime/net/curve_keys.h"
#include "runtime/net/zmq_socket.h"
#include "runtime/wire/codec.h"
#include "runtime/wire/messages.h"
#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A worker with two GPUs, spoken on the wire.
class WireWorker {
 public:
  WireWorker(zmq::context_t& ctx, Cluster& cluster) {
    Result<net::PeerKeys> keys =
        net::LoadPeerKeys((cluster.keys() / "local-worker").string(), net::KeyRole::kWorker);
    EXPECT_TRUE(keys.ok()) << keys.status().ToString();
    Result<zmq::socket_t> s = net::ConnectDealer(ctx, cluster.endpoint(), keys.ok() ? &*keys : nullptr);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) socket_ = std::move(*s);
  }

  void Send(const std::string& bytes) {
    ASSERT_TRUE(socket_.send(zmq::buffer(bytes), zmq::send_flags::none));
  }

  void Register() {
    wire::RegisterWorker reg;
    reg.worker_id = "g1";
    reg.host = "gpu-7";
    reg.slots = 1;
    reg.protocol_version = wire::kProtocolVersion;
    reg.gpus = {{0, "NVIDIA H100", 80ull << 30, 80ull << 30, "GPU-3b000000"},
                {1, "NVIDIA H100", 80ull << 30, 80ull << 30, "GPU-86000000"}};
    Send(wire::Encode(reg));
  }

  // `xids`: GPU 1's count of XID events that point at the GPU; the last one was 79.
  void Beat(uint64_t xids) {
    wire::Heartbeat beat;
    beat.sender_id = "g1";
    beat.sequence = ++sequence_;
    beat.gpu_sampling = "nvml";
    for (uint32_t i = 0; i < 2; ++i) {
      wire::GpuUsage g{i, 30, 1ull << 30, 80ull << 30};
      g.readings = wire::kGpuTemperature | wire::kGpuXid;
      g.temperature_c = 61;
      if (i == 1) {
        g.xid_errors = xids;
        g.last_xid = xids > 0 ? 79 : 0;
      }
      beat.gpus.push_back(g);
    }
    Send(wire::Encode(beat));
  }

  // The GPUs the coordinator's next heartbeat says are fenced; nullopt when none came in time.
  // Answers RegisterAgain by registering (a restarted coordinator does not know this link).
  std::optional<std::vector<uint32_t>> NextFences(std::chrono::seconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      zmq::message_t m;
      if (!socket_.recv(m, zmq::recv_flags::none)) continue;
      Result<wire::Message> msg = wire::Decode(m.to_string_view());
      if (!msg.ok()) continue;
      if (std::holds_alternative<wire::RegisterAgain>(*msg)) Register();
      if (const auto* beat = std::get_if<wire::Heartbeat>(&*msg)) return beat->fenced_gpus;
    }
    return std::nullopt;
  }

 private:
  zmq::socket_t socket_;
  uint64_t sequence_ = 0;
};

TEST(GpuFenceTest, AnXidFencesItsGpuAcrossAKillDashNineUntilAnAdminClearsIt) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  zmq::context_t ctx(1);
  WireWorker worker(ctx, cluster);
  worker.Register();
  ASSERT_TRUE(WaitUntil([&] { return cluster.Workers()["g1"].first == "alive"; }, 30s, 50ms))
      << cluster.Logs();
  worker.Beat(0);
  worker.Beat(1);  // GPU 1: XID 79

  std::string json;
  ASSERT_TRUE(WaitUntil([&] {
    json = cluster.Cli({"workers", "--json"}).out;
    return json.find("\"gpu_fences\":[{") != std::string::npos;
  }, 30s, 100ms)) << json << cluster.Logs();
  EXPECT_THAT(json, HasSubstr("\"gpu_fences\":[{\"index\":1,\"reason\":\"XID 79 (GPU has fallen off the bus)\""));
  EXPECT_THAT(json, HasSubstr("\"uuid\":\"GPU-86000000\""));
  EXPECT_THAT(json, HasSubstr("\"xid_errors\":1,\"last_xid\":79"));
  EXPECT_THAT(json, Not(HasSubstr("ecc_uncorrected"))) << "a reading not given shows as absent";
  const CommandResult text = cluster.Cli({"workers"});
  EXPECT_THAT(text.out, HasSubstr("gpu 1: fenced since "));
  EXPECT_THAT(text.out, HasSubstr("61 C, 1 XID error (last XID 79 (GPU has fallen off the bus))"));
  EXPECT_THAT(cluster.coordinator().err(), HasSubstr("coupler worker clear-gpu g1"));
  // `coupler status` says so too, with the way out.
  EXPECT_THAT(cluster.Cli({"status"}).out,
              HasSubstr("worker g1 GPU 1 is fenced (XID 79 (GPU has fallen off the bus)): no work "
                        "goes to it until `coupler worker clear-gpu g1 --gpu 1`"));
  std::optional<std::vector<uint32_t>> told;
  ASSERT_TRUE(WaitUntil([&] { told = worker.NextFences(); return told && !told->empty(); }, 30s, 10ms));
  EXPECT_EQ(*told, std::vector<uint32_t>{1});

  // The fence is in the state: kill -9, a restart, and the worker's registration again (it
  // reports the same count, which is not a new error): still fenced, and still told so.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  worker.Beat(1);
  ASSERT_TRUE(WaitUntil([&] { told = worker.NextFences(); return told.has_value(); }, 60s, 10ms))
      << cluster.Logs();
  worker.Beat(1);
  ASSERT_TRUE(WaitUntil([&] {
    return cluster.Cli({"workers", "--json"}).out.find("\"gpu_fences\":[{\"index\":1") != std::string::npos;
  }, 30s, 100ms)) << cluster.Logs();
  told = worker.NextFences();
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(*told, std::vector<uint32_t>{1});

  // Only an admin clears it; a GPU the worker lacks is refused with the ones it has.
  const fs::path plain = KeygenAndAuthorize(cluster, "plain", "client", {"clients"});
  CommandResult refused = cluster.Cli({"worker", "clear-gpu", "g1", "--keys", plain.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("admin"));
  CommandResult unknown = cluster.Cli({"worker", "clear-gpu", "g1", "--gpu", "7"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("has no GPU 7 (its GPUs: 0, 1)"));
  CommandResult cleared = cluster.Cli({"worker", "clear-gpu", "g1", "--gpu", "1"});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_THAT(cleared.out, HasSubstr("cleared GPU(s) of g1"));
  EXPECT_EQ(cluster.Cli({"worker", "clear-gpu", "g1"}).exit_code, 2) << "nothing left to clear";
  EXPECT_THAT(cluster.Cli({"workers", "--json"}).out, HasSubstr("\"gpu_fences\":[]"));
  ASSERT_TRUE(WaitUntil([&] { told = worker.NextFences(); return told && told->empty(); }, 30s, 10ms));

  // An admin fences by hand, with a reason, and it shows.
  CommandResult fenced = cluster.Cli({"worker", "fence-gpu", "g1", "--gpu", "0", "--reason", "fan noise"});
  ASSERT_EQ(fenced.exit_code, 0) << fenced.err;
  EXPECT_THAT(cluster.Cli({"workers"}).out, HasSubstr("by admin '"));
  EXPECT_THAT(cluster.Cli({"workers"}).out, HasSubstr("': fan noise"));
}

}  // namespace
}  // namespace coupler::itest
