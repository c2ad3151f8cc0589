// Training throughput and memory per precision, one rank in process (no MPI in the timings):
// the digits MLP [64,128,10] on data/digits.csv (synthetic rows of the same shape when the file
// is absent) and a wide MLP [64,1024x4,10] on synthetic rows. For each: samples/s, peak device
// bytes, and the working set of the forward/backward pass — activations + their gradients, the
// weights as the GEMMs read them (fp32 masters, or the 16-bit copies) and the widening
// workspace — as a ratio of the fp32 run's. Then the digits run with and without what every
// step of `coupler train` records: the stop flag and the per-step history.
//   build/bin/bench_train [digits_epochs=20] [wide_steps=24]
// --gpu: the training step (forward, backward, AdamW) of a wide MLP [1024, 4096x4, 16] on the
// CUDA backend, fp32 vs bf16, and their ratio; says so and exits 0 without a CUDA device.
//   build/bin/bench_train --gpu [steps=50]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "train/comm/in_process_communicator.h"
#include "train/memory/memory_budget.h"
#include "train/backend/train_backend.h"
#include "train/data/dataset.h"
#include "train/model/mlp.h"
#include "train/model/optimizer.h"
#include "train/trainer.h"

namespace {

using namespace coupler;
using namespace coupler::train;

Dataset Synthetic(size_t rows, size_t features, size_t classes) {
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.num_classes = classes;
  d.x.resize(rows * features);
  d.y.resize(rows);
  uint64_t state = 42;
  for (float& v : d.x) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(state >> 40) * 0x1p-24f * 2.0f - 1.0f;
  }
  for (size_t r = 0; r < rows; ++r) d.y[r] = static_cast<int32_t>(r % classes);
  return d;
}

struct Case {
  std::string name;
  TrainConfig config;
  Split split;
};

double Mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void RunCase(const Case& c) {
  std::printf("\n%s: layers", c.name.c_str());
  for (size_t w : c.config.layers) std::printf(" %zu", w);
  std::printf(", micro_batch %zu, %lld epoch(s) of %zu rows\n", c.config.micro_batch,
              static_cast<long long>(c.config.epochs), c.split.train.rows);
  std::printf("%-6s %12s %12s %12s %12s %12s %12s %8s\n", "prec", "samples/s", "peak MiB",
              "act MiB", "weights MiB", "wspace MiB", "working MiB", "vs fp32");
  double fp32_working = 0;
  for (ElementType p : {ElementType::kFloat32, ElementType::kBFloat16, ElementType::kFloat16}) {
    TrainerOptions options;
    options.config = c.config;
    options.config.precision = p;
    options.progress_interval_s = 1e9;
    comm::InProcessGroup group(1);
    auto report = RunTraining(options, c.split, TrainCommunicators::Host(group.communicator(0)));
    if (!report.ok()) {
      std::printf("%-6s failed: %s\n", std::string(PrecisionName(p)).c_str(),
                  report.status().ToString().c_str());
      continue;
    }
    const double working = static_cast<double>(report->peak_activation_bytes +
                                               report->compute_weight_bytes +
                                               report->workspace_bytes);
    if (p == ElementType::kFloat32) fp32_working = working;
    std::printf("%-6s %12.0f %12.2f %12.2f %12.2f %12.2f %12.2f %8.2f\n",
                std::string(PrecisionName(p)).c_str(), report->samples_per_s,
                Mib(report->peak_device_bytes), Mib(report->peak_activation_bytes),
                Mib(report->compute_weight_bytes), Mib(report->workspace_bytes),
                working / (1024.0 * 1024.0), fp32_working > 0 ? working / fp32_working : 0.0);
  }
}

// What `coupler train` adds to every step for a graceful stop (a flag in the step's all-reduce)
// and the per-step history (a line formatted into a buffer): the digits run with neither, then
// with both, alternating, best of 3 each, since a shared machine's noise exceeds the cost.
void RunRecordingCost(const Case& c) {
  std::printf("\n%s, micro_batch %zu: the stop flag and the per-step history (best of 3)\n",
              c.name.c_str(), c.config.micro_batch);
  std::printf("%-28s %12s\n", "", "samples/s");
  const std::string history =
      (std::filesystem::temp_directory_path() / "bench_train.steps.jsonl").string();
  std::atomic<bool> stop{false};
  double best[2] = {0, 0};
  for (int round = 0; round < 3; ++round) {
    for (int with = 0; with < 2; ++with) {
      TrainerOptions options;
      options.config = c.config;
      options.progress_interval_s = 1e9;
      if (with == 1) {
        options.stop_requested = &stop;
        options.metrics_history = history;
      }
      comm::InProcessGroup group(1);
      auto report = RunTraining(options, c.split, TrainCommunicators::Host(group.communicator(0)));
      if (report.ok()) best[with] = std::max(best[with], report->samples_per_s);
    }
  }
  std::filesystem::remove(history);
  std::printf("%-28s %12.0f\n%-28s %12.0f  (%+.1f%%)\n", "neither", best[0],
              "stop flag + history", best[1],
              best[0] > 0 ? (best[1] / best[0] - 1) * 100 : 0.0);
}

