// cuBLAS and OpenBLAS are opened on the first GEMM that needs them, never at start (kernels/
// cuda/cublas_library.h, kernels/cpu/openblas_library.h): a process that links every coupler
// library but runs no GEMM has neither mapped, so coordinators and workers start without
// cuBLAS's ~0.1 s and ~210 MB or OpenBLAS's spinning threads. oneDNN, linked, takes the fp32
// and bf16 GEMMs; the first fp16 one loads OpenBLAS.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/onednn_gemm.h"
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

TEST(BlasLazyTest, NeitherIsMappedUntilAGemmNeedsIt) {
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
  // oneDNN ran that one (kernels/cpu/onednn_gemm.h); an fp16 GEMM, which it has no CPU kernel
  // for, is OpenBLAS's, opened then. (A build without oneDNN opened OpenBLAS for the first.)
  EXPECT_EQ(Mapped("libopenblas"), !coupler::kernels::OneDnnBuilt());
  const std::vector<uint16_t> one = {0x3C00};  // 1.0 in fp16
  std::vector<float> out(1);
  ASSERT_TRUE(coupler::kernels::Gemm(false, false, 1.0f, {one.data(), ElementType::kFloat16, 1, 1},
                                     {one.data(), ElementType::kFloat16, 1, 1}, 0.0f,
                                     {out.data(), ElementType::kFloat32, 1, 1})
                  .ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_TRUE(Mapped("libopenblas"));
}

}  // namespace
