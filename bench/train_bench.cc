// Training throughput and memory per precision, one rank in process (no MPI in the timings):
// the digits MLP [64,128,10] on data/digits.csv (synthetic rows of the same shape when the file
// is absent) and a wide MLP [64,1024x4,10] on synthetic rows. For each: samples/s, peak device
// bytes, and the working set of the forward/backward pass — activations + their gradients, the
// weights as the GEMMs read them (fp32 masters, or the 16-bit copies) and the widening
// workspace — as a ratio of the fp32 run's.
//   build/bin/bench_train [digits_epochs=20] [wide_steps=24]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/comm/in_process_communicator.h"
#include "worker/train/dataset.h"
#include "worker/train/trainer.h"

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
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    TrainerOptions options;
    options.config = c.config;
    options.config.precision = p;
    options.progress_interval_s = 1e9;
    comm::InProcessGroup group(1);
    auto report = RunTraining(options, c.split, group.communicator(0));
    if (!report.ok()) {
      std::printf("%-6s failed: %s\n", std::string(PrecisionName(p)).c_str(),
                  report.status().ToString().c_str());
      continue;
    }
    const double working = static_cast<double>(report->peak_activation_bytes +
                                               report->compute_weight_bytes +
                                               report->workspace_bytes);
    if (p == Precision::kFp32) fp32_working = working;
    std::printf("%-6s %12.0f %12.2f %12.2f %12.2f %12.2f %12.2f %8.2f\n",
                std::string(PrecisionName(p)).c_str(), report->samples_per_s,
                Mib(report->peak_device_bytes), Mib(report->peak_activation_bytes),
                Mib(report->compute_weight_bytes), Mib(report->workspace_bytes),
                working / (1024.0 * 1024.0), fp32_working > 0 ? working / fp32_working : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]).starts_with("-")) {
    std::printf("usage: bench_train [digits_epochs=20] [wide_steps=24]  (CPU backend only)\n");
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
