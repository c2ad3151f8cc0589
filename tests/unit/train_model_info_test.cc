// model.json, what the train op leaves for evaluate and quantize: numbers written as JSON
// numbers (layer widths as a list, a 64-bit seed exact), read back as written, and files of
// the older form (widths and seed as text) still read.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/ops/train_model.h"

namespace coupler::ops {
namespace {

namespace fs = std::filesystem;

TEST(ModelInfoTest, NumbersAreJsonNumbersAndReadBackExactly) {
  char tmpl[] = "/tmp/coupler-model-info-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  ModelInfo info;
  info.layers = {64, 128, 10};
  info.label_column = "label";
  info.test_fraction = 0.2;
  info.seed = 0x8000000000000005ull;  // past 2^63: no double holds it
  info.data = "/data/shards";
  const std::string json = ModelInfoJson(info);
  EXPECT_NE(json.find("\"layers\":[64,128,10]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"seed\":9223372036854775813,"), std::string::npos) << json;
  std::ofstream(dir / "new.json") << json;
  Result<ModelInfo> back = ReadModelInfo((dir / "new.json").string());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->layers, info.layers);
  EXPECT_EQ(back->seed, info.seed);
  EXPECT_EQ(back->test_fraction, 0.2);
  EXPECT_EQ(back->data, info.data);
  // The older form.
  std::ofstream(dir / "old.json") << R"({"layers":"64,128,10","label_column":"label",)"
                                  << R"("test_fraction":0.2,"seed":"1234","data":"/d"})";
  back = ReadModelInfo((dir / "old.json").string());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->layers, (std::vector<size_t>{64, 128, 10}));
  EXPECT_EQ(back->seed, 1234u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace coupler::ops
