// The mpi_exec op as a gang's leader runs it: placeholders filled from the reservation, the
// hostfile written, the user's command (here a real mpirun) run once, its exit status the
// result. Also the gang-launch helpers it shares with the train op.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/temp_dir.h"
#include "runtime/job/task_logs.h"
#include "tests/unit/schema_defaults.h"
#include "worker/ops/gang_launch.h"
#include "worker/task_runner.h"

namespace coupler::worker {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GangLaunch, RanksComeFromTheReservation) {
  wire::TaskSpec spec;
  spec.ranks = 3;
  EXPECT_EQ(GangRanks(spec), 3u);
  spec.ranks = 0;
  EXPECT_EQ(GangRanks(spec), 1u);
  spec.ranks = 7;
  spec.gang_hosts = {"a", "b"};
  spec.gang_ranks = {2, 1};
  EXPECT_EQ(GangRanks(spec), 3u);
}

TEST(GangLaunch, HostfileListsRemoteHostsWithTheirSlots) {
  wire::TaskSpec spec;
  spec.gang_hosts = {"node-a.example", "node-b.example"};
  spec.gang_ranks = {2, 1};
  EXPECT_FALSE(GangIsLocal(spec));
  EXPECT_EQ(GangHostfileText(spec, 3), "node-a.example slots=2\nnode-b.example slots=1\n");
  // Hosts are addresses: workers on the leader's address are the leader's host.
  spec.gang_hosts = {"10.0.0.5", "10.0.0.5"};
  EXPECT_TRUE(GangIsLocal(spec));
  EXPECT_EQ(GangHostfileText(spec, 3), "localhost slots=3\n");
  EXPECT_TRUE(GangLauncherEnv(spec, nullptr, "/bin/coupler").empty());
  spec.gang_hosts = {"10.0.0.5", "10.0.0.6", "10.0.0.5"};
  spec.gang_ranks = {1, 1, 1};
  spec.job_id = "j-7";
  spec.task_id = 4;
  spec.attempt = 2;
  spec.gang_token = "secret";
  EXPECT_EQ(GangHostfileText(spec, 3), "10.0.0.5 slots=2\n10.0.0.6 slots=1\n");
  GangSetup base;
  base.launcher_env = {"COUPLER_COORDINATOR=tcp://10.0.0.1:7100"};
  const std::vector<std::string> env = GangLauncherEnv(spec, &base, "/bin/coupler");
  EXPECT_THAT(env, testing::IsSupersetOf({"COUPLER_COORDINATOR=tcp://10.0.0.1:7100",
                                          "COUPLER_GANG=j-7:4:2", "COUPLER_GANG_TOKEN=secret",
                                          "OMPI_MCA_plm_rsh_agent=/bin/coupler gang-agent",
                                          "OMPI_MCA_plm_rsh_no_tree_spawn=1",
                                          "OMPI_MCA_orte_leave_session_attached=1"}));
}

// The launcher's line about a lost host is kept however long the banner after it, and even when
// it arrives split over reads; stdout and other lines are ignored.
TEST(GangLaunch, TheLaunchersWordOnALostHostIsPickedOutOfMpirunsOutput) {
  LaunchErrorWatch watch;
  watch.Feed(1, "coupler: lost 10.0.0.9: fake, on stdout\n");
  watch.Feed(2, "------\nORTE was unable to reliably start one or more daemons.\ncoupler: lo");
  EXPECT_EQ(watch.line(), "");
  watch.Feed(2, "st 10.0.0.7: its worker wC was declared dead (no heartbeat)\n");
  for (int i = 0; i < 40; ++i) watch.Feed(2, "banner line\n");
  watch.Feed(2, "coupler gang-agent: a later line\n");
  EXPECT_EQ(watch.line(), "coupler: lost 10.0.0.7: its worker wC was declared dead (no heartbeat)");
}

TEST(GangLaunch, SubstitutesOnlyTheNamedPlaceholders) {
  EXPECT_EQ(SubstitutePlaceholders("run -n {ranks} {x} {in}put {ranks}}",
                                   {{"ranks", "4"}, {"in", "A"}}),
            "run -n 4 {x} Aput 4}");
  EXPECT_EQ(SubstitutePlaceholders("{unclosed", {{"unclosed", "x"}}), "{unclosed");
  EXPECT_EQ(SubstitutePlaceholders("{}", {{"", "x"}}), "{}");
}

class MpiExecOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::TempDir::Create("mpi-exec-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
  }

  wire::TaskSpec Spec(const std::string& command) const {
    wire::TaskSpec spec;
    spec.job_id = "job";
    spec.task_id = 7;
    spec.op = "mpi_exec";
    spec.input_paths = {dir_->File("data")};
    spec.output_path = dir_->File("node");
    spec.kind = wire::TaskKind::kGang;
    spec.ranks = 2;
    spec.params = WithSchemaDefaults("mpi_exec", {{"command", command}});
    spec.gang_hosts = {"localhost"};
    spec.gang_ranks = {2};
    return spec;
  }

  std::optional<io::TempDir> dir_;
};

