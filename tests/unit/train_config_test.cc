// The training config: the shipped example loads as written, every kind of override applies,
// and every mistake a researcher makes is an error that names the file, line and key.
#include "train/config/train_config.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/temp_dir.h"
#include "runtime/ops/op_registry.h"
#include "runtime/ops/train_keys.h"

namespace coupler::train {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kMinimal = "data: d.csv\nlayers: [4, 2]\n";

Result<TrainConfig> Parse(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return ParseTrainConfig(text, "train.yaml", "/cfg", overrides);
}

std::string ErrorOf(const std::string& text, const std::vector<std::string>& overrides = {}) {
  Result<TrainConfig> config = Parse(text, overrides);
  if (config.ok()) return "(no error)";
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  return config.status().message();
}

// The keys a train node may set are config keys, with the bounds the op's schema checks: the
// lowest value the schema admits and every precision choice load, and the op declares each key.
TEST(TrainConfigTest, EveryTrainNodeKeyIsAConfigKeyTheOpDeclares) {
  const ops::OpDef* train_op = ops::OpRegistry::Builtin().Find("train");
  ASSERT_NE(train_op, nullptr);
  for (const ops::TrainNodeKey& key : ops::kTrainNodeKeys) {
    SCOPED_TRACE(std::string(key.name));
    EXPECT_NE(train_op->FindParam(key.name), nullptr);
    std::vector<std::string_view> values(key.choices.begin(), key.choices.end());
    // Unbounded below (lr: positive, which a schema bound cannot say): any value it admits.
    const std::string lowest = key.min ? std::to_string(static_cast<int64_t>(*key.min)) : "1";
    if (values.empty()) values.push_back(lowest);
    for (const std::string_view value : values) {
      Result<TrainConfig> config =
          Parse(kMinimal, {std::string(key.name) + "=" + std::string(value)});
      EXPECT_TRUE(config.ok()) << value << ": " << config.status().ToString();
    }
  }
}

TEST(TrainConfigTest, LoadsTheShippedExample) {
  const fs::path root = fs::path(COUPLER_SOURCE_DIR).lexically_normal();
  Result<TrainConfig> config =
      LoadTrainConfig((root / "examples/train-digits.yaml").string(), {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->data, (root / "data/digits.csv").string());
  EXPECT_EQ(config->label_column, "label");
  EXPECT_DOUBLE_EQ(config->test_fraction, 0.2);
  EXPECT_EQ(config->layers, (std::vector<size_t>{64, 128, 10}));
  EXPECT_EQ(config->optimizer, Optimizer::kAdamW);
  EXPECT_FLOAT_EQ(config->lr, 0.003f);
  EXPECT_FLOAT_EQ(config->momentum, 0.9f);
  EXPECT_FLOAT_EQ(config->weight_decay, 0.0001f);
  EXPECT_EQ(config->epochs, 30);
  EXPECT_EQ(config->global_batch, 64u);
  EXPECT_EQ(config->micro_batch, 16u);
  EXPECT_EQ(config->accumulate, 2u);
  EXPECT_EQ(config->precision, ElementType::kFloat32);
  EXPECT_DOUBLE_EQ(config->bucket_mb, 25);
  EXPECT_EQ(config->seed, 1234u);
  EXPECT_EQ(config->checkpoint_dir, (root / "coupler-work/checkpoints/digits").string());
  EXPECT_EQ(config->checkpoint_every, 200);
  // As the example's comment promises: 16 x 2 x 2 ranks = 64.
  EXPECT_TRUE(CheckBatchArithmetic(*config, 2).ok());
}

TEST(TrainConfigTest, DefaultsForOptionalKeys) {
  Result<TrainConfig> config = Parse(kMinimal);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->data, "/cfg/d.csv");
  EXPECT_EQ(config->optimizer, Optimizer::kAdamW);
  EXPECT_EQ(config->precision, ElementType::kFloat32);
  EXPECT_TRUE(config->micro_batch_auto());
  EXPECT_EQ(config->checkpoint_dir, "");
  EXPECT_EQ(config->global_batch, 64u);
}

TEST(TrainConfigTest, OverridesOfEveryKind) {
  Result<TrainConfig> config =
      Parse(std::string(kMinimal) + "micro_batch: 8\n",
            {"precision=bf16", "optimizer=sgd", "lr=0.25", "epochs=7", "test_fraction=0",
             "micro_batch=auto", "layers=[64,32,10]", "seed=18446744073709551615",
             "label_column=digit", "weight_decay = 0.5", "bucket_mb=1.5", "checkpoint_every=3",
             "checkpoint_dir=/abs/ckpt"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->precision, ElementType::kBFloat16);
  EXPECT_EQ(config->optimizer, Optimizer::kSgd);
  EXPECT_FLOAT_EQ(config->lr, 0.25f);
  EXPECT_EQ(config->epochs, 7);
  EXPECT_DOUBLE_EQ(config->test_fraction, 0.0);
  EXPECT_EQ(config->micro_batch, 0u);
  EXPECT_EQ(config->layers, (std::vector<size_t>{64, 32, 10}));
  EXPECT_EQ(config->seed, 18446744073709551615ull);
  EXPECT_EQ(config->label_column, "digit");
  EXPECT_FLOAT_EQ(config->weight_decay, 0.5f);
  EXPECT_DOUBLE_EQ(config->bucket_mb, 1.5);
  EXPECT_EQ(config->checkpoint_every, 3);
  EXPECT_EQ(config->checkpoint_dir, "/abs/ckpt");
}

TEST(TrainConfigTest, LayersAsCommaListAndLaterOverridesWin) {
  Result<TrainConfig> config = Parse(kMinimal, {"layers=64, 16,10", "micro_batch=4",
                                                "micro_batch=12", "precision=fp16"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->layers, (std::vector<size_t>{64, 16, 10}));
  EXPECT_EQ(config->micro_batch, 12u);
  EXPECT_EQ(config->precision, ElementType::kFloat16);
}

TEST(TrainConfigTest, OverridesCanSupplyRequiredKeys) {
  Result<TrainConfig> config = Parse("", {"data=/d.csv", "layers=[3,2]"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->data, "/d.csv");
}

TEST(TrainConfigTest, RelativePathsResolveAgainstTheFileButOverridesAgainstCwd) {
  Result<TrainConfig> config =
      Parse("data: ../data/./x.csv\nlayers: [4, 2]\ncheckpoint_dir: ckpt/../ck\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->data, "/data/x.csv");
  EXPECT_EQ(config->checkpoint_dir, "/cfg/ck");

  config = Parse(kMinimal, {"data=foo.csv", "checkpoint_dir=out/ck"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->data, (fs::current_path() / "foo.csv").lexically_normal().string());
  EXPECT_EQ(config->checkpoint_dir, (fs::current_path() / "out/ck").lexically_normal().string());

  // An empty value turns checkpoints off.
  config = Parse(std::string(kMinimal) + "checkpoint_dir: ck\n", {"checkpoint_dir="});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->checkpoint_dir, "");
}

TEST(TrainConfigTest, LoadResolvesAgainstTheConfigFilesDirectory) {
  Result<io::TempDir> dir = io::TempDir::Create("train-config-");
  ASSERT_TRUE(dir.ok());
  fs::create_directories(dir->File("conf"));
  std::ofstream(dir->File("conf/t.yaml")) << "data: ../shards\nlayers: [4, 2]\n";
  Result<TrainConfig> config = LoadTrainConfig(dir->File("conf/t.yaml"), {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->data, dir->File("shards"));
}

TEST(TrainConfigTest, UnknownKeysGetAHint) {
  EXPECT_EQ(ErrorOf(std::string(kMinimal) + "precison: bf16\n"),
            "train.yaml:3:1: unknown key 'precison' (did you mean 'precision'?)");
  EXPECT_EQ(ErrorOf(kMinimal, {"precison=bf16"}),
            "--set precison=bf16: unknown key 'precison' (did you mean 'precision'?)");
  EXPECT_THAT(ErrorOf(kMinimal, {"zzzzzzzz=1"}),
              HasSubstr("unknown key 'zzzzzzzz' (keys: data, label_column, test_fraction"));
}

TEST(TrainConfigTest, WrongTypesNameLineKeyAndValue) {
  EXPECT_EQ(ErrorOf("data: d.csv\nlayers: [4, 2]\nlr: abc\n"),
            "train.yaml:3:5: lr: expected a positive number, got 'abc'");
  EXPECT_EQ(ErrorOf(kMinimal, {"lr=abc"}),
            "--set lr=abc: lr: expected a positive number, got 'abc'");
  EXPECT_EQ(ErrorOf("data: d.csv\nlayers: [4, 2]\nepochs: 2.5\n"),
            "train.yaml:3:9: epochs: expected a positive integer, got '2.5'");
  EXPECT_EQ(ErrorOf("data: d.csv\nlayers: [4, 2]\nmicro_batch: [1]\n"),
            "train.yaml:3:14: micro_batch: expected a positive integer or 'auto', got a list");
  EXPECT_EQ(ErrorOf("data: {a: 1}\nlayers: [4, 2]\n"),
            "train.yaml:1:7: data: expected a path, got a mapping");
  EXPECT_EQ(ErrorOf("data: d.csv\nlayers: [4, x]\n"),
            "train.yaml:2:9: layers: expected a list of at least 2 positive integers like "
            "[64, 128, 10], got 'x' at position 2");
  EXPECT_EQ(ErrorOf(kMinimal, {"optimizer=adam"}),
            "--set optimizer=adam: optimizer: expected sgd or adamw, got 'adam'");
  EXPECT_EQ(ErrorOf(kMinimal, {"precision=fp8"}),
            "--set precision=fp8: precision: expected fp32, fp16 or bf16, got 'fp8'");
  EXPECT_EQ(ErrorOf(kMinimal, {"seed=-1"}),
            "--set seed=-1: seed: expected an integer in [0, 2^64), got '-1'");
  // A value left out points at its key.
  EXPECT_EQ(ErrorOf("data: d.csv\nlayers: [4, 2]\nlr:\nepochs: 2\n"),
            "train.yaml:3:1: lr: expected a positive number, got nothing");
}

TEST(TrainConfigTest, OutOfRangeValues) {
  EXPECT_EQ(ErrorOf(kMinimal, {"test_fraction=1"}),
            "--set test_fraction=1: test_fraction: expected a number in [0, 1), got '1'");
  EXPECT_EQ(ErrorOf(kMinimal, {"momentum=-0.1"}),
            "--set momentum=-0.1: momentum: expected a number in [0, 1), got '-0.1'");
  EXPECT_THAT(ErrorOf(kMinimal, {"lr=0"}), HasSubstr("lr: expected a positive number, got '0'"));
  EXPECT_THAT(ErrorOf(kMinimal, {"lr=1e39"}), HasSubstr("lr: expected a positive number"));
  EXPECT_THAT(ErrorOf(kMinimal, {"weight_decay=-1"}), HasSubstr("expected a non-negative number"));
  EXPECT_THAT(ErrorOf(kMinimal, {"epochs=0"}), HasSubstr("epochs: expected a positive integer"));
  EXPECT_THAT(ErrorOf(kMinimal, {"global_batch=0"}),
              HasSubstr("global_batch: expected a positive"));
  EXPECT_THAT(ErrorOf(kMinimal, {"accumulate=-2"}), HasSubstr("accumulate: expected a positive"));
  EXPECT_THAT(ErrorOf(kMinimal, {"micro_batch=0"}), HasSubstr("micro_batch: expected a positive"));
  EXPECT_THAT(ErrorOf(kMinimal, {"bucket_mb=0"}), HasSubstr("bucket_mb: expected a positive"));
  EXPECT_THAT(ErrorOf(kMinimal, {"checkpoint_every=-1"}),
              HasSubstr("checkpoint_every: expected a non-negative integer"));
  EXPECT_THAT(ErrorOf(kMinimal, {"layers=[64]"}), HasSubstr("at least 2 positive integers"));
  EXPECT_THAT(ErrorOf(kMinimal, {"layers=64,0,10"}), HasSubstr("got '0' at position 2"));
}

TEST(TrainConfigTest, MalformedFilesAndOverrides) {
  EXPECT_EQ(ErrorOf(kMinimal, {"precision"}),
            "--set precision: expected KEY=VALUE, e.g. precision=bf16");
  EXPECT_EQ(ErrorOf(kMinimal, {"=bf16"}), "--set =bf16: expected KEY=VALUE, e.g. precision=bf16");
  EXPECT_THAT(ErrorOf(kMinimal, {"layers=[64,"}),
              HasSubstr("--set layers=[64,: layers: not a valid YAML value"));
  EXPECT_EQ(ErrorOf("layers: [4, 2]\n"), "train.yaml: missing required key 'data'");
  EXPECT_EQ(ErrorOf("data: d.csv\n"), "train.yaml: missing required key 'layers'");
  EXPECT_EQ(ErrorOf("data: d.csv\nlayers: [4, 2]\nlr: 0.1\nlr: 0.2\n"),
            "train.yaml:4:1: duplicate key 'lr' (first at line 3)");
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("train.yaml:1:1: expected a mapping"));
  EXPECT_THAT(ErrorOf("data: d.csv\nlayers: [4, 2\n"), HasSubstr("train.yaml:"));
  EXPECT_THAT(ErrorOf("data: d.csv\nlayers: [4, 2\n"), HasSubstr("not valid YAML"));
}

TEST(TrainConfigTest, MissingFileIsNotFound) {
  Result<TrainConfig> config = LoadTrainConfig("/nonexistent/train.yaml", {});
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(config.status().message(), HasSubstr("/nonexistent/train.yaml"));
}

TEST(TrainConfigTest, NamesOfEnums) {
  EXPECT_EQ(PrecisionName(ElementType::kBFloat16), "bf16");
  EXPECT_EQ(PrecisionName(ElementType::kFloat16), "fp16");
  EXPECT_EQ(OptimizerName(Optimizer::kSgd), "sgd");
  EXPECT_EQ(OptimizerName(Optimizer::kAdamW), "adamw");
}

TrainConfig Batches(size_t global, size_t micro, size_t accumulate) {
  TrainConfig config;
  config.global_batch = global;
  config.micro_batch = micro;
  config.accumulate = accumulate;
  return config;
}

TEST(TrainConfigTest, BatchArithmetic) {
  EXPECT_TRUE(CheckBatchArithmetic(Batches(64, 16, 2), 2).ok());
  EXPECT_TRUE(CheckBatchArithmetic(Batches(64, 64, 1), 1).ok());
  Status s = CheckBatchArithmetic(Batches(64, 16, 4), 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "global_batch 64 != micro_batch 16 x accumulate 4 x ranks 2 = 128; with micro_batch "
            "16 and 2 ranks use accumulate 2");
  EXPECT_EQ(CheckBatchArithmetic(Batches(60, 16, 1), 2).message(),
            "global_batch 60 != micro_batch 16 x accumulate 1 x ranks 2 = 32; no integer "
            "accumulate works with micro_batch 16 and 2 ranks; use a micro_batch that divides "
            "30, e.g. micro_batch 15 with accumulate 2");
  EXPECT_EQ(CheckBatchArithmetic(Batches(63, 16, 1), 2).message(),
            "global_batch 63 != micro_batch 16 x accumulate 1 x ranks 2 = 32; no integer "
            "accumulate works with micro_batch 16 and 2 ranks (global_batch must be a multiple "
            "of the 2 ranks)");
}

}  // namespace
}  // namespace coupler::train
