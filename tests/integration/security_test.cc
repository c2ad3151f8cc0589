// Trust, tried as an attacker would, against real processes with keys on (the default): a key
// that is not on an allow-list gets nothing in, a worker key is no client key and the reverse,
// a worker id cannot be taken over by another key, only the submitter or an admin cancels or
// drains, plaintext never leaves loopback, and the state on disk is the owner's alone.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/net/curve_keys.h"
#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

unsigned Mode(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 07777;
  return st.st_mode & 07777;
}

// A key set of `role` named `name` in `dir`, holding the cluster's coordinator.pub; when
// `authorize` names allow-lists ("workers", "clients", "admins"), its public key goes there.
fs::path MakeKeySet(Cluster& cluster, const std::string& name, net::KeyRole role,
                    std::vector<std::string> authorize = {}) {
  const fs::path dir = cluster.dir() / ("keys-" + name);
  Result<net::CurveKey> key = net::GenerateKey(role, name);
  EXPECT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_TRUE(net::WriteKeyPair(dir.string(), *key).ok());
  fs::copy_file(cluster.keys() / "coordinator.pub", dir / "coordinator.pub",
                fs::copy_options::overwrite_existing);
  for (const std::string& list : authorize) {
    EXPECT_TRUE(net::WritePublicKey((cluster.keys() / "authorized" / list / (name + ".pub")).string(),
                                    *key)
                    .ok());
  }
  return dir;
}

// A copy of a local key set whose key claims another role: the allow-list, not the file's own
// word, decides what the key may do.
fs::path Relabel(Cluster& cluster, const std::string& from, const std::string& key_file,
                 const std::string& new_role) {
  const fs::path dir = cluster.dir() / ("relabelled-" + from);
  fs::create_directories(dir);
  std::string text = ReadFile(cluster.keys() / from / key_file);
  const auto at = text.find("role = ");
  text.replace(at, text.find('\n', at) - at, "role = " + new_role);
  WriteFile(dir / key_file, text);
  fs::permissions(dir / key_file, fs::perms::owner_read | fs::perms::owner_write);
  fs::copy_file(cluster.keys() / from / "coordinator.pub", dir / "coordinator.pub");
  return dir;
}

TEST(SecurityTest, StateDatabaseKeysAndReadyFileAreTheOwnersAlone) {
  Cluster cluster;
  // An older coupler left a world-readable state dir: it is tightened, not trusted.
  fs::create_directories(cluster.state());
  fs::permissions(cluster.state(), fs::perms::all & ~fs::perms::group_write & ~fs::perms::others_write);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  EXPECT_EQ(Mode(cluster.state()), 0700u);
  EXPECT_EQ(Mode(cluster.state() / "coupler.db"), 0600u);
  EXPECT_EQ(Mode(cluster.dir() / "ready"), 0600u);
  EXPECT_EQ(Mode(cluster.keys()), 0700u);
  EXPECT_EQ(Mode(cluster.keys() / "coordinator.key"), 0600u);
  EXPECT_EQ(Mode(cluster.keys() / "local-worker" / "local-worker.key"), 0600u);
  EXPECT_EQ(Mode(cluster.keys() / "local-client" / "local.key"), 0600u);
  // A job's spec (and the secrets its commands hold) is in the WAL once submitted.
  ASSERT_FALSE(cluster.Submit(WriteNoopSpec(cluster, "j", 1, 0)).empty()) << cluster.Logs();
  EXPECT_EQ(Mode(cluster.state() / "coupler.db-wal"), 0600u);
  const auto c = cluster.Coordinator();
  ASSERT_TRUE(c) << cluster.Logs();
  EXPECT_TRUE(c->encrypted);
}

// The client port's I/O thread (where anyone's CURVE handshakes are computed) runs at a higher
// nice value than the workers', so a flood of refused handshakes yields to dispatch on a busy
// host (bench/security/handshake_flood.sh).
TEST(SecurityTest, TheClientPortsIoThreadYieldsToTheWorkers) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path tasks = "/proc/" + std::to_string(cluster.coordinator().pid()) + "/task";
  std::map<std::string, int> nice;  // by thread name suffix
  for (const auto& task : fs::directory_iterator(tasks)) {
    std::string comm = ReadFile(task.path() / "comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    for (const std::string io : {"/ZMQbg/IO/0", "/ZMQbg/IO/1"}) {
      if (!comm.ends_with(io)) continue;
      // /proc/PID/task/TID/stat: "tid (comm) state ..."; nice is field 19, the 17th after ')'.
      const std::string stat = ReadFile(task.path() / "stat");
      std::istringstream fields(stat.substr(stat.rfind(')') + 2));
      std::string field;
      for (int i = 0; i < 17; ++i) fields >> field;
      nice[io] = std::stoi(field);
    }
  }
  ASSERT_EQ(nice.size(), 2u) << "the coordinator's two I/O threads by name";
  EXPECT_EQ(nice["/ZMQbg/IO/1"], std::min(nice["/ZMQbg/IO/0"] + 10, 19));
}

