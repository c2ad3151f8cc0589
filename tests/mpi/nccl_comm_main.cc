// NcclCommunicator across real ranks (run under mpirun; label gpu): all-reduce of every type and
// op on device buffers, a 25 MiB all-reduce, broadcast, barrier, argument errors, and a stalled
// peer turning into DeadlineExceeded. Each rank drives the device of its local rank. Where a
// rank has no CUDA device (or fewer devices than ranks on its node: NCCL forbids two ranks on
// one device) every rank exits 77, which ctest reports as skipped (SKIP_RETURN_CODE).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "train/comm/mpi_communicator.h"
#include "train/comm/mpi_session.h"
#include "train/comm/nccl_factory.h"
#include "tests/comm_test_values.h"
#include "tests/mpi/mpi_check.h"

namespace coupler::comm {
namespace {

using testing::Load;
using testing::Store;
using testing::Value;

constexpr int kSkip = 77;

using mpitest::Check;
using mpitest::CheckOk;
using mpitest::g_checks;
using mpitest::g_failures;

void CheckCuda(cudaError_t rc, int rank, const std::string& what) {
  Check(rc == cudaSuccess, rank, what + ": " + cudaGetErrorString(rc));
}

// Device memory for one test buffer, filled from and read back to a host copy.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&data_, bytes) != cudaSuccess) data_ = nullptr;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  void* get() const { return data_; }
  // cudaMemcpy from pageable memory may return before the device copy lands, and the
  // communicator's own stream is not ordered after the default stream: synchronize, as the
  // NcclCommunicator contract asks of callers.
  cudaError_t Upload(const std::vector<unsigned char>& host) {
    const cudaError_t rc = cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice);
    return rc != cudaSuccess ? rc : cudaDeviceSynchronize();
  }
  cudaError_t Download(std::vector<unsigned char>& host) const {
    host.resize(bytes_);
    return cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

double Reduced(ReduceOp op, int size, size_t i) {
  double want = Value(0, i);
  for (int q = 1; q < size; ++q) {
    const double v = Value(q, i);
    want = op == ReduceOp::kSum ? want + v : op == ReduceOp::kMax ? std::max(want, v) : std::min(want, v);
  }
  return want;
}

void TestAllReduce(Communicator& c, size_t count, const std::vector<ElementType>& types) {
  for (ElementType type : types) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        const std::string what = "AllReduce " + std::to_string(count) + " " +
                                 std::string(ElementTypeName(type)) + " " +
                                 std::string(ReduceOpName(op)) + (in_place ? " in place" : "");
        std::vector<unsigned char> host(count * ElementSize(type));
        for (size_t i = 0; i < count; ++i) Store(type, Value(c.rank(), i), host.data(), i);
        DeviceBuffer send(host.size());
        DeviceBuffer recv(host.size());
        CheckCuda(send.Upload(host), c.rank(), what + ": upload");
        DeviceBuffer& out = in_place ? send : recv;
        CheckOk(c.AllReduce(send.get(), out.get(), count, type, op), c.rank(), what);
        CheckCuda(out.Download(host), c.rank(), what + ": download");
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i) {
          if (Load(type, host.data(), i) != Reduced(op, c.size(), i)) ++bad;
        }
        Check(bad == 0, c.rank(), what + ": " + std::to_string(bad) + " wrong elements");
      }
    }
  }
}

void TestBroadcastAndBarrier(Communicator& c) {
  const int root = c.size() - 1;
  for (ElementType type : {ElementType::kInt64, ElementType::kBFloat16, ElementType::kFloat32}) {
    constexpr size_t kCount = 1000;
    std::vector<unsigned char> host(kCount * ElementSize(type));
    for (size_t i = 0; i < kCount; ++i) Store(type, Value(c.rank(), i), host.data(), i);
    DeviceBuffer buf(host.size());
    CheckCuda(buf.Upload(host), c.rank(), "Broadcast upload");
    const std::string what = "Broadcast " + std::string(ElementTypeName(type)) + " from root " +
                             std::to_string(root);
    CheckOk(c.Broadcast(buf.get(), kCount, type, root), c.rank(), what);
    CheckCuda(buf.Download(host), c.rank(), what + ": download");
    size_t bad = 0;
    for (size_t i = 0; i < kCount; ++i) {
      if (Load(type, host.data(), i) != Value(root, i)) ++bad;
    }
    Check(bad == 0, c.rank(), what + ": " + std::to_string(bad) + " wrong elements");
  }
  for (int i = 0; i < 10; ++i) CheckOk(c.Barrier(), c.rank(), "Barrier");
}

