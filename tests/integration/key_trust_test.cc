// Identity and trust decided by keys, against real processes with keys from `coupler keygen`:
// the HTTP API's identity is no key name, a key file replaced in place (clients/, admins/)
// counts within a second, a live connection of a key that left its list is refused, names in
// allow-lists are plain and unique, and a flood of refused handshakes is a few log lines.
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zmq.hpp>

#include "client/client.h"
#include "runtime/net/curve_keys.h"
#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

fs::path AllowList(Cluster& cluster, const std::string& list) {
  return cluster.keys() / "authorized" / list;
}

// Copies `from` over `to` in place, as `cp` does: the same inode, truncated and rewritten, so
// the folder itself does not change.
void OverwriteInPlace(const fs::path& from, const fs::path& to) {
  const std::string text = ReadFile(from);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string ClientEndpoint(Cluster& cluster) {
  const std::string ready = ReadFile(cluster.dir() / "ready");
  const size_t at = ready.find("clients=");
  if (at == std::string::npos) return "";
  return ready.substr(at + 8, ready.find('\n', at) - at - 8);
}

TEST(KeyTrustTest, AKeyNamedHttpApiHasAPlainClientsRights) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const std::string mine = cluster.Submit(WriteNoopSpec(cluster, "local-job", 200, 100));
  ASSERT_FALSE(mine.empty()) << cluster.Logs();
  // The name the HTTP API's requests once acted under, claimed by a key file.
  const fs::path claimer = Keygen(cluster, "keys-claimer", "http-api", "client");
  fs::copy_file(claimer / "http-api.pub", AllowList(cluster, "clients") / "http-api.pub");

  CommandResult cancel = cluster.Cli({"cancel", mine, "--keys", claimer.string()});
  EXPECT_EQ(cancel.exit_code, 1) << cancel.out;
  EXPECT_THAT(cancel.err, HasSubstr("only its submitter or an admin"));
  CommandResult drain = cluster.Cli({"drain", "w1", "--keys", claimer.string()});
  EXPECT_EQ(drain.exit_code, 1) << drain.out;
  EXPECT_THAT(drain.err, HasSubstr("admin"));
  const auto st = cluster.Job(mine);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "running");
  EXPECT_EQ(cluster.Workers()["w1"].first, "alive");

  // A plain client nonetheless: it submits, and cancels its own job.
  CommandResult submit = cluster.Cli({"submit", WriteNoopSpec(cluster, "its-own", 5, 1000).string(),
                                      "--keys", claimer.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  std::string own = submit.out;
  own.erase(own.find_last_not_of(" \n") + 1);
  ASSERT_TRUE(cluster.Job(own)) << cluster.Logs();
  EXPECT_EQ(cluster.Job(own)->submitted_by, "http-api");
  EXPECT_EQ(cluster.Cli({"cancel", own, "--keys", claimer.string()}).exit_code, 0);
}

TEST(KeyTrustTest, AClientKeyReplacedInPlaceCountsWithinOneSecond) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path old_key = Keygen(cluster, "keys-alice-old", "alice", "client");
  const fs::path new_key = Keygen(cluster, "keys-alice-new", "alice", "client");
  const fs::path listed = AllowList(cluster, "clients") / "alice.pub";
  fs::copy_file(old_key / "alice.pub", listed);
  CommandResult before = cluster.Cli({"status", "--keys", old_key.string()});
  ASSERT_EQ(before.exit_code, 0) << before.err << cluster.Logs();

  // The old key leaked: the operator copies the new one over it.
  OverwriteInPlace(new_key / "alice.pub", listed);
  const auto replaced = Clock::now();
  std::this_thread::sleep_until(replaced + 1s);
  CommandResult fresh = cluster.Cli({"status", "--keys", new_key.string()}, 30s);
  EXPECT_EQ(fresh.exit_code, 0) << "the new key is not admitted 1 s after the replacement: "
                                << fresh.err;
  CommandResult leaked = cluster.Cli({"status", "--keys", old_key.string()}, 30s);
  EXPECT_EQ(leaked.exit_code, 1) << "the replaced key is still admitted 1 s after: " << leaked.out;
  EXPECT_THAT(leaked.err, HasSubstr("refused this key"));
}

