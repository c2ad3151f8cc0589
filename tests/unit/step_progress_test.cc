// Reading a gang's progress from its steps.jsonl, a file the user's program writes: the last
// whole line that parses, only numbers out of it (names that could break a metric or label
// are dropped, at most kMaxStepMetrics of them), a line still being written skipped, a tail cut
// mid-line not trusted, and no symlink or non-file followed.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/job/step_progress.h"

namespace coupler::job {
namespace {

namespace fs = std::filesystem;

class StepProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coupler-steps-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(dir_ / "steps.jsonl", std::ios::binary) << text; }
  fs::path dir_;
};

TEST_F(StepProgressTest, OnlyNumbersWithPlainNamesComeOut) {
  auto p = ParseStepLine(R"({"step":12,"epoch":1,"loss":0.25,"lr":null,"note":"hi","ok":true,)"
                         R"("bad name":1,"x\"} 1\nevil{":2,"inf":Infinity,"nan":NaN,"time":1700000000.5})");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 12);
  EXPECT_EQ(p->time, 1700000000.5);
  ASSERT_EQ(p->metrics.size(), 2u);  // epoch, loss: the rest are not plain finite numbers
  EXPECT_EQ(p->metrics[0], (std::pair<std::string, double>{"epoch", 1}));
  EXPECT_EQ(p->metrics[1], (std::pair<std::string, double>{"loss", 0.25}));
  EXPECT_EQ(StepProgressText(*p), "step 12  epoch 1  loss 0.25");
  // At most kMaxStepMetrics, in the line's order.
  std::string many = R"({"step":1)";
  for (int i = 0; i < 20; ++i) many += ",\"m" + std::to_string(i) + "\":" + std::to_string(i);
  EXPECT_EQ(ParseStepLine(many + "}")->metrics.size(), kMaxStepMetrics);
  // No step, a negative or fractional one, not an object: no progress.
  EXPECT_FALSE(ParseStepLine(R"({"loss":1})"));
  EXPECT_FALSE(ParseStepLine(R"({"step":-1})"));
  EXPECT_FALSE(ParseStepLine(R"({"step":1.5})"));
  EXPECT_FALSE(ParseStepLine(R"([1,2])"));
  EXPECT_FALSE(ParseStepLine(R"({"step":3,"loss":)"));
}

TEST_F(StepProgressTest, TheLastWholeLineThatParses) {
  EXPECT_FALSE(ReadLatestStep(dir_.string()));  // no file
  Write("{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":1.5}\n{\"step\":3,\"lo");  // 3 being written
  auto p = ReadLatestStep(dir_.string());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 2);
  Write("{\"step\":1,\"loss\":2}\ngarbage\n");
  EXPECT_EQ(ReadLatestStep(dir_.string())->step, 1);
  // A long history: only its tail is read, and a line cut at the tail's start is not trusted.
  std::string long_history;
  for (int i = 0; i < 5000; ++i) long_history += "{\"step\":" + std::to_string(i) + ",\"loss\":0.5}\n";
  Write(long_history);
  EXPECT_EQ(ReadLatestStep(dir_.string())->step, 4999);
  Write(std::string(40000, 'x') + "\n");
  EXPECT_FALSE(ReadLatestStep(dir_.string()));
}

TEST_F(StepProgressTest, NeitherASymlinkNorAFifoIsFollowed) {
  const fs::path secret = dir_ / "secret.jsonl";
  std::ofstream(secret) << "{\"step\":7,\"loss\":1}\n";
  fs::create_symlink(secret, dir_ / "steps.jsonl");
  EXPECT_FALSE(ReadLatestStep(dir_.string()));
  fs::remove(dir_ / "steps.jsonl");
  ASSERT_EQ(::mkfifo((dir_ / "steps.jsonl").c_str(), 0600), 0);
  EXPECT_FALSE(ReadLatestStep(dir_.string()));  // and it returns: no blocking open
}

}  // namespace
}  // namespace coupler::job
