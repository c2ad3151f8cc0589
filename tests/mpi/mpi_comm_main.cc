// MpiCommunicator across real ranks (run under mpirun at 2 and 4 ranks): all-reduce for every
// type and op, broadcast, barrier, the gradient reducer, and a stalled peer turning into
// DeadlineExceeded. Every rank checks its own results; the job fails if any rank saw a mismatch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "train/comm/gradient_reducer.h"
#include "train/comm/mpi_include.h"
#include "train/comm/mpi_communicator.h"
#include "train/comm/mpi_session.h"
#include "runtime/precision/half.h"
#include "tests/comm_test_values.h"
#include "tests/mpi/mpi_check.h"

namespace coupler::comm {
namespace {

using testing::Load;
using testing::Store;
using testing::Value;

using mpitest::Check;
using mpitest::CheckOk;
using mpitest::g_checks;
using mpitest::g_failures;


void TestAllReduce(Communicator& c) {
  constexpr size_t kCount = 1000;
  const ElementType types[] = {ElementType::kFloat32, ElementType::kFloat16, ElementType::kBFloat16,
                            ElementType::kInt32,   ElementType::kInt64,   ElementType::kFloat64};
  for (ElementType type : types) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (bool in_place : {false, true}) {
        const std::string what = "AllReduce " + std::string(ElementTypeName(type)) + " " +
                                 std::string(ReduceOpName(op)) + (in_place ? " in place" : "");
        std::vector<unsigned char> send(kCount * ElementSize(type));
        std::vector<unsigned char> recv(send.size());
        for (size_t i = 0; i < kCount; ++i) Store(type, Value(c.rank(), i), send.data(), i);
        void* out = in_place ? send.data() : recv.data();
        CheckOk(c.AllReduce(send.data(), out, kCount, type, op), c.rank(), what);
        size_t bad = 0;
        for (size_t i = 0; i < kCount; ++i) {
          double want = Value(0, i);
          for (int q = 1; q < c.size(); ++q) {
            const double v = Value(q, i);
            want = op == ReduceOp::kSum ? want + v : op == ReduceOp::kMax ? std::max(want, v)
                                                                          : std::min(want, v);
          }
          if (Load(type, out, i) != want) ++bad;
        }
        Check(bad == 0, c.rank(), what + ": " + std::to_string(bad) + " wrong elements");
      }
    }
  }
}

void TestBroadcastAndBarrier(Communicator& c) {
  const int root = c.size() - 1;
  std::vector<int64_t> ints(100);
  std::vector<uint16_t> halves(100);
  for (size_t i = 0; i < ints.size(); ++i) {
    ints[i] = c.rank() * 1000 + static_cast<int64_t>(i);
    halves[i] = precision::FloatToBf16Bits(static_cast<float>(c.rank()) + 0.5f);
  }
  CheckOk(c.Broadcast(ints.data(), ints.size(), ElementType::kInt64, root), c.rank(), "Broadcast int64");
  CheckOk(c.Broadcast(halves.data(), halves.size(), ElementType::kBFloat16, root), c.rank(),
          "Broadcast bf16");
  bool ok = true;
  for (size_t i = 0; i < ints.size(); ++i) {
    ok = ok && ints[i] == root * 1000 + static_cast<int64_t>(i) &&
         precision::Bf16BitsToFloat(halves[i]) == static_cast<float>(root) + 0.5f;
  }
  Check(ok, c.rank(), "Broadcast values from root " + std::to_string(root));
  for (int i = 0; i < 10; ++i) CheckOk(c.Barrier(), c.rank(), "Barrier");
}

void TestReducer(Communicator& c, size_t bucket_bytes, ElementType wire, size_t want_collectives) {
  const std::string what = "GradientReducer bucket " + std::to_string(bucket_bytes) + " wire " +
                           std::to_string(static_cast<int>(wire));
  std::vector<std::vector<float>> grads(200, std::vector<float>(100));
  std::vector<GradientTensor> views;
  for (size_t t = 0; t < grads.size(); ++t) {
    for (size_t i = 0; i < 100; ++i) {
      grads[t][i] = static_cast<float>(t) * 0.25f + static_cast<float>(i) * 0.5f + static_cast<float>(c.rank());
    }
    views.push_back({grads[t].data(), grads[t].size()});
  }
  GradientReducer reducer(c, {bucket_bytes, wire});
  Result<size_t> n = reducer.AllReduceMean(views);
  CheckOk(n.status(), c.rank(), what);
  if (!n.ok()) return;
  Check(*n == want_collectives, c.rank(),
        what + ": " + std::to_string(*n) + " collectives, want " + std::to_string(want_collectives));
  const double tolerance = wire == ElementType::kFloat32 ? 0.0 : 1e-2;
  size_t bad = 0;
  for (size_t t = 0; t < grads.size(); ++t) {
    for (size_t i = 0; i < 100; ++i) {
      const double want = static_cast<double>(t) * 0.25 + static_cast<double>(i) * 0.5 +
                          (c.size() - 1) / 2.0;  // mean of the rank offsets
      if (std::fabs(grads[t][i] - want) > tolerance * std::max(want, 1.0)) ++bad;
    }
  }
  Check(bad == 0, c.rank(), what + ": " + std::to_string(bad) + " wrong means");
}

