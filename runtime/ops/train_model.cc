#include "runtime/ops/train_model.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <random>

#include <yaml-cpp/yaml.h>

#include "runtime/check.h"
#include "runtime/util/json_writer.h"

namespace coupler::ops {
namespace {

// A uniform value in [0, bound). Raw outputs below 2^64 mod bound are rejected, so every value
// is equally likely (std::uniform_int_distribution's algorithm is implementation-defined).
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t x = rng();
    if (x >= threshold) return x % bound;
  }
}

}  // namespace

std::string ModelInfoJson(const ModelInfo& info) {
  json::Writer w;
  w.BeginObject();
  w.BeginArray("layers");
  for (const size_t width : info.layers) w.Uint(width);
  w.EndArray();
  w.Field("label_column", info.label_column);
  w.Field("test_fraction", info.test_fraction);
  // A JSON integer, exact: Python's json and rapidjson read any uint64 back as written.
  w.Field("seed", static_cast<uint64_t>(info.seed));
  w.Field("data", info.data);
  w.EndObject();
  return w.Finish();
}

Result<ModelInfo> ReadModelInfo(const std::string& path) {
  ModelInfo info;
  try {
    const YAML::Node node = YAML::LoadFile(path);
    const YAML::Node layers = node["layers"];
    if (layers.IsSequence()) {
      for (const YAML::Node& width : layers) info.layers.push_back(width.as<size_t>());
    } else {
      // Written before layers were a list: "64,128,10".
      const std::string text = layers.as<std::string>();
      for (size_t pos = 0; pos < text.size();) {
        const size_t comma = std::min(text.find(',', pos), text.size());
        info.layers.push_back(std::stoul(text.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    }
    info.label_column = node["label_column"].as<std::string>();
    info.test_fraction = node["test_fraction"].as<double>();
    // A number, or (before it was one) its decimal text: the same digits either way.
    info.seed = std::stoull(node["seed"].as<std::string>());
    info.data = node["data"].as<std::string>();
  } catch (const std::exception& e) {
    return InvalidArgument(path + ": not a model description written by the train op (" +
                           e.what() + ")");
  }
  return info;
}

std::vector<uint32_t> SeededPermutation(size_t rows, uint64_t seed) {
  COUPLER_CHECK(rows <= std::numeric_limits<uint32_t>::max())
      << "dataset of " << rows << " rows: row indices are uint32";
  std::vector<uint32_t> order(rows);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(seed);
  for (size_t i = rows; i > 1; --i) {
    const auto j = static_cast<size_t>(UniformBelow(rng, i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

size_t HeldOutCount(size_t rows, double test_fraction) {
  COUPLER_CHECK(test_fraction >= 0 && test_fraction <= 1) << "test_fraction " << test_fraction;
  return std::min(rows,
                  static_cast<size_t>(std::llround(static_cast<double>(rows) * test_fraction)));
}

}  // namespace coupler::ops
