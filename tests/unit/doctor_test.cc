// `coupler doctor`'s verdicts for the classic failures, from facts alone (no GPU needed).
#include "cli/doctor/diagnose.h"

#include <gtest/gtest.h>

namespace coupler::doctor {
namespace {

Facts HealthyGpuMachine() {
  Facts f;
  f.built_with_cuda = true;
  f.cuda_runtime = "13.0";
  f.cuda_driver = "13.0";
  f.gpus = {{0, "NVIDIA H200", 150ull << 30, 140ull << 30, 9, 0}};
  f.nccl = "2.27.3";
  f.mpi_library = "Open MPI v4.1.4";
  f.mpirun = "/usr/bin/mpirun";
  f.zeromq = "4.3.4";
  f.zeromq_curve = true;
  f.cpu_isa = "avx512_core_amx";
  f.cpu_bf16_gemm = true;
  return f;
}

const Finding* Find(const std::vector<Finding>& findings, const std::string& check) {
  for (const Finding& f : findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

TEST(DoctorTest, HealthyGpuMachineHasNoProblem) {
  const auto findings = Diagnose(HealthyGpuMachine());
  EXPECT_FALSE(HasProblem(findings)) << FormatFindings(findings);
  const Finding* gpu = Find(findings, "gpu 0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_NE(gpu->detail.find("NVIDIA H200, sm_90, 150.0 GiB total, 140.0 GiB free"),
            std::string::npos)
      << gpu->detail;
}

// The CPU GEMMs: oneDNN's instruction set, and a note (not a problem) where bf16 ones are
// widened, saying what that costs and what would change it.
TEST(DoctorTest, TheCpuGemmsNameTheirInstructionSetAndWhetherBf16IsFast) {
  Facts f = HealthyGpuMachine();
  const auto fast = Diagnose(f);
  const Finding* gemm = Find(fast, "cpu gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->verdict, Verdict::kOk);
  EXPECT_EQ(gemm->detail, "oneDNN on avx512_core_amx: fp32 and bf16 GEMMs");
  f.cpu_isa = "avx2";
  f.cpu_bf16_gemm = false;
  const auto slow = Diagnose(f);
  gemm = Find(slow, "cpu gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->verdict, Verdict::kNote);
  EXPECT_NE(gemm->detail.find("bf16 saves memory here but is not faster"), std::string::npos);
  EXPECT_NE(gemm->fix.find("AVX-512"), std::string::npos);
  EXPECT_FALSE(HasProblem(slow));
  f.onednn = false;
  const auto none = Diagnose(f);
  gemm = Find(none, "cpu gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->verdict, Verdict::kNote);
  EXPECT_NE(gemm->fix.find("libdnnl-dev"), std::string::npos);
}

TEST(DoctorTest, NoDriverIsANoteNotAProblem) {
  Facts f = HealthyGpuMachine();
  f.cuda_driver = "none";
  f.gpus.clear();
  const auto findings = Diagnose(f);
  EXPECT_FALSE(HasProblem(findings));
  const Finding* driver = Find(findings, "cuda driver");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->verdict, Verdict::kNote);
  EXPECT_NE(driver->detail.find("falls back to the CPU"), std::string::npos);
}

TEST(DoctorTest, DriverOlderThanTheRuntimeIsAProblemWithItsFix) {
  Facts f = HealthyGpuMachine();
  f.cuda_driver = "12.4";
  const auto findings = Diagnose(f);
  const Finding* driver = Find(findings, "cuda driver");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->verdict, Verdict::kProblem);
  EXPECT_NE(driver->fix.find("upgrade the NVIDIA driver"), std::string::npos);
}

TEST(DoctorTest, VisibleButUnusableGpuIsAProblem) {
  Facts f = HealthyGpuMachine();
  f.gpus.clear();
  f.gpu_error = "cudaGetDeviceProperties: all CUDA-capable devices are busy or unavailable";
  const auto findings = Diagnose(f);
  EXPECT_TRUE(HasProblem(findings));
  EXPECT_NE(FormatFindings(findings).find("PROBLEM  gpu"), std::string::npos)
      << FormatFindings(findings);
}

TEST(DoctorTest, DriverWithoutVisibleDevicePointsAtTheVisibilitySettings) {
  Facts f = HealthyGpuMachine();
  f.gpus.clear();
  const auto findings = Diagnose(f);
  const Finding* gpu = Find(findings, "gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->verdict, Verdict::kProblem);
  EXPECT_NE(gpu->fix.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
}

TEST(DoctorTest, MissingLauncherIsAProblem) {
  Facts f = HealthyGpuMachine();
  f.mpirun.clear();
  const auto findings = Diagnose(f);
  const Finding* mpirun = Find(findings, "mpirun");
  ASSERT_NE(mpirun, nullptr);
  EXPECT_EQ(mpirun->verdict, Verdict::kProblem);
  EXPECT_NE(mpirun->fix.find("openmpi-bin"), std::string::npos);
}

TEST(DoctorTest, CpuOnlyBuildSaysHowToGetCuda) {
  Facts f;
  f.mpirun = "/usr/bin/mpirun";
  f.zeromq = "4.3.4";
  f.zeromq_curve = true;
  const auto findings = Diagnose(f);
  EXPECT_FALSE(HasProblem(findings));
  const Finding* cuda = Find(findings, "cuda");
  ASSERT_NE(cuda, nullptr);
  EXPECT_NE(cuda->fix.find("-DCOUPLER_WITH_CUDA=ON"), std::string::npos);
  EXPECT_EQ(Find(findings, "nccl"), nullptr);  // nothing to say about NCCL without CUDA
}

}  // namespace
}  // namespace coupler::doctor