// Seconds per training step of `layers` at `rows` rows in `storage`, over `steps` timed steps
// after two warm-up steps; the last step copies its loss back, which waits for the device.
Result<double> GpuStepSeconds(TrainBackend& backend, const std::vector<size_t>& layers,
                              ElementType storage, size_t rows, int steps) {
  memory::MemoryBudget budget(0, &backend.store());
  COUPLER_ASSIGN_OR_RETURN(auto mlp, Mlp::Create(layers, storage, budget, backend, 1));
  COUPLER_ASSIGN_OR_RETURN(auto opt, ParameterOptimizer::Create(OptimizerSettings{},
                                                                mlp.num_params(), budget, backend));
  COUPLER_RETURN_IF_ERROR(mlp.ReserveActivations(rows));
  const Dataset data = Synthetic(rows, layers.front(), layers.back());
  COUPLER_ASSIGN_OR_RETURN(auto x, budget.Allocate(data.x.size() * sizeof(float),
                                                   memory::MemoryKind::kData, "x"));
  COUPLER_ASSIGN_OR_RETURN(auto y, budget.Allocate(data.y.size() * sizeof(int32_t),
                                                   memory::MemoryKind::kData, "y"));
  COUPLER_RETURN_IF_ERROR(backend.CopyFromHost(x.data(), data.x.data(), x.bytes()));
  COUPLER_RETURN_IF_ERROR(backend.CopyFromHost(y.data(), data.y.data(), y.bytes()));
  auto step = [&]() -> Status {
    COUPLER_RETURN_IF_ERROR(mlp.ZeroGrads());
    COUPLER_ASSIGN_OR_RETURN(const double loss,
                             mlp.ForwardBackward(x.as<float>(), y.as<int32_t>(), rows,
                                                 1.0f / static_cast<float>(rows)));
    (void)loss;
    COUPLER_RETURN_IF_ERROR(opt.Step(mlp.params(), mlp.grads(), 1e-3f));
    return mlp.RefreshComputeCopies();
  };
  for (int i = 0; i < 2; ++i) COUPLER_RETURN_IF_ERROR(step());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) COUPLER_RETURN_IF_ERROR(step());
  float sync = 0;  // a blocking copy: every step above has finished on the device
  COUPLER_RETURN_IF_ERROR(backend.CopyToHost(&sync, mlp.params(), sizeof(float)));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return elapsed / steps;
}

int RunGpu(int steps) {
  if (!kernels::BuiltWithCuda() || !kernels::HaveCudaDevice()) {
    std::printf("bench_train --gpu: no CUDA device (%s), nothing to time\n",
                kernels::BuiltWithCuda() ? "none visible" : "built without CUDA");
    return 0;
  }
  auto backend = TrainBackend::CreateCuda(0, 0);
  if (!backend.ok()) {
    std::fprintf(stderr, "bench_train --gpu: %s\n", backend.status().ToString().c_str());
    return 1;
  }
  const std::vector<size_t> layers = {1024, 4096, 4096, 4096, 4096, 16};
  const size_t rows = 1024;
  std::printf("GPU training step on %s: layers", (*backend)->name().c_str());
  for (size_t w : layers) std::printf(" %zu", w);
  std::printf(", %zu rows, AdamW, %d steps\n", rows, steps);
  std::printf("%-6s %12s %14s %10s\n", "prec", "ms/step", "samples/s", "vs fp32");
  double fp32 = 0;
  for (ElementType storage : {ElementType::kFloat32, ElementType::kBFloat16}) {
    auto seconds = GpuStepSeconds(**backend, layers, storage, rows, steps);
    if (!seconds.ok()) {
      std::printf("%-6s failed: %s\n", ShortElementTypeName(storage),
                  seconds.status().ToString().c_str());
      continue;
    }
    if (storage == ElementType::kFloat32) fp32 = *seconds;
    std::printf("%-6s %12.3f %14.0f %10.2f\n", ShortElementTypeName(storage), *seconds * 1e3,
                static_cast<double>(rows) / *seconds, fp32 > 0 ? fp32 / *seconds : 0.0);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--gpu") {
    return RunGpu(argc > 2 ? std::max(1, std::atoi(argv[2])) : 50);
  }
  if (argc > 1 && std::string(argv[1]).starts_with("-")) {
    std::printf("usage: bench_train [digits_epochs=20] [wide_steps=24]   CPU backend, in process\n"
                "       bench_train --gpu [steps=50]   wide MLP step on the CUDA backend, fp32 vs "
                "bf16 (speed-up ratio)\n");
    return 0;
  }
  const int64_t digits_epochs = argc > 1 ? std::atoll(argv[1]) : 20;
  const int64_t wide_steps = argc > 2 ? std::atoll(argv[2]) : 24;

  Case digits;
  digits.name = "digits MLP";
  const std::string csv = std::string(COUPLER_SOURCE_DIR) + "/data/digits.csv";
  auto loaded = std::filesystem::exists(csv) ? LoadDataset(csv, "label")
                                             : Result<Dataset>(Synthetic(1797, 64, 10));
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
    return 1;
  }
  digits.split = SplitDataset(*loaded, 0.2, 1234);
  digits.config.layers = {64, 128, 10};
  digits.config.lr = 0.003f;
  digits.config.epochs = digits_epochs;
  for (size_t mb : {16, 256}) {
    digits.config.global_batch = mb;
    digits.config.micro_batch = mb;
    digits.config.accumulate = 1;
    RunCase(digits);
  }
  digits.config.global_batch = digits.config.micro_batch = 16;
  RunRecordingCost(digits);

  Case wide;
  wide.name = "wide MLP";
  wide.config.layers = {64, 1024, 1024, 1024, 1024, 10};
  wide.config.lr = 1e-4f;
  wide.config.global_batch = 512;
  wide.config.micro_batch = 512;
  wide.config.accumulate = 1;
  wide.config.epochs = 1;
  wide.split = SplitDataset(Synthetic(static_cast<size_t>(wide_steps) * 512 + 1, 64, 10), 0.0, 1);
  RunCase(wide);
  return 0;
}
