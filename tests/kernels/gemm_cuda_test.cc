// GemmCuda against the CPU Gemm (every transpose and storage, outputs poisoned first) and the
// DevicePool arena, on a GPU machine; argument errors and the no-device answers everywhere.
#include "kernels/train_kernel_table.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/device.h"
#include "kernels/device_pool.h"
#include "kernels/train_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

const char* Name(ElementType storage) { return ShortElementTypeName(storage); }

// The CUDA table's gemm, or why there is none (a build without CUDA).
Status GpuGemm(bool trans_a, bool trans_b, float alpha, ConstMatrix a, ConstMatrix b, float beta,
               MutMatrix c) {
  COUPLER_ASSIGN_OR_RETURN(const TrainKernelTable* cuda, CudaTrainKernels());
  return cuda->gemm(trans_a, trans_b, alpha, a, b, beta, c);
}

// A host matrix in its storage's bytes, with a device copy when a pool is given.
struct HostMatrix {
  ElementType storage = ElementType::kFloat32;
  size_t rows = 0;
  size_t cols = 0;
  std::vector<unsigned char> bytes;

  HostMatrix(ElementType s, size_t r, size_t c, const std::vector<float>& values)
      : storage(s), rows(r), cols(c), bytes(r * c * StorageBytes(s)) {
    EXPECT_TRUE(RoundCopy(values.data(), bytes.data(), storage, r * c).ok());
  }
  ConstMatrix View() const { return {bytes.data(), storage, rows, cols}; }
  MutMatrix MutView() { return {bytes.data(), storage, rows, cols}; }
  std::vector<float> Widened() const {
    std::vector<float> out(rows * cols);
    EXPECT_TRUE(WidenCopy(bytes.data(), storage, out.data(), rows * cols).ok());
    return out;
  }
};

std::vector<float> Uniform(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.Uniform(-1.0f, 1.0f);
  return v;
}

// Poison that survives a round trip through the storage and is NaN, so an element the GPU
// never wrote (or a poisoned c leaking through beta == 0) fails the comparison.
std::vector<float> PoisonValues(size_t n) {
  return std::vector<float>(n, precision::Float32FromBits(kPoisonFloatBits));
}

double Tolerance(ElementType c_storage, ElementType operand_storage) {
  if (c_storage == ElementType::kBFloat16 || operand_storage == ElementType::kBFloat16) return 1e-2;
  if (c_storage == ElementType::kFloat16 || operand_storage == ElementType::kFloat16) return 1e-3;
  return 1e-5;
}

