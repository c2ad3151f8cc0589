#include "runtime/comm/mpi_communicator.h"

#include <climits>
#include <string>
#include <thread>
#include <utility>

#include "runtime/comm/mpi_error.h"
#include "runtime/comm/mpi_handles.h"
#include "runtime/comm/reduce.h"

namespace coupler::comm {
namespace {

using internal::MpiCommHandle;
using internal::MpiOpHandle;
using internal::MpiStatus;

// MPI_User_function for 16-bit floats: inout = in (op) inout, through runtime/comm/reduce.
template <DataType kType, ReduceOp kOp>
void HalfReduce(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const void* inputs[2] = {inout, in};
  ReduceBuffers(inputs, inout, static_cast<size_t>(*len), kType, kOp);
}

MPI_Datatype ToMpi(DataType type) {
  switch (type) {
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op ToMpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kMin: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

bool IsHalf(DataType type) { return type == DataType::kFloat16 || type == DataType::kBFloat16; }

Status CheckCount(size_t count, const char* what) {
  if (count > static_cast<size_t>(INT_MAX)) {
    return InvalidArgument(std::string(what) + ": count " + std::to_string(count) +
                           " exceeds MPI's int limit; split the buffer");
  }
  return Status::Ok();
}

}  // namespace

struct MpiCommunicator::Impl {
  MpiCommHandle comm;
  int rank = 0;
  int size = 1;
  MpiOpHandle half_ops[2][3];  // [fp16, bf16][sum, max, min]
  Status broken;               // set by a timeout or an MPI error: the communicator is done
  MPI_Request abandoned = MPI_REQUEST_NULL;  // the collective a timeout left pending

  ~Impl() {
    // MPI cannot cancel a collective, and freeing the communicator under one crashes Open MPI
    // when it progresses later: keep both alive until the process ends.
    if (abandoned != MPI_REQUEST_NULL) {
      comm.Release();
      for (auto& row : half_ops) {
        for (auto& op : row) op.Release();
      }
    }
  }

  MPI_Op HalfOp(DataType type, ReduceOp op) const {
    return half_ops[type == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)].get();
  }

  // Polls the request until it completes or the deadline passes. Spins (yielding) briefly, then
  // sleeps with a growing pause, so an oversubscribed node still makes progress.
  Status Wait(MPI_Request* request, const std::string& what, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(10);
    for (int polls = 0;; ++polls) {
      int done = 0;
      Status status = MpiStatus(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!status.ok()) return Break(status.WithContext(what));
      if (done) return Status::Ok();
      if (std::chrono::steady_clock::now() >= deadline) {
        abandoned = *request;
        return Break(DeadlineExceeded(
            what + " did not complete within " + std::to_string(timeout.count()) + " ms on rank " +
            std::to_string(rank) + " of " + std::to_string(size) +
            ": a peer stalled or died (MPI does not say which ranks did not arrive)"));
      }
      if (polls < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    }
  }

  Status Break(Status status) {
    broken = status;
    return status;
  }

  Status CheckUsable(const char* what) const {
    if (broken.ok()) return Status::Ok();
    return Aborted(std::string(what) + ": communicator is broken by an earlier failure: " +
                   broken.ToString());
  }
};

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl, std::chrono::milliseconds timeout)
    : Communicator(timeout), impl_(std::move(impl)) {}

MpiCommunicator::~MpiCommunicator() = default;

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(
    std::chrono::milliseconds timeout) {
  int initialized = 0;
  COUPLER_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  if (!initialized) return Unavailable("MpiCommunicator: MPI is not initialized (start an MpiSession)");
  auto impl = std::make_unique<Impl>();
  MPI_Comm dup = MPI_COMM_NULL;
  COUPLER_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  impl->comm = MpiCommHandle(dup);
  COUPLER_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  COUPLER_MPI_RETURN_IF_ERROR(MPI_Comm_rank(dup, &impl->rank));
  COUPLER_MPI_RETURN_IF_ERROR(MPI_Comm_size(dup, &impl->size));

  MPI_User_function* functions[2][3] = {
      {&HalfReduce<DataType::kFloat16, ReduceOp::kSum>,
       &HalfReduce<DataType::kFloat16, ReduceOp::kMax>,
       &HalfReduce<DataType::kFloat16, ReduceOp::kMin>},
      {&HalfReduce<DataType::kBFloat16, ReduceOp::kSum>,
       &HalfReduce<DataType::kBFloat16, ReduceOp::kMax>,
       &HalfReduce<DataType::kBFloat16, ReduceOp::kMin>}};
  for (int f = 0; f < 2; ++f) {
    for (int o = 0; o < 3; ++o) {
      MPI_Op op = MPI_OP_NULL;
      COUPLER_MPI_RETURN_IF_ERROR(MPI_Op_create(functions[f][o], /*commute=*/1, &op));
      impl->half_ops[f][o] = MpiOpHandle(op);
    }
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(impl), timeout));
}

int MpiCommunicator::rank() const { return impl_->rank; }
int MpiCommunicator::size() const { return impl_->size; }

Status MpiCommunicator::AllReduce(const void* send, void* recv, size_t count, DataType type,
                                  ReduceOp op) {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("AllReduce"));
  COUPLER_RETURN_IF_ERROR(CheckAllReduceArgs(send, recv, count));
  COUPLER_RETURN_IF_ERROR(CheckCount(count, "AllReduce"));
  const std::string what = "AllReduce(count " + std::to_string(count) + ", " +
                           std::string(DataTypeName(type)) + ", " +
                           std::string(ReduceOpName(op)) + ")";
  const MPI_Op mpi_op = IsHalf(type) ? impl_->HalfOp(type, op) : ToMpi(op);
  MPI_Request request = MPI_REQUEST_NULL;
  Status status = MpiStatus(
      MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                     ToMpi(type), mpi_op, impl_->comm.get(), &request),
      "MPI_Iallreduce");
  if (!status.ok()) return impl_->Break(status.WithContext(what));
  return impl_->Wait(&request, what, timeout());
}

Status MpiCommunicator::Broadcast(void* buf, size_t count, DataType type, int root) {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("Broadcast"));
  COUPLER_RETURN_IF_ERROR(CheckBroadcastArgs(buf, count, root));
  COUPLER_RETURN_IF_ERROR(CheckCount(count, "Broadcast"));
  const std::string what = "Broadcast(count " + std::to_string(count) + ", " +
                           std::string(DataTypeName(type)) + ", root " + std::to_string(root) + ")";
  MPI_Request request = MPI_REQUEST_NULL;
  Status status = MpiStatus(MPI_Ibcast(buf, static_cast<int>(count), ToMpi(type), root,
                                       impl_->comm.get(), &request),
                            "MPI_Ibcast");
  if (!status.ok()) return impl_->Break(status.WithContext(what));
  return impl_->Wait(&request, what, timeout());
}

Status MpiCommunicator::Barrier() {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("Barrier"));
  MPI_Request request = MPI_REQUEST_NULL;
  Status status = MpiStatus(MPI_Ibarrier(impl_->comm.get(), &request), "MPI_Ibarrier");
  if (!status.ok()) return impl_->Break(status.WithContext("Barrier"));
  return impl_->Wait(&request, "Barrier()", timeout());
}

}  // namespace coupler::comm