TEST_F(MpiExecOpTest, RunsTheUsersMpiProgramOverTheReservedRanks) {
  const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
  const wire::TaskSpec spec =
      Spec("mpirun --oversubscribe" + root +
           " --timeout 60 -np {ranks} --hostfile {hostfile} sh -c 'echo rank' > {output}/ranks.txt"
           " && echo {input} > {output}/input.txt");
  const wire::TaskOutcome outcome = RunTask(spec);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.rows_out, 2u);
  const std::filesystem::path node = spec.output_path;
  EXPECT_EQ(ReadAll(node / "ranks.txt"), "rank\nrank\n");  // one line per rank
  EXPECT_EQ(ReadAll(node / "hostfile"), "localhost slots=2\n");
  EXPECT_EQ(ReadAll(node / "input.txt"), spec.input_paths[0] + "\n");
}

TEST_F(MpiExecOpTest, AFailingGroupFailsTheTaskWithItsStderr) {
  const wire::TaskOutcome outcome =
      RunTask(Spec("echo 'rank 1: out of patience' >&2; exit 3"));
  ASSERT_FALSE(outcome.ok);
  EXPECT_THAT(outcome.error, HasSubstr("mpi_exec (2 ranks) exited with status 3"));
  EXPECT_THAT(outcome.error, HasSubstr("rank 1: out of patience"));
}

// The placeholders for torch.distributed and its kind: where the ranks meet, and what names
// the attempt. Each attempt is told a port of its own that the program can bind.
TEST_F(MpiExecOpTest, RendezvousPlaceholdersNameTheLeaderAFreshPortAndTheAttempt) {
  wire::TaskSpec spec = Spec(
      "echo {master_addr} {master_port} {job} {node} {attempt} \"run-{job}-{node}\""
      " > {output}/attempt-{attempt}.txt"
      " && python3 -c 'import socket, sys; socket.socket().bind((\"0.0.0.0\", "
      "int(sys.argv[1])))' {master_port}");
  spec.job_id = "j-000042";
  spec.node_id = "train";
  const std::filesystem::path node = spec.output_path;
  std::set<std::string> ports;
  for (uint32_t attempt = 0; attempt < 3; ++attempt) {
    spec.attempt = attempt;
    const wire::TaskOutcome outcome = RunTask(spec);
    ASSERT_TRUE(outcome.ok) << outcome.error;
    std::istringstream words(ReadAll(node / ("attempt-" + std::to_string(attempt) + ".txt")));
    std::string addr, port, job, node_id, attempt_text, composed;
    words >> addr >> port >> job >> node_id >> attempt_text >> composed;
    // One host: the ranks meet on loopback.
    EXPECT_EQ(addr, "127.0.0.1");
    EXPECT_GT(std::stoi(port), 0);
    EXPECT_LT(std::stoi(port), 65536);
    ports.insert(port);
    EXPECT_EQ(job, "j-000042");
    EXPECT_EQ(node_id, "train");
    EXPECT_EQ(attempt_text, std::to_string(attempt));
    // Ids need no quotes: they make one word with the text around them, even in "...".
    EXPECT_EQ(composed, "run-j-000042-train");
  }
  EXPECT_EQ(ports.size(), 3u) << "an attempt was told an earlier attempt's port";
}

// A gang over several hosts meets at the leader's advertised address (the first gang host),
// which the other hosts can reach; loopback would be each host's own.
TEST_F(MpiExecOpTest, AGangOverSeveralHostsMeetsAtTheLeadersAddress) {
  wire::TaskSpec spec = Spec("echo {master_addr} > {output}/addr.txt");
  spec.gang_hosts = {"10.0.0.5", "10.0.0.6"};
  spec.gang_ranks = {1, 1};
  const wire::TaskOutcome outcome = RunTask(spec);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(ReadAll(std::filesystem::path(spec.output_path) / "addr.txt"), "10.0.0.5\n");
}

// {launch} (mpirun outside Slurm) writes each rank's output into a file of its own under the
// attempt's rank folder, the layout `coupler logs` lists, and mpirun still prints it all.
TEST_F(MpiExecOpTest, LaunchGivesEachRankItsOwnLogFile) {
  if (std::getenv("SLURM_JOB_ID") != nullptr) GTEST_SKIP() << "inside Slurm {launch} is srun";
  wire::TaskSpec spec = Spec("{launch} sh -c 'echo \"rank $OMPI_COMM_WORLD_RANK says hi\"'");
  spec.workdir = dir_->path();
  spec.node_id = "group";
  const wire::TaskOutcome outcome = RunTask(spec);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  const std::filesystem::path ranks(
      job::TaskRankLogDir(spec.workdir, spec.node_id, spec.task_id, spec.attempt));
  EXPECT_EQ(ReadAll(ranks / "1" / "rank.0" / "stdout"), "rank 0 says hi\n");
  EXPECT_EQ(ReadAll(ranks / "1" / "rank.1" / "stdout"), "rank 1 says hi\n");
  const std::string combined =
      ReadAll(job::TaskLogPath(spec.workdir, spec.node_id, spec.task_id, spec.attempt, "stdout"));
  EXPECT_THAT(combined, HasSubstr("rank 0 says hi"));
  EXPECT_THAT(combined, HasSubstr("rank 1 says hi"));
}

}  // namespace
}  // namespace coupler::worker
