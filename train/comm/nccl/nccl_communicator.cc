#include "train/comm/nccl/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "train/comm/nccl/cuda_handles.h"
#include "train/comm/nccl/nccl_error.h"

namespace coupler::comm {
namespace {

using internal::CudaDeviceBuffer;
using internal::CudaStream;
using internal::NcclStatus;

// The id travels over the bootstrap communicator as int32 words: there is no byte ElementType.
static_assert(sizeof(ncclUniqueId) % sizeof(int32_t) == 0, "ncclUniqueId is not whole words");
constexpr size_t kIdWords = sizeof(ncclUniqueId) / sizeof(int32_t);

ncclDataType_t ToNccl(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return ncclFloat32;
    case ElementType::kFloat16: return ncclFloat16;
    case ElementType::kBFloat16: return ncclBfloat16;
    case ElementType::kInt32: return ncclInt32;
    case ElementType::kInt64:
    case ElementType::kDatetime64: return ncclInt64;
    case ElementType::kBool: return ncclUint8;
    case ElementType::kFloat64: return ncclFloat64;
  }
  return ncclFloat32;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
  }
  return ncclSum;
}

// An enqueue on a non-blocking communicator may answer ncclInProgress: the work is queued and
// its outcome arrives through ncclCommGetAsyncError.
bool Enqueued(ncclResult_t rc) { return rc == ncclSuccess || rc == ncclInProgress; }

}  // namespace

struct NcclCommunicator::Impl {
  int rank = 0;
  int size = 1;
  int device = 0;
  CudaStream stream;
  CudaDeviceBuffer scratch;  // Barrier's one int32, zeroed once (a sum of zeros stays zero)
  ncclComm_t comm = nullptr;
  Status broken;  // set by a timeout or an error: the NCCL communicator has been aborted
  std::chrono::milliseconds timeout{0};

  ~Impl() {
    if (comm == nullptr) return;  // never created, or already aborted by Break
    cudaSetDevice(device);
    // Finalize waits for the peers to quiesce; a peer gone at this point must not hang exit.
    ncclResult_t rc = ncclCommFinalize(comm);
    if (Enqueued(rc)) rc = Wait("ncclCommFinalize", timeout).ok() ? ncclSuccess : ncclInternalError;
    if (comm != nullptr && rc == ncclSuccess && ncclCommDestroy(comm) == ncclSuccess) comm = nullptr;
    if (comm != nullptr) ncclCommAbort(comm);
    comm = nullptr;
    // scratch, then stream, are released by their members after this body.
  }