TEST(KeyTrustTest, AnAdminFileReplacedInPlaceTakesTheOldKeysRightsWithinOneSecond) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path carol = Keygen(cluster, "keys-carol", "carol", "client");
  const fs::path other = Keygen(cluster, "keys-carol-2", "carol", "client");
  fs::copy_file(carol / "carol.pub", AllowList(cluster, "clients") / "carol.pub");
  fs::copy_file(carol / "carol.pub", AllowList(cluster, "admins") / "carol.pub");
  const std::string first = cluster.Submit(WriteNoopSpec(cluster, "first", 200, 100));
  const std::string second = cluster.Submit(WriteNoopSpec(cluster, "second", 200, 100));
  ASSERT_FALSE(first.empty() || second.empty()) << cluster.Logs();
  // An admin: it cancels the local key's job.
  CommandResult as_admin = cluster.Cli({"cancel", first, "--keys", carol.string()});
  ASSERT_EQ(as_admin.exit_code, 0) << as_admin.err << cluster.Logs();

  // Carol's admin entry now names another key; carol's own key stays a client.
  OverwriteInPlace(other / "carol.pub", AllowList(cluster, "admins") / "carol.pub");
  const auto replaced = Clock::now();
  std::this_thread::sleep_until(replaced + 1s);
  CommandResult cancel = cluster.Cli({"cancel", second, "--keys", carol.string()});
  EXPECT_EQ(cancel.exit_code, 1) << "still an admin 1 s after its admin file was replaced";
  EXPECT_THAT(cancel.err, HasSubstr("only its submitter or an admin"));
  CommandResult drain = cluster.Cli({"drain", "w1", "--keys", carol.string()});
  EXPECT_EQ(drain.exit_code, 1) << drain.out;
  const auto st = cluster.Job(second);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "running");
  EXPECT_EQ(cluster.Workers()["w1"].first, "alive");
}

TEST(KeyTrustTest, ALiveClientConnectionOfARevokedKeyIsRefused) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path dave = Keygen(cluster, "keys-dave", "dave", "client");
  const fs::path listed = AllowList(cluster, "clients") / "dave.pub";
  fs::copy_file(dave / "dave.pub", listed);
  client::ClientSecurity sec;
  sec.keys_dir = dave.string();
  Result<std::unique_ptr<client::Client>> c =
      client::Client::Connect(ClientEndpoint(cluster), 10s, sec);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // One connection, kept: the handshake happens once, before revocation.
  ASSERT_TRUE((*c)->Status().ok()) << cluster.Logs();

  fs::remove(listed);
  Status last;
  EXPECT_TRUE(WaitUntil(
      [&] {
        last = (*c)->Status().status();
        return !last.ok();
      },
      10s, 100ms))
      << "a revoked key's open connection is still served";
  EXPECT_THAT(std::string(last.message()), HasSubstr("no longer authorized"));

  // Its name listed again with another key: the old connection still gets nothing.
  const fs::path other = Keygen(cluster, "keys-dave-2", "dave", "client");
  fs::copy_file(other / "dave.pub", listed);
  std::this_thread::sleep_for(1s);
  Status again = (*c)->Status().status();
  EXPECT_FALSE(again.ok());
  EXPECT_THAT(std::string(again.message()), HasSubstr("no longer authorized"));
  EXPECT_EQ(cluster.Cli({"status", "--keys", other.string()}).exit_code, 0);
}

TEST(KeyTrustTest, ALiveWorkerOfARevokedKeyIsDeclaredLost) {
  Cluster cluster;  // dead after 3 s of silence
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path wk = Keygen(cluster, "keys-node-1", "node-1", "worker");
  const fs::path listed = AllowList(cluster, "workers") / "node-1.pub";
  fs::copy_file(wk / "node-1.pub", listed);
  Process& worker = cluster.StartWorker("w1", 1, {"--keys", wk.string()});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const auto before = cluster.Coordinator();
  ASSERT_TRUE(before);

  fs::remove(listed);
  EXPECT_TRUE(WaitUntil([&] { return cluster.Workers()["w1"].first == "lost"; }, 20s, 200ms))
      << "a worker whose key was revoked is still alive\n" << cluster.Logs();
  EXPECT_TRUE(worker.running());  // its connection stayed open: only its messages were refused
  const auto after = cluster.Coordinator();
  ASSERT_TRUE(after);
  EXPECT_GT(after->messages_dropped, before->messages_dropped);
  // Nothing is sent to it any more.
  const std::string id = cluster.Submit(WriteNoopSpec(cluster, "after", 2, 0));
  ASSERT_FALSE(id.empty()) << cluster.Logs();
  std::this_thread::sleep_for(1s);
  const auto st = cluster.Job(id);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->done, 0u);
  EXPECT_EQ(st->running + st->prefetched, 0u);
}

