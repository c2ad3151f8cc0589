// What a worker takes from a Slurm allocation, and how a gang's ranks become one srun step.
#include "worker/slurm_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "worker/ops/gang_launch.h"

namespace coupler::worker {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

const std::map<std::string, std::string> kStep = {
    {"SLURM_JOB_ID", "4242"},       {"SLURMD_NODENAME", "gpu07"},
    {"SLURM_JOB_PARTITION", "a100"}, {"SLURM_JOB_NODELIST", "gpu[07-08]"},
    {"SLURM_CPUS_ON_NODE", "32"}};

TEST(SlurmEnvTest, OutsideSlurmNothingIsDetected) {
  EXPECT_FALSE(DetectSlurm(Env({})));
  // A stray job id without a node (a login shell that sourced an old environment).
  EXPECT_FALSE(DetectSlurm(Env({{"SLURM_JOB_ID", "1"}})));
}

TEST(SlurmEnvTest, AStepOffersTheAllocationsCpusAndNoGpusItWasNotGiven) {
  const auto slurm = DetectSlurm(Env(kStep));
  ASSERT_TRUE(slurm);
  EXPECT_EQ(slurm->job_id, "4242");
  EXPECT_EQ(slurm->node, "gpu07");
  EXPECT_EQ(slurm->cpus_on_node, 32u);
  const SlurmDefaults d = ApplySlurmDefaults(*slurm, {}, "");
  EXPECT_EQ(d.slots, 32u);
  // GPUs the job did not ask for belong to other jobs on the node.
  EXPECT_EQ(d.gpus, "none");
  EXPECT_EQ(d.labels.at("slurm_partition"), "a100");
  EXPECT_EQ(d.labels.at("slurm_node"), "gpu07");
  EXPECT_EQ(d.labels.at("slurm_job"), "4242");
  EXPECT_EQ(d.labels.at("slurm_cpus"), "32");
  EXPECT_EQ(d.labels.count("interconnect"), 0u);  // not known: not claimed
  EXPECT_EQ(ApplySlurmDefaults(*slurm, {}, "infiniband").labels.at("interconnect"), "infiniband");
}

TEST(SlurmEnvTest, GpusGivenBySlurmAreTheFirstVisibleOrdinals) {
  auto vars = kStep;
  vars["SLURM_GPUS_ON_NODE"] = "4";
  const SlurmDefaults d = ApplySlurmDefaults(*DetectSlurm(Env(vars)), {});
  EXPECT_EQ(d.gpus, "0,1,2,3");
}

TEST(SlurmEnvTest, WhatTheOperatorSaidWins) {
  auto vars = kStep;
  vars["SLURM_GPUS_ON_NODE"] = "4";
  const SlurmDefaults d =
      ApplySlurmDefaults(*DetectSlurm(Env(vars)),
                         {8, "0", {{"slurm_partition", "mine"}, {"interconnect", "nvlink"}}},
                         "infiniband");
  EXPECT_EQ(d.slots, 8u);
  EXPECT_EQ(d.gpus, "0");
  EXPECT_EQ(d.labels.at("slurm_partition"), "mine");
  EXPECT_EQ(d.labels.at("interconnect"), "nvlink");
}

TEST(SlurmEnvTest, AMalformedCountIsNotTrusted) {
  auto vars = kStep;
  vars["SLURM_CPUS_ON_NODE"] = "32(x2)";
  vars["SLURM_GPUS_ON_NODE"] = "-1";
  const auto slurm = DetectSlurm(Env(vars));
  ASSERT_TRUE(slurm);
  EXPECT_EQ(slurm->cpus_on_node, 0u);  // the worker then counts its CPUs itself
  EXPECT_FALSE(slurm->gpus_on_node);
}

TEST(SlurmEnvTest, GangLauncherNames) {
  EXPECT_EQ(*ParseGangLauncher("auto"), GangLauncher::kAuto);
  EXPECT_EQ(*ParseGangLauncher("srun"), GangLauncher::kSrun);
  EXPECT_EQ(*ParseGangLauncher("mpirun"), GangLauncher::kMpirun);
  EXPECT_FALSE(ParseGangLauncher("ssh").ok());
}

wire::TaskSpec Gang(std::vector<std::string> hosts, std::vector<uint32_t> ranks) {
  wire::TaskSpec spec;
  spec.job_id = "j-000007";
  spec.task_id = 3;
  spec.attempt = 1;
  spec.gang_hosts = std::move(hosts);
  spec.gang_ranks = std::move(ranks);
  return spec;
}

const SlurmSteps kSteps = {"4242", "gpu07", {{"10.0.0.7", "gpu07"}, {"10.0.0.8", "gpu08"}}};

TEST(SrunGangTest, ALocalGangIsOneNodeStepOfAllItsRanks) {
  const auto nodes = GangSlurmNodes(Gang({"10.0.0.7", "10.0.0.7"}, {1, 1}), kSteps);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0], (std::pair<std::string, uint32_t>{"gpu07", 2}));
  const SrunLaunch launch = SrunGangLaunch(*nodes, "coupler.j-000007.3.a1", "/w/hf");
  EXPECT_NE(launch.command.find("srun --mpi=pmix --overlap"), std::string::npos);
  EXPECT_NE(launch.command.find("--ntasks=2 --nodelist='gpu07' --distribution=block"),
            std::string::npos)
      << launch.command;
  EXPECT_NE(launch.command.find("--kill-on-bad-exit=1"), std::string::npos);
  // The worker step's own layout is not inherited.
  EXPECT_NE(launch.command.find("-u SLURM_NTASKS_PER_NODE"), std::string::npos);
  EXPECT_TRUE(launch.hostfile.empty());
  EXPECT_TRUE(launch.env.empty());
}

