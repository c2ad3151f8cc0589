// All-reduce of a model's gradients, five ways, at whatever np mpirun starts (an MPI program):
//   raw:        one MPI_Allreduce(MPI_IN_PLACE, MPI_FLOAT, MPI_SUM) over all the bytes at once,
//               in one contiguous buffer — the floor for moving these bytes;
//   fused:      what the trainer does: GradientReducer (25 MiB buckets) over MpiCommunicator
//               (MPI_Iallreduce polled against the deadline) on the gradients' one buffer,
//               reduced in place; at a power-of-two np the mean rides in the loss gradient's
//               scale (AllReduceSum, no pass over the bytes), otherwise AllReduceMean;
//   divided:    the same buffer through AllReduceMean: a pass dividing by the ranks after it;
//   staged:     AllReduceMean over tensors allocated one by one: staging copies in and out;
//   per tensor: one MpiCommunicator::AllReduce per tensor, then the mean.
// Two models: 200 tensors of 4 KiB (800 KiB), and a 25 MiB mix of large and small tensors.
// They run interleaved (in rotating order), each after a barrier, so load drift on a shared
// machine hits them alike; rank 0 reports the median (and min) per-call time.
// Usage: mpirun -np N bench_allreduce [small_iters=200] [large_iters=50]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "train/comm/gradient_reducer.h"
#include "train/comm/mpi_communicator.h"
#include "train/comm/mpi_include.h"
#include "train/comm/mpi_session.h"

namespace coupler::comm {
namespace {

struct Model {
  std::string name;
  std::vector<size_t> counts;  // float32 elements per tensor
  int iters = 0;
};

// 25 MiB exactly (6,553,600 floats), in 52 tensors: an embedding (4 MiB), 10 blocks of one
// 2 MiB weight and four 1024-element vectors (bias, norms), and an 864 KiB head.
Model LargeModel(int iters) {
  Model m{"25 MiB mix, 52 tensors", {}, iters};
  m.counts.push_back(1 << 20);
  for (int b = 0; b < 10; ++b) {
    m.counts.push_back(1 << 19);
    for (int v = 0; v < 4; ++v) m.counts.push_back(1024);
  }
  m.counts.push_back(221'184);
  return m;
}

Model SmallModel(int iters) { return {"200 x 4 KiB (800 KiB)", std::vector<size_t>(200, 1024), iters}; }

struct Stat {
  double median = 0;
  double min = 0;
};

Stat Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? Stat{} : Stat{v[v.size() / 2], v.front()};
}

void Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "bench_allreduce: %s: %s\n", what, s.ToString().c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

struct Figures {
  Stat raw, fused, divided, staged, per_tensor;  // ms per call
  size_t fused_collectives = 0;
};

Figures Run(Communicator& comm, const Model& model) {
  size_t total = 0;
  for (size_t c : model.counts) total += c;
  std::vector<std::vector<float>> grads;
  std::vector<GradientTensor> views;
  for (size_t c : model.counts) {
    grads.emplace_back(c, 0.5f + static_cast<float>(comm.rank()));
    views.push_back({grads.back().data(), c});
  }
  // The trainer's layout: every gradient in one buffer (train/model/mlp.h), one tensor to the
  // reducer. Sums of zeros stay finite over any number of calls.
  std::vector<float> arena(total, 0.0f);
  const GradientTensor arena_view{arena.data(), total};
  std::vector<float> divided(total, 0.5f + static_cast<float>(comm.rank()));
  const GradientTensor divided_view{divided.data(), total};
  std::vector<float> raw(total, 0.0f);
  GradientReducer reducer(comm);
  const float inv = 1.0f / static_cast<float>(comm.size());
  const bool mean_in_scale = (comm.size() & (comm.size() - 1)) == 0;  // as train/trainer.cc

  Figures f;
  auto raw_call = [&] {
    MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  };
  auto fused_call = [&] {
    Result<size_t> n = mean_in_scale ? reducer.AllReduceSum({&arena_view, 1})
                                     : reducer.AllReduceMean({&arena_view, 1});
    if (!n.ok()) Fail("GradientReducer", n.status());
    f.fused_collectives = *n;
  };
  auto divided_call = [&] {
    Result<size_t> n = reducer.AllReduceMean({&divided_view, 1});
    if (!n.ok()) Fail("GradientReducer", n.status());
  };
  auto staged_call = [&] {
    Result<size_t> n = reducer.AllReduceMean(views);
    if (!n.ok()) Fail("GradientReducer", n.status());
  };
  auto per_tensor_call = [&] {
    for (GradientTensor& t : views) {
      Status s = comm.AllReduce(t.data, t.data, t.count, ElementType::kFloat32, ReduceOp::kSum);
      if (!s.ok()) Fail("AllReduce", s);
      for (size_t i = 0; i < t.count; ++i) t.data[i] *= inv;
    }
  };
  auto timed = [](auto& call) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };

