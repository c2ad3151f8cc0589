// The GPUs seen working: while a training task that asks for a GPU runs, `coupler workers` shows
// each GPU's utilization from the worker's heartbeats, or why there is none ("no GPUs",
// "no NVML: ...") rather than a 0% that would read as an idle GPU. GpuUsageOnDevice needs a
// CUDA device (label `gpu`, skipped elsewhere) and sees the task's kernels as utilization > 0.
#include <gtest/gtest.h>

#include <iostream>

#include "kernels/device.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

struct GpuSample {
  uint64_t index = 0, utilization = 0, used = 0, total = 0;
};

// One worker of `coupler workers --json`, with its GPU fields.
struct WorkerGpus {
  std::string state;
  uint64_t running = 0;
  size_t gpus = 0;  // GPUs it registered
  std::vector<GpuSample> usage;
  std::string sampling, warning;
  bool has_usage_field = false;
};

struct WorkersView {
  std::map<std::string, WorkerGpus> workers;
  std::string json;
};

WorkersView ReadWorkers(Cluster& cluster) {
  WorkersView view;
  CommandResult r = cluster.Cli({"workers", "--json"});
  view.json = r.out;
  rapidjson::Document d;
  if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError() || !d.IsArray()) return view;
  for (const auto& w : d.GetArray()) {
    WorkerGpus g;
    g.state = Str(w, "state");
    g.running = U64(w, "running");
    g.gpus = w.HasMember("gpus") && w["gpus"].IsArray() ? w["gpus"].Size() : 0;
    g.has_usage_field = w.HasMember("gpu_usage") && w["gpu_usage"].IsArray();
    if (g.has_usage_field) {
      for (const auto& u : w["gpu_usage"].GetArray()) {
        g.usage.push_back({U64(u, "index"), U64(u, "utilization_percent"), U64(u, "used_memory"),
                           U64(u, "total_memory")});
      }
    }
    g.sampling = Str(w, "gpu_sampling");
    g.warning = Str(w, "warning");
    view.workers[Str(w, "id")] = g;
  }
  return view;
}

// A training job that keeps a GPU busy for as long as it is let run: a wide MLP over a
// generated dataset, more epochs than any test waits for, ended by cancelling it (or, if the
// test dies first, by the node's timeout, which ends mpirun and the rank).
fs::path WriteBusyTrainingJob(const fs::path& dir) {
  WriteSyntheticCsv(dir / "features.csv", 4000, 64);
  WriteFile(dir / "train.yaml",
            "data: unused.csv\n"  // the node's input replaces it
            "label_column: label\n"
            "layers: [64, 2048, 2048, 10]\n"
            "optimizer: sgd\n"
            "lr: 0.0001\n"
            "epochs: 100000\n"
            "global_batch: 256\n"
            "micro_batch: 256\n"
            "accumulate: 1\n"
            "precision: fp32\n"
            "seed: 7\n");
  const fs::path spec = dir / "busy.yaml";
  WriteFile(spec, "name: gpu-busy\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [features.csv]\n"
                  "    params: {shards: 1, header: true, label_column: label}\n"
                  "  - id: train\n"
                  "    op: train\n"
                  "    inputs: [import]\n"
                  "    ranks: 1\n"
                  "    resources: {gpus: 1}\n"
                  "    params: {config: train.yaml, timeout: 45}\n");
  return spec;
}

// Cancels the job and waits until its worker runs nothing, so no training outlives the test.
void CancelAndWaitIdle(Cluster& cluster, const std::string& job, const std::string& worker) {
  const CommandResult cancel = cluster.Cli({"cancel", job});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_TRUE(WaitUntil(
      [&] {
        const WorkersView v = ReadWorkers(cluster);
        auto it = v.workers.find(worker);
        return it != v.workers.end() && it->second.running == 0;
      },
      60s, 200ms))
      << "the cancelled training still runs\n"
      << cluster.Logs();
}

