// cuBLAS and OpenBLAS are opened on the first GEMM, never at start (kernels/cuda/
// cublas_library.h, kernels/cpu/openblas_library.h): a process that links every coupler
// library but runs no GEMM has neither mapped, so coordinators and workers start without
// cuBLAS's ~0.1 s and ~210 MB or OpenBLAS's spinning threads; the first GEMM loads OpenBLAS.
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/train_kernels.h"

namespace {

bool Mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  EXPECT_TRUE(maps) << "no /proc/self/maps";
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(library) != std::string::npos) return true;
  }
  return false;
}

TEST(BlasLazyTest, NeitherIsMappedUntilAGemmRuns) {
  EXPECT_FALSE(Mapped("libcublas"));
  EXPECT_FALSE(Mapped("libopenblas"));
  const std::vector<float> a = {1, 2, 3, 4};
  const std::vector<float> b = {5, 6, 7, 8};
  std::vector<float> c(4);
  using coupler::ElementType;
  ASSERT_TRUE(coupler::kernels::Gemm(false, false, 1.0f, {a.data(), ElementType::kFloat32, 2, 2},
                                     {b.data(), ElementType::kFloat32, 2, 2}, 0.0f,
                                     {c.data(), ElementType::kFloat32, 2, 2})
                  .ok());
  EXPECT_EQ(c, (std::vector<float>{19, 22, 43, 50}));
  EXPECT_TRUE(Mapped("libopenblas"));
}

}  // namespace