  // The order rotates every iteration, so no method always runs right after the heaviest one.
  constexpr int kMethods = 5;
  std::vector<double> samples[kMethods];
  const int warmup = std::max(3, model.iters / 10);
  for (int i = -warmup; i < model.iters; ++i) {
    for (int k = 0; k < kMethods; ++k) {
      const int method = (i + warmup + k) % kMethods;
      const double ms = method == 0   ? timed(raw_call)
                        : method == 1 ? timed(fused_call)
                        : method == 2 ? timed(divided_call)
                        : method == 3 ? timed(staged_call)
                                      : timed(per_tensor_call);
      if (i >= 0) samples[method].push_back(ms);
    }
  }
  f.raw = Summarize(samples[0]);
  f.fused = Summarize(samples[1]);
  f.divided = Summarize(samples[2]);
  f.staged = Summarize(samples[3]);
  f.per_tensor = Summarize(samples[4]);
  return f;
}

int Main(int argc, char** argv) {
  auto session = MpiSession::Start(&argc, &argv);
  if (!session.ok()) {
    std::fprintf(stderr, "MpiSession: %s\n", session.status().ToString().c_str());
    return 1;
  }
  auto comm = MpiCommunicator::Create();
  if (!comm.ok()) {
    std::fprintf(stderr, "MpiCommunicator: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int small_iters = argc > 1 ? std::atoi(argv[1]) : 200;
  const int large_iters = argc > 2 ? std::atoi(argv[2]) : 50;
  const bool root = (*comm)->rank() == 0;
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  if (root) {
    std::printf("bench_allreduce: np=%d, %.*s\n", (*comm)->size(),
                static_cast<int>(std::string_view(version).find_first_of(",\n")), version);
    std::printf("%-24s %-32s %11s %10s %8s %8s\n", "model", "method", "collectives",
                "median ms", "min ms", "vs raw");
  }
  for (const Model& model : {SmallModel(small_iters), LargeModel(large_iters)}) {
    const Figures f = Run(**comm, model);
    if (!root) continue;
    auto row = [&](const char* name, const char* method, size_t collectives, Stat s) {
      std::printf("%-24s %-32s %11zu %10.3f %8.3f %8.2f\n", name, method, collectives, s.median,
                  s.min, s.median / f.raw.median);
    };
    row(model.name.c_str(), "raw MPI_Allreduce, one buffer", 1, f.raw);
    row("", "fused GradientReducer, as trained", f.fused_collectives, f.fused);
    row("", "fused, divided after the reduce", f.fused_collectives, f.divided);
    row("", "fused, tensors one by one", f.fused_collectives, f.staged);
    row("", "per tensor MpiCommunicator", model.counts.size(), f.per_tensor);
    std::printf("%-24s fused/raw %.2f (target <= 1.15), divided/raw %.2f, staged/raw %.2f, "
                "per-tensor/fused %.1f (target >= 4 at np=4); medians of %d\n",
                "", f.fused.median / f.raw.median, f.divided.median / f.raw.median,
                f.staged.median / f.raw.median, f.per_tensor.median / f.fused.median,
                model.iters);
  }
  return 0;
}

}  // namespace
}  // namespace coupler::comm

int main(int argc, char** argv) { return coupler::comm::Main(argc, argv); }
