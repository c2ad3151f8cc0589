// The preflight's judgement, apart from the probing: each way a new worker host cannot join
// reads as one PROBLEM line with its fix, and a host that can reads ok (notes where nothing
// proves more, as a workdir no job has used yet or Open MPI's random ports).
#include "cli/doctor/preflight.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace coupler::doctor {
namespace {

using ::testing::HasSubstr;

PreflightFacts Healthy() {
  PreflightFacts f;
  f.endpoint = "tcp://10.0.0.1:7100";
  f.tcp_ms = 0.4;
  f.key_name = "node-7";
  f.keys_from = "/etc/coupler/keys";
  f.key = KeyVerdict::kAnswered;
  f.reply_version = 16;
  f.workdir = "/shared/work";
  f.newest_marker_job = "j-000042";
  f.mpi_port_min = 46000;
  f.mpi_port_range = 100;
  f.mpi_ports_tried = 8;
  return f;
}

const Finding& Find(const std::vector<Finding>& all, const std::string& check) {
  for (const Finding& f : all) {
    if (f.check == check) return f;
  }
  static const Finding none{"none", Verdict::kProblem, "no such finding", ""};
  return none;
}

TEST(PreflightVerdictTest, AHostThatCanJoinIsOkOnEveryCheck) {
  const std::vector<Finding> all = DiagnosePreflight(Healthy());
  EXPECT_FALSE(HasProblem(all)) << FormatFindings(all);
  EXPECT_THAT(Find(all, "shared fs").detail, HasSubstr("marker of job j-000042"));
  EXPECT_THAT(Find(all, "mpi ports").detail, HasSubstr("46000-46099"));
}

TEST(PreflightVerdictTest, EachFailureIsAProblemWithItsFix) {
  PreflightFacts down = Healthy();
  down.tcp_error = "Connection refused";
  std::vector<Finding> all = DiagnosePreflight(down);
  ASSERT_EQ(all.size(), 1u) << "nothing else is asked of an unreachable coordinator";
  EXPECT_EQ(all[0].verdict, Verdict::kProblem);
  EXPECT_THAT(all[0].fix, HasSubstr("TCP port 7100"));

  PreflightFacts refused = Healthy();
  refused.key = KeyVerdict::kRefused;
  EXPECT_THAT(Find(DiagnosePreflight(refused), "worker key").fix,
              HasSubstr("copy node-7.pub into its authorized/workers/"));
  PreflightFacts stale = Healthy();
  stale.key = KeyVerdict::kWrongServer;
  EXPECT_THAT(Find(DiagnosePreflight(stale), "worker key").detail,
              HasSubstr("is not this coordinator's key"));
  PreflightFacts unshared = Healthy();
  unshared.workdir_error = "/shared/work is not a directory here";
  EXPECT_EQ(Find(DiagnosePreflight(unshared), "shared fs").verdict, Verdict::kProblem);
  PreflightFacts busy = Healthy();
  busy.mpi_ports_busy = {46001};
  EXPECT_THAT(Find(DiagnosePreflight(busy), "mpi ports").detail, HasSubstr(": 46001 already taken"));
  busy.mpi_ports_busy = {46001, 46003};
  EXPECT_THAT(Find(DiagnosePreflight(busy), "mpi ports").detail,
              HasSubstr(": 46001, 46003 already taken here"));
}

TEST(PreflightVerdictTest, WhatCannotBeProvenIsANoteNotAProblem) {
  PreflightFacts f = Healthy();
  f.newest_marker_job.clear();
  f.mpi_port_range = 0;
  const std::vector<Finding> all = DiagnosePreflight(f);
  EXPECT_FALSE(HasProblem(all));
  EXPECT_EQ(Find(all, "shared fs").verdict, Verdict::kNote);
  EXPECT_EQ(Find(all, "mpi ports").verdict, Verdict::kNote);
}

}  // namespace
}  // namespace coupler::doctor
