// N-1 on the wire, against the previous release's own bytes: tests/wire/v15/ holds what the last
// version-15 build wrote for each sample message (its fuzz seeds). This build must read every
// one of them as the sample (fields new in 16 left empty), and must write each sample in version
// 15 as exactly those bytes: that is what a worker or client not yet upgraded sends and reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/wire/codec.h"
#include "tests/wire_sample_messages.h"

namespace coupler::wire {
namespace {

const std::filesystem::path kV15 = std::filesystem::path(COUPLER_SOURCE_DIR) / "tests/wire/v15";

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

// A GPU's health as version 15 carries it: none of it.
GpuUsage WithoutHealth(const GpuUsage& g) {
  return GpuUsage{g.index, g.utilization_percent, g.used_memory, g.total_memory};
}

// The sample as version 15 carries it: the fields 16 added are not on its wire.
Message AsInVersion15(Message m) {
  if (auto* reply = std::get_if<WorkersReply>(&m)) {
    for (WorkerStatus& w : reply->workers) {
      for (GpuInfo& g : w.gpus) g.uuid.clear();
      for (GpuUsage& g : w.gpu_usage) g = WithoutHealth(g);
      w.gpu_fences.clear();
    }
  } else if (auto* reg = std::get_if<RegisterWorker>(&m)) {
    for (GpuInfo& g : reg->gpus) g.uuid.clear();
  } else if (auto* beat = std::get_if<Heartbeat>(&m)) {
    for (GpuUsage& g : beat->gpus) g = WithoutHealth(g);
    beat->fenced_gpus.clear();
  }
  return m;
}

TEST(WireCompatTest, EverySampleOfVersion15IsReadAndWrittenByteForByte) {
  size_t checked = 0;
  for (const Message& sample : SampleMessages()) {
    const MessageType type = TypeOf(sample);
    if (type == MessageType::kFenceGpu) continue;  // new in 16: no 15 peer sends or reads it
    const std::filesystem::path file = kV15 / SeedFileName(type);
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    const std::string v15 = Read(file);
    Result<Message> read = Decode(v15);
    ASSERT_TRUE(read.ok()) << file << ": " << read.status().ToString();
    EXPECT_EQ(*read, AsInVersion15(sample)) << file;
    const std::string written = std::visit([](const auto& m) { return EncodeAs(m, 15); }, sample);
    EXPECT_EQ(Hex(written), Hex(v15)) << file;
    Result<std::string> again = Reencode(Encode(sample), 15);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(Hex(*again), Hex(v15)) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 25u);
}

TEST(WireCompatTest, GpuHealthIsLeftOffForVersion15AndOlderVersionsAreRefused) {
  Heartbeat beat;
  beat.sender_id = "coordinator";
  beat.fenced_gpus = {0};
  GpuUsage g{0, 50, 1, 2};
  g.readings = kGpuXid;
  g.xid_errors = 1;
  g.last_xid = 48;
  beat.gpus = {g};
  Result<Message> old = Decode(EncodeAs(beat, 15));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  const auto& seen = std::get<Heartbeat>(*old);
  EXPECT_TRUE(seen.fenced_gpus.empty());
  EXPECT_EQ(seen.gpus.at(0), WithoutHealth(g));
  EXPECT_EQ(seen.gpus.at(0).readings, 0u);  // no reading: nothing said healthy or not
  EXPECT_FALSE(Reencode(Encode(beat), 14).ok());
  EXPECT_EQ(PeekVersion(EncodeAs(beat, 15)), 15);
  EXPECT_EQ(PeekVersion("not a message"), 0);
}

}  // namespace
}  // namespace coupler::wire