// max |gpu - cpu| / max |cpu|, NaN anywhere in gpu counting as failure.
::testing::AssertionResult Close(const std::vector<float>& cpu, const std::vector<float>& gpu,
                                 double tol) {
  double max_ref = 0.0;
  for (float v : cpu) max_ref = std::max(max_ref, std::fabs(static_cast<double>(v)));
  max_ref = std::max(max_ref, 1e-30);
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double err = std::fabs(static_cast<double>(gpu[i]) - cpu[i]) / max_ref;
    if (!(err <= tol)) {
      return ::testing::AssertionFailure() << "element " << i << " of " << cpu.size()
                                           << ": cpu " << cpu[i] << ", gpu " << gpu[i]
                                           << " (relative error " << err << " > " << tol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

Result<DeviceAllocation> ToDevice(DevicePool& pool, const HostMatrix& m, const char* what) {
  COUPLER_ASSIGN_OR_RETURN(DeviceAllocation d, pool.Allocate(m.bytes.size(), what));
  COUPLER_RETURN_IF_ERROR(d.CopyFromHost(m.bytes.data(), m.bytes.size()));
  return d;
}

void CheckParity(DevicePool& pool, bool trans_a, bool trans_b, ElementType operands,
                 ElementType c_storage, size_t m, size_t n, size_t k, float alpha, float beta) {
  SCOPED_TRACE(std::string("trans_a=") + (trans_a ? "1" : "0") + " trans_b=" +
               (trans_b ? "1" : "0") + " operands=" + Name(operands) + " c=" + Name(c_storage) +
               " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " beta=" + std::to_string(beta));
  const uint64_t seed = m * 1000003 + n * 1009 + k + (trans_a ? 7 : 0) + (trans_b ? 13 : 0);
  const HostMatrix a(operands, trans_a ? k : m, trans_a ? m : k, Uniform(m * k, seed));
  const HostMatrix b(operands, trans_b ? n : k, trans_b ? k : n, Uniform(k * n, seed + 1));
  // beta == 0 must not read c, so it starts poisoned; otherwise both start from the same c.
  const std::vector<float> c_init = beta == 0.0f ? PoisonValues(m * n) : Uniform(m * n, seed + 2);
  HostMatrix cpu_c(c_storage, m, n, c_init);
  HostMatrix gpu_c(c_storage, m, n, c_init);

  COUPLER_ASSERT_OK(Gemm(trans_a, trans_b, alpha, a.View(), b.View(), beta, cpu_c.MutView()));

  Result<DeviceAllocation> da = ToDevice(pool, a, "gemm a");
  Result<DeviceAllocation> db = ToDevice(pool, b, "gemm b");
  Result<DeviceAllocation> dc = ToDevice(pool, gpu_c, "gemm c");
  COUPLER_ASSERT_OK(da.status());
  COUPLER_ASSERT_OK(db.status());
  COUPLER_ASSERT_OK(dc.status());
  COUPLER_ASSERT_OK(GpuGemm(trans_a, trans_b, alpha, {da->data(), operands, a.rows, a.cols},
                             {db->data(), operands, b.rows, b.cols}, beta,
                             {dc->data(), c_storage, m, n}));
  COUPLER_ASSERT_OK(dc->CopyToHost(gpu_c.bytes.data(), gpu_c.bytes.size()));
  EXPECT_TRUE(Close(cpu_c.Widened(), gpu_c.Widened(), Tolerance(c_storage, operands)));
}

TEST(KernelsTest, CudaGemmMatchesCpuForEveryTransposeAndStorage) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  Result<std::unique_ptr<DevicePool>> pool = DevicePool::Create(0, size_t{64} << 20);
  COUPLER_ASSERT_OK(pool.status());
  struct Combo {
    ElementType operands;
    ElementType c;
  };
  const Combo combos[] = {{ElementType::kFloat32, ElementType::kFloat32},
                          {ElementType::kFloat16, ElementType::kFloat16},
                          {ElementType::kBFloat16, ElementType::kBFloat16},
                          {ElementType::kFloat16, ElementType::kFloat32},
                          {ElementType::kBFloat16, ElementType::kFloat32}};
  for (const Combo& combo : combos) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        for (float beta : {0.0f, 0.5f}) {
          CheckParity(**pool, trans_a, trans_b, combo.operands, combo.c, 37, 53, 71, 1.5f, beta);
          CheckParity(**pool, trans_a, trans_b, combo.operands, combo.c, 1, 1, 1, -1.0f, beta);
          CheckParity(**pool, trans_a, trans_b, combo.operands, combo.c, 128, 96, 300, 0.25f,
                      beta);
        }
      }
    }
  }
  EXPECT_EQ((*pool)->in_use(), 0u);
}

TEST(KernelsTest, CudaGemmEmptyReductionScalesOutputByBeta) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  Result<std::unique_ptr<DevicePool>> pool = DevicePool::Create(0, size_t{1} << 20);
  COUPLER_ASSERT_OK(pool.status());
  CheckParity(**pool, false, false, ElementType::kFloat32, ElementType::kFloat32, 5, 7, 0, 1.0f,
              0.5f);
  CheckParity(**pool, false, false, ElementType::kFloat32, ElementType::kFloat32, 5, 7, 0, 1.0f,
              0.0f);
}

