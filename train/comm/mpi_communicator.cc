#include "train/comm/mpi_communicator.h"

#include <climits>
#include <string>
#include <thread>
#include <utility>

#include "train/comm/mpi_error.h"
#include "train/comm/mpi_handles.h"
#include "train/comm/reduce.h"

namespace coupler::comm {
namespace {

using internal::MpiCommHandle;
using internal::MpiOpHandle;
using internal::MpiStatus;

// MPI_User_function for 16-bit floats: inout = in (op) inout, through train/comm/reduce.
template <ElementType kType, ReduceOp kOp>
void HalfReduce(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const void* inputs[2] = {inout, in};
  ReduceBuffers(inputs, inout, static_cast<size_t>(*len), kType, kOp);
}

MPI_Datatype ToMpi(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return MPI_FLOAT;
    case ElementType::kFloat64: return MPI_DOUBLE;
    case ElementType::kInt32: return MPI_INT32_T;
    case ElementType::kInt64:
    case ElementType::kDatetime64: return MPI_INT64_T;
    case ElementType::kBool: return MPI_UINT8_T;
    case ElementType::kFloat16:
    case ElementType::kBFloat16: return MPI_UINT16_T;
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

bool IsHalf(ElementType type) { return type == ElementType::kFloat16 || type == ElementType::kBFloat16; }

Status CheckCount(size_t count, const char* what) {
  if (count > static_cast<size_t>(INT_MAX)) {
    return InvalidArgument(std::string(what) + ": count " + std::to_string(count) +
                           " exceeds MPI's int limit; split the buffer");
  }
  return Status::Ok();
}

// Open MPI's non-blocking all-reduce (coll/libnbc) picks a binomial reduce + broadcast whenever
// the call is in place or there are fewer than 4 ranks. With 2 or 3 ranks that moves each byte
// twice in a row where a reduce-scatter + allgather (Rabenseifner) moves half of it each way at
// once: binomial was 1.5-2x a blocking MPI_Allreduce at 800 KiB-25 MiB with 2 ranks, Rabenseifner
// on par. From 4 ranks up libnbc's choice stays (measured no worse on the 2-core machines).
// Set through the MPI tool interface unless someone already chose
// (OMPI_MCA_coll_libnbc_iallreduce_algorithm); other MPIs lack the variable and keep theirs.
void PreferReduceScatterAllgather() {
  int index = -1;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) != MPI_SUCCESS) return;
  MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return;
  int value = -1;
  if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS && value == 0) {
    constexpr int kRabenseifner = 3;
    MPI_T_cvar_write(handle, &kRabenseifner);
  }
  MPI_T_cvar_handle_free(&handle);
}

// Open MPI sets mpi_yield_when_idle when mpirun placed more ranks than cores: its own blocking
// calls then yield between polls so the peer sharing the core can run, and so does Wait.
bool MpiYieldsWhenIdle() {
  int index = -1;
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) != MPI_SUCCESS) return false;
  MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return false;
  int value = 0;  // a C bool inside Open MPI: only the low byte is written
  const bool yields = count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS && value != 0;
  MPI_T_cvar_handle_free(&handle);
  return yields;
}

}  // namespace

struct MpiCommunicator::Impl {
  MpiCommHandle comm;
  int rank = 0;
  int size = 1;
  MpiOpHandle half_ops[2][3];  // [fp16, bf16][sum, max, min]
  Status broken;               // set by a timeout or an MPI error: the communicator is done
  bool yield_when_idle = false;  // more ranks than cores here: let the peers run while polling
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

  MPI_Op HalfOp(ElementType type, ReduceOp op) const {
    return half_ops[type == ElementType::kFloat16 ? 0 : 1][static_cast<int>(op)].get();
  }

  // Polls the request until it completes or the deadline passes. A non-blocking collective
  // advances only inside MPI_Test, so: spin for the first 2 ms (ranks arriving together, a peer
  // descheduled for a time slice), then sleep 1/32 of the time waited so far (at most 1 ms), so
  // a long wait for a slow peer leaves the core to others yet adds at most ~3% to it. The spin
  // yields only where Open MPI's own calls do (more ranks than cores): on a machine loaded by
  // other processes a yield hands the core away for a whole time slice (800 KiB all-reduce at
  // np=2 on 2 busy cores: 0.3 ms spinning, 2-3.6 ms yielding; bench/allreduce_bench.cc).
  Status Wait(MPI_Request* request, const std::string& what, std::chrono::milliseconds timeout) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    for (;;) {
      int done = 0;
      Status status = MpiStatus(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!status.ok()) return Break(status.WithContext(what));
      if (done) return Status::Ok();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        abandoned = *request;
        return Break(DeadlineExceeded(
            what + " did not complete within " + std::to_string(timeout.count()) + " ms on rank " +
            std::to_string(rank) + " of " + std::to_string(size) +
            ": a peer stalled or died (MPI does not say which ranks did not arrive)"));
      }
      const auto waited = now - start;
      if (waited >= std::chrono::milliseconds(2)) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            waited / 32, std::chrono::milliseconds(1)));
      } else if (yield_when_idle) {
        std::this_thread::yield();
      }
    }
  }

  Status Break(Status status) {
    broken = status;
    return status;
  }

  Status CheckUsable(const char* what) const { return CheckNotBroken(broken, what); }
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
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) == MPI_SUCCESS) {
    if (impl->size < 4) PreferReduceScatterAllgather();  // every rank alike, before any all-reduce
    impl->yield_when_idle = MpiYieldsWhenIdle();
    MPI_T_finalize();
  }

  MPI_User_function* functions[2][3] = {
      {&HalfReduce<ElementType::kFloat16, ReduceOp::kSum>,
       &HalfReduce<ElementType::kFloat16, ReduceOp::kMax>,
       &HalfReduce<ElementType::kFloat16, ReduceOp::kMin>},
      {&HalfReduce<ElementType::kBFloat16, ReduceOp::kSum>,
       &HalfReduce<ElementType::kBFloat16, ReduceOp::kMax>,
       &HalfReduce<ElementType::kBFloat16, ReduceOp::kMin>}};
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

Status MpiCommunicator::AllReduce(const void* send, void* recv, size_t count, ElementType type,
                                  ReduceOp op) {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("AllReduce"));
  COUPLER_RETURN_IF_ERROR(CheckAllReduceArgs(send, recv, count));
  COUPLER_RETURN_IF_ERROR(CheckCount(count, "AllReduce"));
  const std::string what = "AllReduce(count " + std::to_string(count) + ", " +
                           std::string(ElementTypeName(type)) + ", " +
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

Status MpiCommunicator::Broadcast(void* buf, size_t count, ElementType type, int root) {
  COUPLER_RETURN_IF_ERROR(impl_->CheckUsable("Broadcast"));
  COUPLER_RETURN_IF_ERROR(CheckBroadcastArgs(buf, count, root));
  COUPLER_RETURN_IF_ERROR(CheckCount(count, "Broadcast"));
  const std::string what = "Broadcast(count " + std::to_string(count) + ", " +
                           std::string(ElementTypeName(type)) + ", root " + std::to_string(root) + ")";
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
