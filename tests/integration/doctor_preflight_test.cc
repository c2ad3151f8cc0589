// `coupler doctor --coordinator EP`, a new worker host's preflight, against a real coordinator
// with keys on: a key on authorized/workers/ is accepted (and nothing registers), one that is
// not is refused, one holding another coordinator's coordinator.pub is told so, a stopped
// coordinator is unreachable; the shared workdir shows a job's marker once one has run there;
// Open MPI's fixed port range is checked here. Each problem exits 1 with its fix.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

// `coupler doctor ARGS` as an operator runs it on the new host (no client flags added).
CommandResult Doctor(Cluster& cluster, std::vector<std::string> args) {
  args.insert(args.begin(), {kCoupler, "doctor"});
  return RunToEnd(args, cluster.logs(), 60s);
}

TEST(DoctorPreflightTest, EachWayANewWorkerHostCannotJoinIsFoundWithItsFix) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path good = KeygenAndAuthorize(cluster, "node-2", "worker", {"workers"});
  const fs::path workdir = cluster.dir() / "work-shared";
  fs::create_directories(workdir);

  CommandResult ok = Doctor(cluster, {"--coordinator", cluster.endpoint(), "--keys",
                                  good.string(), "--workdir", workdir.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("accepts connections"));
  EXPECT_THAT(ok.out, HasSubstr("'node-2' (" + good.string() + ") is accepted; the coordinator "
                                "answers in protocol "));
  EXPECT_THAT(ok.out, HasSubstr("no job's marker is in it yet"));
  EXPECT_TRUE(cluster.Workers().empty()) << "the probe registered a worker";

  // Once a job has run with that workdir, its marker shows the directory is the coordinator's.
  cluster.StartWorker("w1", 1);
  const fs::path spec = cluster.dir() / "shared.yaml";
  WriteFile(spec, "name: shared\nworkdir: " + workdir.string() +
                      "\nnodes:\n  - {id: n, op: noop, params: {tasks: 1}}\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  ASSERT_TRUE(cluster.WaitJobFinished(job, 60s)) << cluster.Logs();
  CommandResult shared = Doctor(cluster, {"--coordinator", cluster.endpoint(), "--keys",
                                      good.string(), "--workdir", workdir.string()});
  EXPECT_EQ(shared.exit_code, 0) << shared.out;
  EXPECT_THAT(shared.out, HasSubstr("shows the coordinator's marker of job " + job));
  CommandResult missing = Doctor(cluster, {"--coordinator", cluster.endpoint(), "--keys",
                                       good.string(), "--workdir", "/nonexistent/shared"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("PROBLEM  shared fs     /nonexistent/shared is not a directory here"));

  // A key nobody authorized: refused, with the file to copy.
  const fs::path stranger = Keygen(cluster, "keys-stranger", "stranger", "worker");
  CommandResult refused = Doctor(cluster, {"--coordinator", cluster.endpoint(), "--keys",
                                       stranger.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_THAT(refused.out, HasSubstr("the coordinator refused key 'stranger'"));
  EXPECT_THAT(refused.out, HasSubstr("copy stranger.pub into its authorized/workers/"));

  // Another coordinator's coordinator.pub (its key set was remade): said before any key check.
  const fs::path other = cluster.dir() / "keys-other-coordinator";
  ASSERT_EQ(RunToEnd({kCoupler, "keygen", other.string(), "--role", "coordinator"}, cluster.logs(), 30s)
                .exit_code, 0);
  fs::copy_file(other / "coordinator.pub", good / "coordinator.pub", fs::copy_options::overwrite_existing);
  CommandResult stale = Doctor(cluster, {"--coordinator", cluster.endpoint(), "--keys",
                                     good.string(), "--timeout", "3"});
  EXPECT_EQ(stale.exit_code, 1) << stale.out;
  EXPECT_THAT(stale.out, HasSubstr("is not this coordinator's key"));

  // Open MPI's fixed range: a port of it taken here (a listener of this test's) is a problem.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string taken = std::to_string(ntohs(a.sin_port));
  CommandResult mpi = RunToEnd({"/usr/bin/env", "OMPI_MCA_btl_tcp_port_min_v4=" + taken,
                                "OMPI_MCA_btl_tcp_port_range_v4=4", kCoupler, "doctor",
                                "--coordinator", cluster.endpoint(), "--keys", stranger.string(),
                                "--timeout", "1"},
                               cluster.logs(), 60s);
  ::close(listener);
  EXPECT_EQ(mpi.exit_code, 1);
  // Another process on this host (a parallel test's listener) may hold a neighbour of the
  // range too: ours must be among the ports named, whichever else is.
  EXPECT_THAT(mpi.out, HasSubstr("Open MPI's ports " + taken + "-"));
  EXPECT_THAT(mpi.out, ContainsRegex("-[0-9]+: ([0-9]+, )*" + taken + "(, [0-9]+)* already taken here"));

  // The coordinator stopped: unreachable, with the port to open.
  cluster.coordinator().Kill();
  CommandResult down = Doctor(cluster, {"--coordinator", cluster.endpoint(), "--timeout", "1"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_THAT(down.out, HasSubstr("cannot reach " + cluster.endpoint()));
}

}  // namespace
}  // namespace coupler::itest