TEST(SecurityTest, AClientWithAnUnauthorizedKeyIsRefusedInOneLineAndNothingIsSubmitted) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path mallory = MakeKeySet(cluster, "mallory", net::KeyRole::kClient);
  const fs::path spec = WriteNoopSpec(cluster, "evil", 1, 0);
  CommandResult r = cluster.Cli({"submit", spec.string(), "--keys", mallory.string()}, 30s);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("refused this key"));
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  // Plaintext gets nowhere either.
  CommandResult plain = cluster.Cli({"submit", spec.string(), "--insecure"}, 30s);
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_THAT(plain.err, HasSubstr("security handshake"));

  CommandResult status = cluster.Cli({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("no jobs"));
  const auto c = cluster.Coordinator();
  ASSERT_TRUE(c) << cluster.Logs();
  EXPECT_GE(c->handshakes_refused, 1u);
  // Logged once for the key, however often it retried.
  const std::string log = cluster.coordinator().err();
  EXPECT_THAT(log, HasSubstr("refused a clients handshake"));
}

TEST(SecurityTest, UserNobodyCannotReachRootsCoordinator) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a command as user nobody";
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path marker = cluster.dir() / "ran-as";
  const fs::path spec = cluster.dir() / "whoami.yaml";
  WriteFile(spec, "name: whoami\nworkdir: " + (cluster.dir() / "w").string() +
                      "\nnodes:\n  - {id: x, op: noop, params: {tasks: 1}}\n");
  fs::permissions(cluster.dir(), fs::perms::all);  // nobody may read the spec
  // Nobody cannot read root's keys, finds none, and is told how to get some; nothing runs.
  CommandResult r = RunToEnd({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              kCoupler, "submit", spec.string(), "--coordinator", cluster.endpoint()},
                             cluster.logs(), 30s);
  if (r.exit_code == 127) GTEST_SKIP() << "user nobody cannot execute " << kCoupler << ": " << r.err;
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.err, HasSubstr("keys"));
  CommandResult status = cluster.Cli({"status"});
  EXPECT_THAT(status.out, HasSubstr("no jobs")) << status.out;
}

TEST(SecurityTest, AWorkerKeyIsNoClientKeyAndAClientKeyIsNoWorkerKey) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  ASSERT_FALSE(cluster.Submit(WriteNoopSpec(cluster, "waiting", 3, 0)).empty()) << cluster.Logs();

  const fs::path worker_as_client = Relabel(cluster, "local-worker", "local-worker.key", "client");
  CommandResult r = cluster.Cli({"status", "--keys", worker_as_client.string()}, 30s);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("refused this key"));

  const fs::path client_as_worker = Relabel(cluster, "local-client", "local.key", "worker");
  Process& impostor = cluster.StartWorker("impostor", 2, {"--keys", client_as_worker.string()});
  const std::optional<int> code = impostor.WaitExit(30s);
  ASSERT_TRUE(code) << "a worker with a client key kept running\n" << cluster.Logs();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(impostor.err(), HasSubstr("refused this key"));
  const auto job = cluster.Job("j-000001");
  ASSERT_TRUE(job) << cluster.Logs();
  EXPECT_EQ(job->done, 0u);
  EXPECT_EQ(job->running, 0u);
  EXPECT_EQ(job->prefetched, 0u);
  EXPECT_TRUE(cluster.Workers().empty());
}

