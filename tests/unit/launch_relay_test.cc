// The gang launch relay: only the leader of a live attempt, with that attempt's secret, may
// start a daemon, and only on a host reserved for the gang; output goes back to the agent that
// asked; an ended attempt stops its daemons and tells its agents, and so does a member the
// scheduler dropped (declared dead) from a running attempt, for its own daemon only.
#include <gtest/gtest.h>

#include "coordinator/launch_relay.h"

namespace coupler::coordinator {
namespace {

LaunchRelay::LiveGang Gang(uint32_t attempt) {
  return {attempt, "lead", {{"lead", "10.0.0.1"}, {"m1", "10.0.0.2"}, {"m2", "10.0.0.3"}}};
}

wire::LaunchRequest Request(const std::string& token, const std::string& host, uint32_t attempt = 0) {
  return {{"j-1", 4, attempt}, token, host, " orted -mca ess \"env\""};
}

TEST(LaunchRelayTest, AdmitsTheLeadersLaunchOnAReservedHostAndRelaysTheOutputBack) {
  LaunchRelay relay;
  EXPECT_TRUE(relay.idle());
  const std::string token = relay.IssueToken("j-1", 4, 0);
  EXPECT_FALSE(relay.idle());
  EXPECT_EQ(token.size(), 32u);
  Result<LaunchRelay::Admitted> a = relay.Admit(Request(token, "10.0.0.3"), "agent-route", "k-lead",
                                                "k-lead", Gang(0));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->worker_id, "m2");
  EXPECT_EQ(a->daemon.command, " orted -mca ess \"env\"");
  EXPECT_EQ(a->daemon.gang.attempt, 0u);

  // Output only from the worker running it; the exit ends the relay.
  wire::LaunchOutput out{a->daemon.launch_id, 1, "hi", false, 0};
  EXPECT_FALSE(relay.Relay(out, "m1").has_value());
  EXPECT_EQ(relay.Relay(out, "m2"), "agent-route");
  out.exited = true;
  EXPECT_EQ(relay.Relay(out, "m2"), "agent-route");
  EXPECT_FALSE(relay.Relay(out, "m2").has_value());
  EXPECT_EQ(relay.active(), 0u);
}

TEST(LaunchRelayTest, RefusesAWrongSecretAnotherKeyAnUnreservedHostAndAStaleAttempt) {
  LaunchRelay relay;
  const std::string token = relay.IssueToken("j-1", 4, 1);
  auto admit = [&](const wire::LaunchRequest& r, const std::string& key,
                   std::optional<LaunchRelay::LiveGang> gang) {
    return relay.Admit(r, "route", key, "k-lead", gang);
  };
  // One digit off (whatever the random token's first digit is).
  const std::string off_by_one = (token[0] == '0' ? "1" : "0") + token.substr(1);
  EXPECT_EQ(admit(Request(off_by_one, "10.0.0.2", 1), "k-lead", Gang(1)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(admit(Request("", "10.0.0.2", 1), "k-lead", Gang(1)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(admit(Request(token, "10.0.0.2", 1), "k-other", Gang(1)).status().code(),
            StatusCode::kPermissionDenied);
  // Not reserved for the gang, or the leader's own host (mpirun starts ranks there itself).
  EXPECT_EQ(admit(Request(token, "10.0.0.9", 1), "k-lead", Gang(1)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(admit(Request(token, "10.0.0.1", 1), "k-lead", Gang(1)).status().code(),
            StatusCode::kPermissionDenied);
  // An attempt that is not the running one, or no gang running at all.
  EXPECT_EQ(admit(Request(token, "10.0.0.2", 0), "k-lead", Gang(1)).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(admit(Request(token, "10.0.0.2", 1), "k-lead", std::nullopt).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(relay.active(), 0u);
  EXPECT_TRUE(admit(Request(token, "10.0.0.2", 1), "k-lead", Gang(1)).ok());
}

TEST(LaunchRelayTest, AnEndedAttemptStopsItsDaemonsAndTellsItsAgents) {
  LaunchRelay relay;
  const std::string token = relay.IssueToken("j-1", 4, 0);
  ASSERT_TRUE(relay.Admit(Request(token, "10.0.0.2"), "agent-a", "k", "k", Gang(0)).ok());
  ASSERT_TRUE(relay.Admit(Request(token, "10.0.0.3"), "agent-b", "k", "k", Gang(0)).ok());
  // Still running: nothing ends.
  auto running = [](const std::string&, uint64_t) { return std::optional(Gang(0)); };
  EXPECT_TRUE(relay.Sweep(running).stops.empty());
  // The attempt is over (its retry runs as attempt 1).
  auto retried = [](const std::string&, uint64_t) { return std::optional(Gang(1)); };
  LaunchRelay::Ended ended = relay.Sweep(retried);
  ASSERT_EQ(ended.stops.size(), 2u);
  EXPECT_EQ(ended.stops[0].second.gang.attempt, 0u);
  ASSERT_EQ(ended.agents.size(), 2u);
  EXPECT_TRUE(ended.agents[0].second.exited);
  EXPECT_EQ(ended.agents[0].second.exit_code, 255);
  EXPECT_EQ(relay.active(), 0u);
  // Its secret is gone with it.
  EXPECT_FALSE(relay.Admit(Request(token, "10.0.0.2"), "agent-a", "k", "k", Gang(0)).ok());
}

TEST(LaunchRelayTest, AMemberDeclaredDeadEndsItsAgentAtOnceAndTheOthersRunOn) {
  LaunchRelay relay;
  const std::string token = relay.IssueToken("j-1", 4, 0);
  ASSERT_TRUE(relay.Admit(Request(token, "10.0.0.2"), "agent-a", "k", "k", Gang(0)).ok());
  ASSERT_TRUE(relay.Admit(Request(token, "10.0.0.3"), "agent-b", "k", "k", Gang(0)).ok());
  // m1 was declared dead: the scheduler's running attempt no longer lists it.
  auto without_m1 = [](const std::string&, uint64_t) {
    LaunchRelay::LiveGang g = Gang(0);
    g.members.erase(g.members.begin() + 1);
    return std::optional(g);
  };
  LaunchRelay::Ended ended = relay.Sweep(without_m1);
  ASSERT_EQ(ended.agents.size(), 1u);
  EXPECT_EQ(ended.agents[0].first, "agent-a");
  EXPECT_TRUE(ended.agents[0].second.exited);
  EXPECT_EQ(ended.agents[0].second.exit_code, 255);
  EXPECT_NE(ended.agents[0].second.data.find("lost 10.0.0.2: its worker m1 was declared dead"),
            std::string::npos)
      << ended.agents[0].second.data;
  ASSERT_EQ(ended.stops.size(), 1u);
  EXPECT_EQ(ended.stops[0].first, "m1");
  EXPECT_EQ(relay.active(), 1u);
  // Told once; m2's daemon runs on with the attempt.
  EXPECT_TRUE(relay.Sweep(without_m1).agents.empty());
  EXPECT_EQ(relay.active(), 1u);
}

}  // namespace
}  // namespace coupler::coordinator
