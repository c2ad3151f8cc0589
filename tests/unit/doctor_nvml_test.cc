// `coupler doctor` on NVML, the library workers sample GPU utilization through: its driver
// version when it loads; a note with the fix when CUDA sees GPUs but NVML does not load; no
// complaint on a machine without GPUs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/doctor/diagnose.h"

namespace coupler::doctor {
namespace {

using ::testing::HasSubstr;

constexpr char kNoLibrary[] =
    "no NVML: libnvidia-ml.so.1: cannot open shared object file: No such file or directory";

Facts GpuMachine() {
  Facts f;
  f.built_with_cuda = true;
  f.cuda_runtime = "13.0";
  f.cuda_driver = "13.0";
  f.gpus = {{0, "NVIDIA H200", 150ull << 30, 140ull << 30, 9, 0}};
  f.nvml_driver = "580.65.06";
  f.nvml_gpus = 1;
  f.mpirun = "/usr/bin/mpirun";
  f.zeromq = "4.3.4";
  f.zeromq_curve = true;
  return f;
}

const Finding& Nvml(const std::vector<Finding>& findings) {
  static const Finding kMissing{"(no nvml finding)", Verdict::kProblem, "", ""};
  for (const Finding& f : findings) {
    if (f.check == "nvml") return f;
  }
  return kMissing;
}

TEST(DoctorNvmlTest, ALoadedNvmlShowsTheDriverVersionAndItsGpus) {
  const auto findings = Diagnose(GpuMachine());
  const Finding& nvml = Nvml(findings);
  EXPECT_EQ(nvml.verdict, Verdict::kOk) << FormatFindings(findings);
  EXPECT_THAT(nvml.detail, HasSubstr("driver 580.65.06, 1 GPU(s)"));
  EXPECT_FALSE(HasProblem(findings)) << FormatFindings(findings);
}

TEST(DoctorNvmlTest, GpusWithoutNvmlGetANoteWithTheReasonAndTheFix) {
  Facts f = GpuMachine();
  f.nvml_driver.reset();
  f.nvml_error = kNoLibrary;
  const auto findings = Diagnose(f);
  const Finding& nvml = Nvml(findings);
  EXPECT_EQ(nvml.verdict, Verdict::kNote) << FormatFindings(findings);
  EXPECT_THAT(nvml.detail, HasSubstr("CUDA sees GPUs but NVML does not load"));
  EXPECT_THAT(nvml.detail, HasSubstr(kNoLibrary));
  EXPECT_THAT(nvml.fix, HasSubstr("NVIDIA_DRIVER_CAPABILITIES"));
  // The GPUs still work: a note, not a failing doctor.
  EXPECT_FALSE(HasProblem(findings)) << FormatFindings(findings);
  EXPECT_THAT(FormatFindings(findings), HasSubstr("note     nvml"));
}

TEST(DoctorNvmlTest, NoNvmlWithoutGpusIsFine) {
  Facts f;
  f.mpirun = "/usr/bin/mpirun";
  f.zeromq = "4.3.4";
  f.zeromq_curve = true;
  f.nvml_error = kNoLibrary;
  const auto findings = Diagnose(f);
  const Finding& nvml = Nvml(findings);
  EXPECT_EQ(nvml.verdict, Verdict::kOk) << FormatFindings(findings);
  EXPECT_THAT(nvml.detail, HasSubstr("not needed without a GPU"));
  EXPECT_THAT(nvml.detail, HasSubstr(kNoLibrary));
}

}  // namespace
}  // namespace coupler::doctor
