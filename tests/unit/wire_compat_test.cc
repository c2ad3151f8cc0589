// N-1 on the wire, against the previous release's own bytes: tests/wire/v16/ holds what the last
// version-16 build wrote for each sample message (its fuzz seeds). This build must read every
// one of them as the sample (fields new in 17 left empty), and must write each sample in version
// 16 as exactly those bytes: that is what a worker or client not yet upgraded sends and reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/wire/codec.h"
#include "tests/wire_sample_messages.h"

namespace coupler::wire {
namespace {

const std::filesystem::path kV16 = std::filesystem::path(COUPLER_SOURCE_DIR) / "tests/wire/v16";

std::string Read(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// The sample as version 16 carries it: the fields 17 added are not on its wire.
Message AsInVersion16(Message m) {
  if (auto* result = std::get_if<TaskResult>(&m)) {
    for (TaskOutcome& o : result->outcomes) o.lost_inputs.clear();
  }
  return m;
}

TEST(WireCompatTest, EverySampleOfVersion16IsReadAndWrittenByteForByte) {
  size_t checked = 0;
  for (const Message& sample : SampleMessages()) {
    const MessageType type = TypeOf(sample);
    const std::filesystem::path file = kV16 / SeedFileName(type);
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    const std::string v16 = Read(file);
    Result<Message> read = Decode(v16);
    ASSERT_TRUE(read.ok()) << file << ": " << read.status().ToString();
    EXPECT_EQ(*read, AsInVersion16(sample)) << file;
    const std::string written = std::visit([](const auto& m) { return EncodeAs(m, 16); }, sample);
    EXPECT_EQ(Hex(written), Hex(v16)) << file;
    Result<std::string> again = Reencode(Encode(sample), 16);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(Hex(*again), Hex(v16)) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 26u);
}

// A version-16 worker cannot say which inputs it lost: its reduce's failure is an ordinary one
// (retried, its map tasks not run again). Version 15 is refused.
TEST(WireCompatTest, LostInputsAreLeftOffForVersion16AndOlderVersionsAreRefused) {
  TaskOutcome o;
  o.job_id = "j-1";
  o.task_id = 9;
  o.error = "group_by: map-00002.p00001.npz: no such file";
  o.error_code = 2;
  o.lost_inputs = {2};
  TaskResult result;
  result.worker_id = "w-1";
  result.outcomes = {o};
  Result<Message> old = Decode(EncodeAs(result, 16));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(std::get<TaskResult>(*old).outcomes.at(0).lost_inputs.empty());
  Result<Message> now = Decode(Encode(result));
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_EQ(std::get<TaskResult>(*now).outcomes.at(0).lost_inputs, std::vector<uint32_t>{2});
  EXPECT_FALSE(Reencode(Encode(result), 15).ok());
  EXPECT_EQ(PeekVersion(EncodeAs(result, 16)), 16);
  EXPECT_EQ(PeekVersion("not a message"), 0);
}

}  // namespace
}  // namespace coupler::wire