TEST(SecurityTest, AnotherKeyCannotTakeOverALiveWorkersId) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  // An authorized worker key of someone else, registering under w1's id.
  const fs::path eve = MakeKeySet(cluster, "eve", net::KeyRole::kWorker, {"workers"});
  Process::Options o;
  o.deadline = 60s;
  o.output = cluster.logs();
  o.name = "thief";
  Process thief = Process::Spawn({kCoupler, "--log-level", "info", "worker", "--coordinator",
                                  cluster.endpoint(), "--id", "w1", "--keys", eve.string()},
                                 o);
  const std::optional<int> code = thief.WaitExit(30s);
  ASSERT_TRUE(code) << cluster.Logs();
  EXPECT_EQ(*code, 1);
  EXPECT_THAT(thief.err(), HasSubstr("registered with another key"));

  const std::string id = cluster.Submit(WriteNoopSpec(cluster, "after", 20, 0));
  ASSERT_FALSE(id.empty()) << cluster.Logs();
  const auto st = cluster.WaitJobFinished(id);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->done, 20u);
  EXPECT_EQ(st->attempts, 20u);  // none was sent to the thief and lost there
  const auto c = cluster.Coordinator();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->registrations_refused, 1u);
  EXPECT_EQ(cluster.Workers()["w1"].first, "alive");
}

TEST(SecurityTest, OnlyTheSubmitterOrAnAdminCancelsAndOnlyAnAdminDrains) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const std::string mine = cluster.Submit(WriteNoopSpec(cluster, "local-job", 200, 100));
  ASSERT_FALSE(mine.empty()) << cluster.Logs();
  const fs::path bob = MakeKeySet(cluster, "bob", net::KeyRole::kClient, {"clients"});

  CommandResult cancel = cluster.Cli({"cancel", mine, "--keys", bob.string()});
  EXPECT_EQ(cancel.exit_code, 1) << cancel.out;
  EXPECT_THAT(cancel.err, HasSubstr("only its submitter or an admin"));
  CommandResult drain = cluster.Cli({"drain", "w1", "--keys", bob.string()});
  EXPECT_EQ(drain.exit_code, 1) << drain.out;
  EXPECT_THAT(drain.err, HasSubstr("admin"));
  auto st = cluster.Job(mine);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, "running");
  EXPECT_EQ(st->submitted_by, "local");
  EXPECT_EQ(cluster.Workers()["w1"].first, "alive");

  // Bob may cancel his own job; the local key is an admin and may cancel anyone's.
  CommandResult submit = cluster.Cli({"submit", WriteNoopSpec(cluster, "bobs", 5, 1000).string(),
                                      "--keys", bob.string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  std::string bobs = submit.out;
  bobs.erase(bobs.find_last_not_of(" \n") + 1);
  ASSERT_TRUE(cluster.Job(bobs));
  EXPECT_EQ(cluster.Job(bobs)->submitted_by, "bob");
  EXPECT_EQ(cluster.Cli({"cancel", bobs, "--keys", bob.string()}).exit_code, 0);
  EXPECT_EQ(cluster.Cli({"cancel", mine}).exit_code, 0);
  EXPECT_EQ(cluster.Job(mine)->state, "cancelled");
}

TEST(SecurityTest, PlaintextIsRefusedOffLoopbackWhateverTheFlagOrder) {
  TempDir dir;
  const int port = FreePortPair();
  ASSERT_GT(port, 0);
  const std::string p = std::to_string(port);
  const std::vector<std::vector<std::string>> refused = {
      {"--insecure", "--listen", "tcp://0.0.0.0:" + p},
      {"--listen", "tcp://127.0.0.1:" + p, "--clients", "tcp://0.0.0.0:" + std::to_string(port + 1),
       "--insecure"},
      {"--listen", "tcp://127.0.0.1.nip.io:" + p, "--insecure"},
      {"--listen", "tcp://[::]:" + p, "--insecure"},
  };
  for (const auto& extra : refused) {
    std::vector<std::string> argv{kCoupler, "coordinator", "--state", (dir.path() / "s").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    CommandResult r = RunToEnd(argv, dir.path(), 30s);
    EXPECT_EQ(r.exit_code, 2) << extra[1] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("refusing plaintext")) << extra[1];
  }
}

TEST(SecurityTest, InsecureOnLoopbackWorksAndWarnsAtEveryStart) {
  Cluster::Options o;
  o.coordinator_args = {"--insecure"};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  EXPECT_THAT(cluster.coordinator().err(), HasSubstr("warning: --insecure"));
  cluster.StartWorker("w1", 1, {"--insecure"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  // A client of the same user finds that this coordinator speaks plaintext.
  const std::string id = cluster.Submit(WriteNoopSpec(cluster, "plain", 3, 0));
  ASSERT_FALSE(id.empty()) << cluster.Logs();
  const auto st = cluster.WaitJobFinished(id);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, "succeeded");
  const auto c = cluster.Coordinator();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->encrypted);
}

}  // namespace
}  // namespace coupler::itest