// Gradients each rank divided by the ranks first, only summed (the trainer's way at a power-of-two
// group size): the same bits as the mean of the undivided ones, over real MPI.
void TestReducerSumOfDivided(Communicator& c) {
  if ((c.size() & (c.size() - 1)) != 0) return;
  std::vector<float> divided(10'000);
  std::vector<float> plain(divided.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    plain[i] = std::sin(static_cast<float>(i) * 0.37f + static_cast<float>(c.rank())) * 3.0f;
    divided[i] = plain[i] / static_cast<float>(c.size());
  }
  GradientReducer reducer(c);
  const GradientTensor divided_view{divided.data(), divided.size()};
  const GradientTensor plain_view{plain.data(), plain.size()};
  CheckOk(reducer.AllReduceSum({&divided_view, 1}).status(), c.rank(), "AllReduceSum");
  CheckOk(reducer.AllReduceMean({&plain_view, 1}).status(), c.rank(), "AllReduceMean");
  Check(divided == plain, c.rank(), "the sum of divided gradients is the mean, bit for bit");
}

// Rank 0 arrives 1.5 s late at a barrier with a 300 ms timeout: the others must get
// DeadlineExceeded naming the Barrier, not hang; rank 0's late barrier still completes.
void TestStalledPeer(int rank) {
  auto comm = MpiCommunicator::Create(std::chrono::milliseconds(300));
  CheckOk(comm.status(), rank, "Create stall communicator");
  if (!comm.ok()) return;
  Communicator& c = **comm;
  if (c.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    CheckOk(c.Barrier(), rank, "late Barrier on the stalled rank");
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const Status s = c.Barrier();
  const auto waited = std::chrono::steady_clock::now() - start;
  Check(s.code() == StatusCode::kDeadlineExceeded && s.message().find("Barrier") != std::string::npos,
        rank, "stalled peer gives DeadlineExceeded naming Barrier, got " + s.ToString());
  Check(waited >= std::chrono::milliseconds(300), rank,
        "timeout honoured");
  Check(c.Barrier().code() == StatusCode::kAborted, rank, "broken communicator returns Aborted");
}

// MpiSession starts Open MPI with mpi_yield_when_idle on (mpirun leaves it off unless the node
// is oversubscribed): a rank waiting in a collective yields its core instead of spinning, so a
// rank sharing its core with another process does not starve the peer it waits for. Read back
// through the MPI tool interface, as Open MPI resolved it.
void TestYieldsWhenIdle(int rank) {
  int provided = 0;
  Check(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, rank, "MPI_T_init_thread");
  int count = 0;
  MPI_T_cvar_get_num(&count);
  int found = -1;
  long long value = -1;
  for (int i = 0; i < count && found < 0; ++i) {
    char name[256];
    char desc[1024];
    int name_len = sizeof(name), desc_len = sizeof(desc), verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS ||
        std::string(name) != "mpi_yield_when_idle") {
      continue;
    }
    found = i;
    MPI_T_cvar_handle handle;
    int elements = 0;
    if (MPI_T_cvar_handle_alloc(i, nullptr, &handle, &elements) == MPI_SUCCESS) {
      long long buffer[4] = {0, 0, 0, 0};  // an int or a bool, whatever width Open MPI gives it
      if (MPI_T_cvar_read(handle, buffer) == MPI_SUCCESS) value = buffer[0] & 0xFF;
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  Check(found >= 0, rank, "Open MPI lists mpi_yield_when_idle");
  Check(value == 1, rank, "mpi_yield_when_idle is on, got " + std::to_string(value));
}

int Main(int argc, char** argv) {
  auto session = MpiSession::Start(&argc, &argv);
  if (!session.ok()) {
    std::fprintf(stderr, "MpiSession: %s\n", session.status().ToString().c_str());
    return 1;
  }
  auto comm_or = MpiCommunicator::Create(std::chrono::milliseconds(60'000));
  if (!comm_or.ok()) {
    std::fprintf(stderr, "MpiCommunicator: %s\n", comm_or.status().ToString().c_str());
    return 1;
  }
  Communicator& c = **comm_or;
  TestYieldsWhenIdle(c.rank());
  TestAllReduce(c);
  TestBroadcastAndBarrier(c);
  TestReducer(c, GradientReducerOptions{}.bucket_bytes, ElementType::kFloat32, 1);
  TestReducer(c, 16'000, ElementType::kFloat32, 5);
  TestReducer(c, 16'000, ElementType::kBFloat16, 3);
  TestReducer(c, 16'000, ElementType::kFloat16, 3);
  TestReducerSumOfDivided(c);
  TestStalledPeer(c.rank());
  CheckOk(c.Barrier(), c.rank(), "final Barrier");

  int32_t totals[2] = {g_failures, g_checks};
  const Status s = c.AllReduce(totals, totals, 2, ElementType::kInt32, ReduceOp::kSum);
  if (!s.ok()) {
    std::fprintf(stderr, "rank %d: summary AllReduce: %s\n", c.rank(), s.ToString().c_str());
    return 1;
  }
  if (c.rank() == 0) {
    std::printf("coupler_mpi_tests: %d ranks, %d checks, %d failures: %s\n", c.size(), totals[1],
                totals[0], totals[0] == 0 ? "PASSED" : "FAILED");
  }
  return totals[0] == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coupler::comm

int main(int argc, char** argv) { return coupler::comm::Main(argc, argv); }