TEST(SrunGangTest, ASpreadGangLaysItsRanksOutExactlyAsReserved) {
  const auto nodes =
      GangSlurmNodes(Gang({"10.0.0.8", "10.0.0.7", "10.0.0.8"}, {2, 1, 1}), kSteps);
  ASSERT_TRUE(nodes.ok());
  // Leader first, several workers of one node merged.
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0], (std::pair<std::string, uint32_t>{"gpu08", 3}));
  EXPECT_EQ((*nodes)[1], (std::pair<std::string, uint32_t>{"gpu07", 1}));
  const SrunLaunch launch = SrunGangLaunch(*nodes, "s", "/w/hf");
  EXPECT_NE(launch.command.find("--nodes=2 --ntasks=4 --nodelist='gpu08,gpu07' "
                                "--distribution=arbitrary"),
            std::string::npos)
      << launch.command;
  EXPECT_EQ(launch.hostfile, "gpu08\ngpu08\ngpu08\ngpu07\n");
  EXPECT_EQ(launch.env, std::vector<std::string>{"SLURM_HOSTFILE=/w/hf"});
}

TEST(SrunGangTest, AHostOutsideTheAllocationFallsBackToMpirun) {
  const wire::TaskSpec spec = Gang({"10.0.0.7", "10.9.9.9"}, {1, 1});
  EXPECT_EQ(GangSlurmNodes(spec, kSteps).status().code(), StatusCode::kNotFound);
  GangSetup setup;
  setup.slurm = kSteps;
  const GangLauncherChoice choice = ChooseGangLauncher(spec, &setup);
  EXPECT_FALSE(choice.srun_nodes);
  EXPECT_NE(choice.note.find("10.9.9.9 is no node of Slurm job 4242"), std::string::npos)
      << choice.note;
  // Outside Slurm: mpirun, without a word.
  const GangLauncherChoice plain = ChooseGangLauncher(spec, nullptr);
  EXPECT_FALSE(plain.srun_nodes);
  EXPECT_TRUE(plain.note.empty());
}

TEST(SrunGangTest, TheStepIsNamedForItsAttempt) {
  EXPECT_EQ(GangStepName(Gang({}, {})), "coupler.j-000007.3.a1");
}

}  // namespace
}  // namespace coupler::worker
