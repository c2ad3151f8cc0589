// cuBLAS is opened on the first GPU GEMM, never at start (kernels/cuda/cublas_library.h): a
// process that links every coupler library but runs no GEMM on a GPU has none of it mapped,
// so coordinators and workers start without its ~0.1 s and ~210 MB.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace {

TEST(CublasLazyTest, NotMappedInAProcessThatRanNoGpuGemm) {
  std::ifstream maps("/proc/self/maps");
  ASSERT_TRUE(maps) << "no /proc/self/maps";
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libcublas"), std::string::npos) << line;
  }
}

}  // namespace
