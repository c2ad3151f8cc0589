// N-1 on the wire, against the previous release's own bytes: tests/wire/v14/ holds what the last
// version-14 build wrote for each sample message (its fuzz seeds). This build must read every
// one of them as the sample (fields new in 15 left empty), and must write each sample in version
// 14 as exactly those bytes: that is what a worker or client not yet upgraded sends and reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/wire/codec.h"
#include "tests/wire_sample_messages.h"

namespace coupler::wire {
namespace {

const std::filesystem::path kV14 = std::filesystem::path(COUPLER_SOURCE_DIR) / "tests/wire/v14";

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

// The sample as version 14 carries it: the fields 15 added are not on its wire.
Message AsInVersion14(Message m) {
  if (auto* reply = std::get_if<WorkersReply>(&m)) {
    for (WorkerStatus& w : reply->workers) {
      w.ban_reason.clear();
      w.protocol_version = 0;
      if (w.state == pool::WorkerState::kBanned) w.state = pool::WorkerState::kLost;
    }
  }
  return m;
}

TEST(WireCompatTest, EverySampleOfVersion14IsReadAndWrittenByteForByte) {
  size_t checked = 0;
  for (const Message& sample : SampleMessages()) {
    const MessageType type = TypeOf(sample);
    if (type == MessageType::kBanWorker) continue;  // new in 15: no 14 peer sends or reads it
    const std::filesystem::path file = kV14 / SeedFileName(type);
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    const std::string v14 = Read(file);
    Result<Message> read = Decode(v14);
    ASSERT_TRUE(read.ok()) << file << ": " << read.status().ToString();
    EXPECT_EQ(*read, AsInVersion14(sample)) << file;
    const std::string written = std::visit([](const auto& m) { return EncodeAs(m, 14); }, sample);
    EXPECT_EQ(Hex(written), Hex(v14)) << file;
    Result<std::string> again = Reencode(Encode(sample), 14);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(Hex(*again), Hex(v14)) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 24u);
}

TEST(WireCompatTest, ABannedWorkerReadsAsLostInVersion14AndOlderVersionsAreRefused) {
  WorkersReply reply;
  WorkerStatus w;
  w.id = "w7";
  w.state = pool::WorkerState::kBanned;
  w.ban_reason = "bad DIMM";
  w.protocol_version = 15;
  reply.workers = {w};
  Result<Message> old = Decode(EncodeAs(reply, 14));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  const auto& seen = std::get<WorkersReply>(*old).workers.at(0);
  EXPECT_EQ(seen.state, pool::WorkerState::kLost);
  EXPECT_EQ(seen.ban_reason, "");
  EXPECT_FALSE(Reencode(Encode(reply), 13).ok());
  EXPECT_EQ(PeekVersion(EncodeAs(reply, 14)), 14);
  EXPECT_EQ(PeekVersion("not a message"), 0);
}

}  // namespace
}  // namespace coupler::wire
