// Inference throughput of a trained-shape MLP at fp32, bf16 and int8 on one core, through the
// forward pass evaluate runs (worker/ops/mlp_forward.h): rows per second of the whole pass —
// quantizing or rounding each layer's input included, oneDNN's kernel building excluded (one
// untimed pass first). Rounds alternate the precisions; the table gives each one's median and
// its ratio to fp32 measured in the same rounds. Random weights (the rate does not depend on
// what they learned) and a calibration clipped at each layer's largest input.
//   bench_eval_precision [--layers 200,512,512,20] [--rows 8192] [--batch 1024] [--rounds 7]
//                        [--only fp32|bf16|int8]   (one precision alone, for a profiler)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/ops/int8_model.h"
#include "kernels/cpu/onednn_gemm.h"
#include "worker/ops/mlp_forward.h"

namespace {

using namespace coupler;
using worker::InferencePrecision;

std::vector<size_t> ParseLayers(const std::string& text) {
  std::vector<size_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoul(item));
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string layers_text = "200,512,512,20";
  size_t rows = 8192, batch = 1024, rounds = 7;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--layers") layers_text = argv[i + 1];
    else if (flag == "--rows") rows = std::stoul(argv[i + 1]);
    else if (flag == "--batch") batch = std::stoul(argv[i + 1]);
    else if (flag == "--rounds") rounds = std::stoul(argv[i + 1]);
    else if (flag == "--only" && worker::ParseInferencePrecision(argv[i + 1])) only = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--layers 200,512,512,20] [--rows N] [--batch N] [--rounds N] "
                   "[--only fp32|bf16|int8]\n", argv[0]);
      return 2;
    }
  }
  worker::MlpModel model;
  model.layers = ParseLayers(layers_text);
  if (model.layers.size() < 2 || batch == 0 || rows < batch) {
    std::fprintf(stderr, "need >= 2 layer widths and rows >= batch >= 1\n");
    return 2;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  model.params.resize(model.WeightOffset(model.num_layers()));
  for (size_t l = 0; l < model.num_layers(); ++l) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(model.layers[l]));
    const size_t offset = model.WeightOffset(l);
    for (size_t i = 0; i < model.layers[l] * model.layers[l + 1]; ++i) {
      model.params[offset + i] = normal(rng) * scale;
    }
  }
  std::vector<float> x(rows * model.layers.front());
  for (float& v : x) v = normal(rng);

  worker::OpReport report;
  // Calibration: each layer's largest input over the first batch.
  auto fp32 = worker::MlpForward::Prepare(model, InferencePrecision::kFp32, nullptr);
  std::vector<ops::ActivationHistogram> histograms(model.num_layers());
  std::vector<float> logits;
  if (!fp32.ok() ||
      !fp32->Run(std::span<const float>(x.data(), batch * model.layers.front()), batch, logits,
                 report, [&](size_t l, std::span<const float> in) { histograms[l].Add(in); })
           .ok()) {
    std::fprintf(stderr, "fp32 forward failed\n");
    return 1;
  }
  ops::Calibration calibration;
  calibration.weights_hash = ops::WeightsHash(model.params);
  for (size_t l = 0; l < model.num_layers(); ++l) {
    calibration.layers.push_back({histograms[l].Quantile(1.0), histograms[l].saw_negative()});
    calibration.widths.push_back(model.layers[l]);
  }
  const InferencePrecision precisions[] = {InferencePrecision::kFp32, InferencePrecision::kBf16,
                                           InferencePrecision::kInt8};
  std::vector<worker::MlpForward> forwards;
  for (const auto p : precisions) {
    auto f = worker::MlpForward::Prepare(model, p, &calibration);
    if (!f.ok()) {
      std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
      return 1;
    }
    forwards.push_back(std::move(*f));
  }
  const size_t features = model.layers.front();
  auto pass = [&](const worker::MlpForward& f) {
    for (size_t start = 0; start + batch <= rows; start += batch) {
      const std::span<const float> in(x.data() + start * features, batch * features);
      if (!f.Run(in, batch, logits, report).ok()) std::abort();
    }
  };
  for (const auto& f : forwards) pass(f);  // oneDNN builds its kernels for these shapes
  std::vector<std::vector<double>> rate(3), ratio(3);
  if (!only.empty()) {
    const auto p = static_cast<size_t>(*worker::ParseInferencePrecision(only));
    const auto began = std::chrono::steady_clock::now();
    for (size_t r = 0; r < rounds; ++r) pass(forwards[p]);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::printf("%s alone: %.0f samples/s over %zu rounds\n", only.c_str(),
                static_cast<double>(rounds * (rows / batch) * batch) / seconds, rounds);
    return 0;
  }
  for (size_t r = 0; r < rounds; ++r) {
    double seconds[3];
    for (size_t i = 0; i < 3; ++i) {
      const size_t p = (i + r) % 3;  // rotate who goes first
      const auto began = std::chrono::steady_clock::now();
      pass(forwards[p]);
      seconds[p] = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }
    const double done = static_cast<double>(rows / batch * batch);
    for (size_t p = 0; p < 3; ++p) {
      rate[p].push_back(done / seconds[p]);
      ratio[p].push_back(seconds[0] / seconds[p]);
    }
  }
  std::printf("layers %s, %zu rows in batches of %zu, %zu rounds, one thread, oneDNN isa %s\n",
              layers_text.c_str(), rows, batch, rounds,
              std::string(kernels::OneDnnIsa()).c_str());
  std::printf("%-9s %14s %12s %14s\n", "precision", "samples/s", "vs fp32", "weight bytes");
  for (size_t p = 0; p < 3; ++p) {
    std::printf("%-9s %14.0f %11.2fx %14zu\n",
                std::string(worker::InferencePrecisionName(precisions[p])).c_str(),
                Median(rate[p]), Median(ratio[p]), forwards[p].WeightBytes());
  }
  return 0;
}
