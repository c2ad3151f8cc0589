// Workers are told apart by the address they advertise, not their hostname: by default the
// local address of their connection to the coordinator, or --advertise. `coupler workers` shows
// it, and an address that could not go into a hostfile is refused at start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(AdvertiseTest, WorkersShowTheAddressTheyAdvertiseAndABadOneIsRefused) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("plain", 1);
  cluster.StartWorker("told", 1, {"--advertise", "10.9.8.7"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  CommandResult r = cluster.Cli({"workers", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(r.out.c_str()).HasParseError()) << r.out;
  std::map<std::string, std::string> address;
  for (const auto& w : d.GetArray()) address[Str(w, "id")] = Str(w, "address");
  EXPECT_EQ(address["plain"], "127.0.0.1");  // it reaches the coordinator over loopback
  EXPECT_EQ(address["told"], "10.9.8.7");
  CommandResult text = cluster.Cli({"workers"});
  EXPECT_THAT(text.out, ::testing::HasSubstr("ADDRESS"));
  EXPECT_THAT(text.out, ::testing::HasSubstr("10.9.8.7"));

  Process& bad = cluster.StartWorker("bad", 1, {"--advertise", "10.0.0.1 --oops"});
  const std::optional<int> code = bad.WaitExit(60s);
  ASSERT_TRUE(code.has_value()) << cluster.Logs();
  EXPECT_EQ(*code, 2);
  EXPECT_THAT(bad.err(), ::testing::HasSubstr("--advertise '10.0.0.1 --oops': expected an IP address"));
}

}  // namespace
}  // namespace coupler::itest