TEST(GpuUsageTest, AWorkerWithoutGpusSaysSoInsteadOfZeroUtilization) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // --gpus none: a CPU worker on any machine; the GPU-asking gang runs on its CPUs.
  cluster.StartWorker("cpu-1", 2, {"--gpus", "none"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::string why;
  const std::string job = cluster.Submit(WriteBusyTrainingJob(cluster.dir()), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // While the GPU task runs, and after at least one heartbeat has been heard.
  WorkersView seen;
  ASSERT_TRUE(WaitUntil(
      [&] {
        seen = ReadWorkers(cluster);
        const auto it = seen.workers.find("cpu-1");
        const std::optional<JobView> st = cluster.Job(job);
        return it != seen.workers.end() && !it->second.sampling.empty() && st &&
               st->node("train").state == "running" && it->second.running > 0;
      },
      120s, 200ms))
      << seen.json << cluster.Logs();
  const WorkerGpus& w = seen.workers.at("cpu-1");
  EXPECT_EQ(w.gpus, 0u);
  EXPECT_TRUE(w.has_usage_field) << seen.json;
  EXPECT_TRUE(w.usage.empty()) << seen.json;
  EXPECT_EQ(w.sampling, "no GPUs") << seen.json;
  EXPECT_EQ(w.warning, "") << seen.json;
  EXPECT_NE(seen.json.find("\"gpu_sampling\":\"no GPUs\""), std::string::npos) << seen.json;

  // The table shows no GPUs and no utilization figure for it, and the coordinator no warning.
  const CommandResult text = cluster.Cli({"workers"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("% busy"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("warning"), std::string::npos) << text.out;
  const CommandResult status = cluster.Cli({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out.find("warning:"), std::string::npos) << status.out;

  CancelAndWaitIdle(cluster, job, "cpu-1");
}

TEST(GpuUsageOnDevice, AGpuTrainingTaskShowsUtilizationAboveZero) {
  if (!kernels::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  }
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("gpu-1", 2);  // every visible GPU
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  // Its first heartbeat says whether NVML samples its GPUs, before any work is sent.
  WorkersView seen;
  ASSERT_TRUE(WaitUntil(
      [&] {
        seen = ReadWorkers(cluster);
        const auto it = seen.workers.find("gpu-1");
        return it != seen.workers.end() && !it->second.sampling.empty();
      },
      60s, 200ms))
      << seen.json << cluster.Logs();
  const WorkerGpus idle = seen.workers.at("gpu-1");
  ASSERT_GT(idle.gpus, 0u) << seen.json;
  if (idle.sampling.find("Not Supported") != std::string::npos ||
      idle.sampling.find("cannot open shared object file") != std::string::npos) {
    // NVML reads no utilization for some GPUs (MIG instances), or the driver's utilities are
    // not installed here: nothing to see. Any other reason is a failure of the sampling.
    GTEST_SKIP() << "no GPU samples on this machine: " << idle.sampling;
  }
  ASSERT_EQ(idle.sampling, "nvml") << seen.json << cluster.Logs();
  ASSERT_EQ(idle.usage.size(), idle.gpus) << seen.json;
  for (const GpuSample& g : idle.usage) {
    EXPECT_GT(g.total, 0u) << seen.json;
    EXPECT_LE(g.used, g.total) << seen.json;
  }

  std::string why;
  const std::string job = cluster.Submit(WriteBusyTrainingJob(cluster.dir()), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // The rank starts (mpirun, CUDA context, cuBLAS), then its kernels show in a heartbeat.
  uint64_t busiest = 0;
  const bool busy = WaitUntil(
      [&] {
        seen = ReadWorkers(cluster);
        const auto it = seen.workers.find("gpu-1");
        if (it == seen.workers.end()) return false;
        for (const GpuSample& g : it->second.usage) busiest = std::max(busiest, g.utilization);
        const std::optional<JobView> st = cluster.Job(job);
        return busiest > 0 || (st && st->finished());
      },
      60s, 250ms);
  const CommandResult text = cluster.Cli({"workers"});
  std::cout << "coupler workers while the training ran:\n" << text.out << std::flush;
  EXPECT_TRUE(busy && busiest > 0)
      << "no GPU utilization above 0% while the training ran\n"
      << seen.json << text.out << "job: " << cluster.Job(job).value_or(JobView{}).state << " "
      << cluster.Job(job).value_or(JobView{}).error << "\n"
      << cluster.Logs();
  EXPECT_NE(text.out.find("% busy"), std::string::npos) << text.out;
  CancelAndWaitIdle(cluster, job, "gpu-1");
}

}  // namespace
}  // namespace coupler::itest