TEST(KeyTrustTest, AllowListNamesArePlainAndUniqueOrRefusedWithAReason) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path odd = Keygen(cluster, "keys-odd", "odd", "client");
  fs::copy_file(odd / "odd.pub", AllowList(cluster, "clients") / "odd name;x.pub");
  const fs::path twice = Keygen(cluster, "keys-twice", "twice", "client");
  fs::copy_file(twice / "twice.pub", AllowList(cluster, "clients") / "twice.pub");
  fs::copy_file(twice / "twice.pub", AllowList(cluster, "clients") / "thrice.pub");

  CommandResult r = cluster.Cli({"status", "--keys", odd.string()}, 30s);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr("refused this key"));
  CommandResult dup = cluster.Cli({"status", "--keys", twice.string()}, 30s);
  EXPECT_EQ(dup.exit_code, 1) << dup.out;
  EXPECT_THAT(dup.err, HasSubstr("refused this key"));
  const std::string log = cluster.coordinator().err();
  EXPECT_THAT(log, HasSubstr("odd name;x.pub"));
  EXPECT_THAT(log, HasSubstr("letters, digits"));
  EXPECT_THAT(log, HasSubstr("thrice"));
  // The rest of the list is untouched.
  EXPECT_EQ(cluster.Cli({"status"}).exit_code, 0);
}

TEST(KeyTrustTest, ThousandsOfRefusedHandshakesAreAFewLogLinesAndAllCounted) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const std::string endpoint = ClientEndpoint(cluster);
  ASSERT_FALSE(endpoint.empty()) << ReadFile(cluster.dir() / "ready");
  Result<net::CurveKey> server = net::ReadKeyFile((cluster.keys() / "coordinator.pub").string());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto start = cluster.Coordinator();
  ASSERT_TRUE(start);
  const size_t lines_before = CountLines(cluster.coordinator().err());

  constexpr int kBatches = 10;
  constexpr int kPerBatch = 220;
  zmq::context_t ctx(1);
  uint64_t sent = 0;
  for (int b = 0; b < kBatches; ++b) {
    std::vector<zmq::socket_t> sockets;
    for (int i = 0; i < kPerBatch; ++i) {
      char pub[41];
      char sec[41];
      ASSERT_EQ(zmq_curve_keypair(pub, sec), 0);
      zmq::socket_t s(ctx, zmq::socket_type::dealer);
      s.set(zmq::sockopt::linger, 0);
      s.set(zmq::sockopt::reconnect_ivl, -1);  // one handshake per key
      s.set(zmq::sockopt::curve_serverkey, server->public_z85);
      s.set(zmq::sockopt::curve_publickey, std::string(pub));
      s.set(zmq::sockopt::curve_secretkey, std::string(sec));
      s.connect(endpoint);
      sockets.push_back(std::move(s));
    }
    sent += kPerBatch;
    ASSERT_TRUE(WaitUntil(
        [&] {
          const auto c = cluster.Coordinator();
          return c && c->handshakes_refused >= start->handshakes_refused + sent;
        },
        60s, 100ms))
        << "batch " << b << ": not every handshake was answered\n" << cluster.Logs();
  }
  // The interval's summary comes within one interval.
  EXPECT_TRUE(WaitUntil(
      [&] { return cluster.coordinator().err().find("handshakes refused in the last") !=
                   std::string::npos; },
      30s, 200ms))
      << cluster.Logs();
  const std::string log = cluster.coordinator().err();
  const size_t added = CountLines(log) - lines_before;
  EXPECT_LT(added, 20u) << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  EXPECT_THAT(log, HasSubstr("refused a clients handshake"));
  const auto end = cluster.Coordinator();
  ASSERT_TRUE(end);
  EXPECT_GE(end->handshakes_refused, start->handshakes_refused + sent);
}

}  // namespace
}  // namespace coupler::itest