void TestBadArguments(Communicator& c) {
  const Status s = c.AllReduce(nullptr, nullptr, 10, ElementType::kFloat32, ReduceOp::kSum);
  Check(s.code() == StatusCode::kInvalidArgument, c.rank(),
        "null buffers give InvalidArgument, got " + s.ToString());
  const Status b = c.Broadcast(nullptr, 0, ElementType::kFloat32, c.size());
  Check(b.code() == StatusCode::kInvalidArgument, c.rank(),
        "root out of range gives InvalidArgument, got " + b.ToString());
  CheckOk(c.Barrier(), c.rank(), "Barrier after rejected arguments");
}

// Rank 0 arrives 6 s late at a barrier with a 3 s timeout: the others must get DeadlineExceeded
// naming the Barrier (not hang), and Aborted afterwards. Rank 0 then times out on its own.
void TestStalledPeer(Communicator& bootstrap, int device) {
  const int rank = bootstrap.rank();
  auto comm = CreateNcclCommunicator(bootstrap, device, std::chrono::milliseconds(3000));
  CheckOk(comm.status(), rank, "Create stall communicator");
  if (!comm.ok()) return;
  Communicator& c = **comm;
  if (rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(6000));
    const Status late = c.Barrier();  // its peers are gone: any outcome but a hang will do
    std::fprintf(stderr, "rank 0: late Barrier on the stalled rank: %s\n", late.ToString().c_str());
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const Status s = c.Barrier();
  const auto waited = std::chrono::steady_clock::now() - start;
  Check(s.code() == StatusCode::kDeadlineExceeded && s.message().find("Barrier") != std::string::npos,
        rank, "stalled peer gives DeadlineExceeded naming Barrier, got " + s.ToString());
  Check(waited >= std::chrono::milliseconds(3000), rank, "timeout honoured");
  Check(c.Barrier().code() == StatusCode::kAborted, rank, "broken communicator returns Aborted");
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

int Main(int argc, char** argv) {
  auto session = MpiSession::Start(&argc, &argv);
  if (!session.ok()) {
    std::fprintf(stderr, "MpiSession: %s\n", session.status().ToString().c_str());
    return 1;
  }
  auto bootstrap_or = MpiCommunicator::Create(std::chrono::milliseconds(60'000));
  if (!bootstrap_or.ok()) {
    std::fprintf(stderr, "MpiCommunicator: %s\n", bootstrap_or.status().ToString().c_str());
    return 1;
  }
  Communicator& bootstrap = **bootstrap_or;
  const int local_rank = EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", bootstrap.rank());
  const int local_size = EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE", bootstrap.size());

  // Skip together: a rank that returned alone would leave the others waiting in a collective.
  int devices = 0;
  const cudaError_t rc = cudaGetDeviceCount(&devices);
  int32_t usable = rc == cudaSuccess && devices >= local_size ? 1 : 0;
  Status s = bootstrap.AllReduce(&usable, &usable, 1, ElementType::kInt32, ReduceOp::kMin);
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d: device poll: %s\n", bootstrap.rank(), s.ToString().c_str());
    return 1;
  }
  if (usable == 0) {
    std::printf("SKIP: no CUDA device for every rank (rank %d: %s, %d devices, %d local ranks)\n",
                bootstrap.rank(), rc == cudaSuccess ? "ok" : cudaGetErrorName(rc), devices,
                local_size);
    return kSkip;
  }

  const int device = local_rank;
  auto nccl_or = CreateNcclCommunicator(bootstrap, device, std::chrono::milliseconds(60'000));
  CheckOk(nccl_or.status(), bootstrap.rank(), "CreateNcclCommunicator");
  if (nccl_or.ok()) {
    Communicator& c = **nccl_or;
    Check(c.rank() == bootstrap.rank() && c.size() == bootstrap.size(), c.rank(),
          "NCCL rank and size match the bootstrap communicator");
    Check(c.memory_space() == MemorySpace::kDevice, c.rank(), "NCCL takes device memory");
    TestAllReduce(c, 1000,
                  {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16, ElementType::kInt32,
                   ElementType::kInt64, ElementType::kFloat64});
    TestAllReduce(c, size_t{25} << 18, {ElementType::kFloat32});  // 25 MiB, one default bucket
    TestBroadcastAndBarrier(c);
    TestBadArguments(c);
  }
  if (bootstrap.size() >= 2) TestStalledPeer(bootstrap, device);

  int32_t totals[2] = {g_failures, g_checks};
  s = bootstrap.AllReduce(totals, totals, 2, ElementType::kInt32, ReduceOp::kSum);
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d: summary AllReduce: %s\n", bootstrap.rank(), s.ToString().c_str());
    return 1;
  }
  if (bootstrap.rank() == 0) {
    std::printf("coupler_nccl_tests: %d ranks, %d checks, %d failures: %s\n", bootstrap.size(),
                totals[1], totals[0], totals[0] == 0 ? "PASSED" : "FAILED");
  }
  return totals[0] == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coupler::comm

int main(int argc, char** argv) { return coupler::comm::Main(argc, argv); }