TEST(KernelsTest, CudaDevicePoolExhaustsThenReusesFreedBlocks) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  constexpr size_t kMiB = size_t{1} << 20;
  Result<std::unique_ptr<DevicePool>> created = DevicePool::Create(0, 4 * kMiB);
  COUPLER_ASSERT_OK(created.status());
  DevicePool& pool = **created;
  EXPECT_EQ(pool.limit(), 4 * kMiB);

  std::vector<DeviceAllocation> blocks;
  for (int i = 0; i < 4; ++i) {
    Result<DeviceAllocation> block = pool.Allocate(kMiB, "activations");
    COUPLER_ASSERT_OK(block.status());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block->data()) % DevicePool::kAlignment, 0u);
    blocks.push_back(std::move(block).value());
  }
  EXPECT_EQ(pool.in_use(), 4 * kMiB);

  Result<DeviceAllocation> more = pool.Allocate(1, "gradients");
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(more.status().message().find("out of device memory: gradients needs 1 B"),
            std::string::npos)
      << more.status().message();
  EXPECT_NE(more.status().message().find("4.0 MiB of 4.0 MiB in use"), std::string::npos)
      << more.status().message();

  // Freeing one block makes exactly that block available again, at the same address.
  void* freed = blocks[1].data();
  blocks[1] = DeviceAllocation();
  EXPECT_EQ(pool.in_use(), 3 * kMiB);
  Result<DeviceAllocation> again = pool.Allocate(kMiB, "activations");
  COUPLER_ASSERT_OK(again.status());
  EXPECT_EQ(again->data(), freed);

  // The memory is real: a round trip through it preserves the bytes.
  std::vector<uint32_t> in(kMiB / 4);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i * 2654435761u);
  std::vector<uint32_t> out(in.size(), 0);
  COUPLER_ASSERT_OK(again->CopyFromHost(in.data(), kMiB));
  COUPLER_ASSERT_OK(again->CopyToHost(out.data(), kMiB));
  EXPECT_EQ(in, out);
  EXPECT_EQ(again->CopyToHost(out.data(), kMiB + 1).code(), StatusCode::kInvalidArgument);

  blocks.clear();
  again = DeviceAllocation();
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.peak(), 4 * kMiB);
}

TEST(KernelsTest, CudaDevicePoolDefaultLimitLeavesAReserve) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  Result<std::vector<DeviceInfo>> devices = ListCudaDevices();
  COUPLER_ASSERT_OK(devices.status());
  Result<std::unique_ptr<DevicePool>> pool = DevicePool::Create(0, 0);
  COUPLER_ASSERT_OK(pool.status());
  EXPECT_GT((*pool)->limit(), 0u);
  EXPECT_LT((*pool)->limit(), (*devices)[0].total_memory);
}

TEST(KernelsTest, GpuGemmRejectsBadArgumentsBeforeTouchingTheDevice) {
  const float x = 0.0f;
  Status s =
      GpuGemm(false, false, 1.0f, {&x, ElementType::kFloat32, 4, 3},
              {&x, ElementType::kFloat32, 4, 5}, 0.0f, {nullptr, ElementType::kFloat32, 4, 5});
  EXPECT_EQ(s.code(), BuiltWithCuda() ? StatusCode::kInvalidArgument : StatusCode::kUnavailable);
  if (BuiltWithCuda()) {
    EXPECT_NE(s.message().find("op(a) is 4x3 but op(b) is 4x5"), std::string::npos)
        << s.message();
  }
  s = GpuGemm(false, false, 1.0f, {&x, ElementType::kFloat16, 4, 3},
              {&x, ElementType::kBFloat16, 3, 5}, 0.0f, {nullptr, ElementType::kFloat32, 4, 5});
  EXPECT_EQ(s.code(), BuiltWithCuda() ? StatusCode::kInvalidArgument : StatusCode::kUnavailable);
  s = GpuGemm(false, false, 1.0f, {&x, ElementType::kFloat32, 4, 3},
              {&x, ElementType::kFloat32, 3, 5}, 0.0f, {nullptr, ElementType::kFloat16, 4, 5});
  EXPECT_EQ(s.code(), BuiltWithCuda() ? StatusCode::kInvalidArgument : StatusCode::kUnavailable);
}

TEST(KernelsTest, GpuGemmAndDevicePoolAreUnavailableWithoutADevice) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  Result<std::unique_ptr<DevicePool>> pool = DevicePool::Create(0, size_t{1} << 20);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kUnavailable) << pool.status().ToString();
  float a[6] = {};
  float b[6] = {};
  float c[4] = {};
  const Status s =
      GpuGemm(false, false, 1.0f, {a, ElementType::kFloat32, 2, 3},
              {b, ElementType::kFloat32, 3, 2}, 0.0f, {c, ElementType::kFloat32, 2, 2});
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
}

}  // namespace
}  // namespace coupler::kernels