  Status SetUpDevice() {
    int count = 0;
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count) {
      return InvalidArgument("CUDA device " + std::to_string(device) + " is not one of the " +
                             std::to_string(count) + " visible to rank " + std::to_string(rank));
    }
    COUPLER_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    cudaStream_t s = nullptr;
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    stream = CudaStream(s);
    void* p = nullptr;
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, sizeof(int32_t)));
    scratch = CudaDeviceBuffer(p);
    // On our stream: a non-blocking stream is not ordered after the legacy default stream.
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, sizeof(int32_t), stream.get()));
    return Status::Ok();
  }

  Status Join(const ncclUniqueId& id) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // a blocking init or first collective would hang on a missing peer
    const std::string what = "NCCL setup (ncclCommInitRankConfig, " + std::to_string(size) +
                             " ranks)";
    const ncclResult_t rc = ncclCommInitRankConfig(&comm, size, id, rank, &config);
    if (!Enqueued(rc)) return Break(NcclStatus(rc, "ncclCommInitRankConfig", comm).WithContext(what));
    return Wait(what, timeout);
  }

  // Polls until NCCL has enqueued the work and the stream has drained it, or the deadline
  // passes. Spins (yielding) briefly, then sleeps with a growing pause, like the MPI backend.
  Status Wait(const std::string& what, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    auto pause = std::chrono::microseconds(10);
    for (int polls = 0;; ++polls) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t rc = ncclCommGetAsyncError(comm, &async);
      if (rc != ncclSuccess) {
        return Break(NcclStatus(rc, "ncclCommGetAsyncError", comm).WithContext(what));
      }
      if (!Enqueued(async)) {
        return Break(NcclStatus(async, "NCCL (asynchronous error)", comm).WithContext(what));
      }
      if (async == ncclSuccess) {
        const cudaError_t query = cudaStreamQuery(stream.get());
        if (query == cudaSuccess) return Status::Ok();
        if (query != cudaErrorNotReady) {
          return Break(kernels::CudaErrorStatus(query, "cudaStreamQuery", __FILE__, __LINE__)
                           .WithContext(what));
        }
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return Break(DeadlineExceeded(
            what + " did not complete within " + std::to_string(limit.count()) + " ms on rank " +
            std::to_string(rank) + " of " + std::to_string(size) +
            ": a peer stalled or died (NCCL does not say which ranks did not arrive)"));
      }
      if (polls < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    }
  }

  // After an error or a timeout NCCL's state is unknown: abort (which also stops kernels still
  // waiting on the device), never destroy.
  Status Break(Status status) {
    if (comm != nullptr) {
      cudaSetDevice(device);
      ncclCommAbort(comm);
      comm = nullptr;
    }
    broken = status;
    return status;
  }

  Status CheckUsable(const char* what) const { return CheckNotBroken(broken, what); }
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl, std::chrono::milliseconds timeout)
    : Communicator(timeout, MemorySpace::kDevice), impl_(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() = default;

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    Communicator& bootstrap, int device, std::chrono::milliseconds timeout) {
  // The id travels through host variables; every rank sees the same answer, so none is left
  // waiting in the collectives below.
  COUPLER_RETURN_IF_ERROR(
      CheckMemorySpace(bootstrap, MemorySpace::kHost, "NcclCommunicator's bootstrap"));
  auto impl = std::make_unique<Impl>();
  impl->rank = bootstrap.rank();
  impl->size = bootstrap.size();
  impl->device = device;
  impl->timeout = timeout;
  const std::string where = "NcclCommunicator on CUDA device " + std::to_string(device);

  ncclUniqueId id{};
  Status local = impl->SetUpDevice();
  if (local.ok() && impl->rank == 0) local = NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId");
  // Every rank learns whether all are ready, so none waits in the broadcast for one that gave up.
  int32_t ready = local.ok() ? 1 : 0;
  COUPLER_RETURN_IF_ERROR(bootstrap.AllReduce(&ready, &ready, 1, ElementType::kInt32, ReduceOp::kMin)
                              .WithContext(where + ": agreeing that every rank is ready"));
  if (!local.ok()) return local.WithContext(where);
  if (ready == 0) {
    return Unavailable(where + ": another rank could not set up its CUDA device or the NCCL id "
                               "(its own error says why)");
  }
  int32_t words[kIdWords];
  std::memcpy(words, &id, sizeof(id));
  COUPLER_RETURN_IF_ERROR(bootstrap.Broadcast(words, kIdWords, ElementType::kInt32, /*root=*/0)
                              .WithContext(where + ": broadcasting the ncclUniqueId"));
  std::memcpy(&id, words, sizeof(id));
  COUPLER_RETURN_IF_ERROR(bootstrap.Barrier().WithContext(where));
  COUPLER_RETURN_IF_ERROR(impl->Join(id).WithContext(where));
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(impl), timeout));
}

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
int NcclCommunicator::device() const { return impl_->device; }

Status NcclCommunicator::AllReduce(const void* send, void* recv, size_t count, ElementType type,
                                   ReduceOp op) {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("AllReduce"));
  COUPLER_RETURN_IF_ERROR(CheckAllReduceArgs(send, recv, count));
  const std::string what = "AllReduce(count " + std::to_string(count) + ", " +
                           std::string(ElementTypeName(type)) + ", " +
                           std::string(ReduceOpName(op)) + ")";
  const ncclResult_t rc = ncclAllReduce(send, recv, count, ToNccl(type), ToNccl(op), impl_->comm,
                                        impl_->stream.get());
  if (!Enqueued(rc)) return impl_->Break(NcclStatus(rc, "ncclAllReduce", impl_->comm).WithContext(what));
  return impl_->Wait(what, timeout());
}

Status NcclCommunicator::Broadcast(void* buf, size_t count, ElementType type, int root) {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("Broadcast"));
  COUPLER_RETURN_IF_ERROR(CheckBroadcastArgs(buf, count, root));
  const std::string what = "Broadcast(count " + std::to_string(count) + ", " +
                           std::string(ElementTypeName(type)) + ", root " + std::to_string(root) + ")";
  const ncclResult_t rc =
      ncclBroadcast(buf, buf, count, ToNccl(type), root, impl_->comm, impl_->stream.get());
  if (!Enqueued(rc)) return impl_->Break(NcclStatus(rc, "ncclBroadcast", impl_->comm).WithContext(what));
  return impl_->Wait(what, timeout());
}

Status NcclCommunicator::Barrier() {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("Barrier"));
  void* scratch = impl_->scratch.get();
  const ncclResult_t rc = ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, impl_->comm,
                                        impl_->stream.get());
  if (!Enqueued(rc)) {
    return impl_->Break(NcclStatus(rc, "ncclAllReduce", impl_->comm).WithContext("Barrier()"));
  }
  return impl_->Wait("Barrier()", timeout());
}

}  // namespace coupler::comm
