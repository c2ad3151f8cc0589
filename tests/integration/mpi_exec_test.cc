// mpi_exec end to end: a graph whose tight node is the user's own MPI program runs under
// `coupler run --workers 2`; the coordinator reserves 2 ranks over both workers and the leader
// runs the command once, with {ranks}, {hostfile}, {input} and {output} filled in.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>

#include <fstream>
#include <sstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MpiExecTest, UsersMpiProgramRunsAsOneGangOfTwoRanks) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  TempDir scratch;
  const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
  {
    std::ofstream csv(scratch.path() / "small.csv");
    csv << "x,y\n";
    for (int r = 0; r < 20; ++r) csv << r << "," << r % 3 << "\n";
    std::ofstream spec(scratch.path() / "own-mpi.yaml");
    spec << "name: own-mpi\nworkdir: out\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [small.csv], params: {shards: 2}}\n"
            "  - id: program\n    op: mpi_exec\n    inputs: [import]\n    ranks: 2\n"
            "    params:\n      command: \"mpirun --oversubscribe" << root
         << " --timeout 60 -np {ranks} --hostfile {hostfile} sh -c 'ls \\\"$0\\\"/*.npz | wc -l'"
            " {input} > {output}/listing.txt\"\n";
  }
  const CommandResult r = RunToEnd({kCoupler, "run", "own-mpi.yaml", "--workers", "2"},
                                   scratch.path(), 120s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(group of 2 ranks)"), std::string::npos) << r.out;
  // Each of the 2 ranks listed the 2 shards of the input dataset.
  EXPECT_EQ(ReadText(scratch.path() / "out" / "latest" / "program" / "listing.txt"), "2\n2\n");
  EXPECT_EQ(ReadText(scratch.path() / "out" / "latest" / "program" / "hostfile"), "localhost slots=2\n");
}

// {launch} outside Slurm is mpirun over the gang's hostfile: the command names no launcher.
TEST(MpiExecTest, TheLaunchPlaceholderStartsTheRanksWithMpirunOutsideSlurm) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  if (std::getenv("SLURM_JOB_ID") != nullptr) GTEST_SKIP() << "runs inside a Slurm job";
  TempDir scratch;
  {
    std::ofstream csv(scratch.path() / "small.csv");
    csv << "x,y\n";
    for (int r = 0; r < 20; ++r) csv << r << "," << r % 3 << "\n";
    std::ofstream spec(scratch.path() / "launch.yaml");
    spec << "name: launch\nworkdir: out\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [small.csv], params: {shards: 2}}\n"
            "  - id: program\n    op: mpi_exec\n    inputs: [import]\n    ranks: 2\n"
            "    params:\n      command: \"{launch} sh -c 'echo rank $OMPI_COMM_WORLD_RANK of "
            "$OMPI_COMM_WORLD_SIZE' > {output}/ranks.txt\"\n";
  }
  const CommandResult r = RunToEnd({kCoupler, "run", "launch.yaml", "--workers", "2"},
                                   scratch.path(), 120s, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string ranks = ReadText(scratch.path() / "out" / "latest" / "program" / "ranks.txt");
  EXPECT_NE(ranks.find("rank 0 of 2"), std::string::npos) << ranks;
  EXPECT_NE(ranks.find("rank 1 of 2"), std::string::npos) << ranks;
}

}  // namespace
}  // namespace coupler::itest
