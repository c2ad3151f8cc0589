// Helpers for the trainer tests: a small synthetic classification set (labels from a fixed
// linear teacher, so it is learnable) and running a whole group of ranks as threads.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "train/comm/in_process_communicator.h"
#include "train/data/dataset.h"
#include "train/trainer.h"

namespace coupler::train::testing {

inline Dataset TeacherDataset(size_t rows, size_t features, size_t classes, uint64_t seed) {
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.num_classes = classes;
  d.x.resize(rows * features);
  d.y.resize(rows);
  uint64_t state = seed;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(state >> 40) * 0x1p-24f * 2.0f - 1.0f;
  };
  std::vector<float> teacher(classes * features);
  for (float& w : teacher) w = next();
  for (size_t r = 0; r < rows; ++r) {
    for (size_t f = 0; f < features; ++f) d.x[r * features + f] = next();
    size_t best = 0;
    float best_score = -1e30f;
    for (size_t c = 0; c < classes; ++c) {
      float score = 0;
      for (size_t f = 0; f < features; ++f) score += teacher[c * features + f] * d.x[r * features + f];
      if (score > best_score) {
        best_score = score;
        best = c;
      }
    }
    d.y[r] = static_cast<int32_t>(best);
  }
  return d;
}

inline TrainConfig SmallConfig() {
  TrainConfig c;
  c.layers = {8, 32, 3};
  c.optimizer = Optimizer::kAdamW;
  c.lr = 0.01f;
  c.weight_decay = 1e-4f;
  c.epochs = 3;
  c.global_batch = 32;
  c.micro_batch = 8;
  c.accumulate = 2;  // 8 x 2 x 2 ranks = 32
  c.seed = 7;
  c.test_fraction = 0.25;
  return c;
}

// Runs `ranks` threads, each one rank of RunTraining; returns every rank's result.
inline std::vector<Result<TrainReport>> RunGroup(int ranks, const TrainerOptions& options,
                                                 const Split& split) {
  comm::InProcessGroup group(ranks, std::chrono::seconds(60));
  std::vector<Result<TrainReport>> results(ranks, Result<TrainReport>(Internal("not run")));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      results[r] = RunTraining(options, split, TrainCommunicators::Host(group.communicator(r)));
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// A text file's lines (a steps.jsonl history), without their newlines.
inline std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ||a - b|| / ||b||, the relative difference of two weight vectors.
inline double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0;
  double norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return a.size() != b.size() ? 1e30 : std::sqrt(diff / norm);
}

}  // namespace coupler::train::testing
