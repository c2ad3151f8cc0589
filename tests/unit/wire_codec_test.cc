// Round trips and the fixed wire layout of every coupler message.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include <cereal/archives/binary.hpp>
#include <gtest/gtest.h>

#include "runtime/wire/codec.h"
#include "runtime/wire/payload_version.h"
#include "tests/wire_sample_messages.h"

#ifndef COUPLER_SOURCE_DIR
#define COUPLER_SOURCE_DIR "."
#endif

namespace coupler::wire {
namespace {

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// A default-constructed message of the same type as `m`.
Message DefaultLike(const Message& m) {
  return std::visit([](const auto& v) { return Message(std::decay_t<decltype(v)>{}); }, m);
}

TEST(WireCodecTest, SamplesCoverEveryMessageTypeOnce) {
  std::set<MessageType> seen;
  for (const Message& m : SampleMessages()) EXPECT_TRUE(seen.insert(TypeOf(m)).second);
  EXPECT_EQ(seen.size(), std::size(kAllMessageTypes));
}

TEST(WireCodecTest, EveryMessageTypeRoundTripsFieldByField) {
  for (const Message& sample : SampleMessages()) {
    const std::string_view name = MessageTypeName(TypeOf(sample));
    const std::string bytes = Encode(sample);
    Result<Message> decoded = Decode(bytes);
    ASSERT_TRUE(decoded.ok()) << name << ": " << decoded.status().ToString();
    EXPECT_EQ(TypeOf(*decoded), TypeOf(sample)) << name;
    // The samples set every field away from its default, so a field missing from serialize()
    // comes back default and fails this comparison.
    EXPECT_TRUE(*decoded == sample) << name;
    EXPECT_FALSE(*decoded == DefaultLike(sample)) << name;
  }
}

// Payloads are written by an archive that appends to the message string (string_archive.h):
// byte for byte what cereal's BinaryOutputArchive writes through a stream, for every message
// type, in every version this build speaks, full and empty.
TEST(WireCodecTest, PayloadsAreWhatCerealsBinaryArchiveWrites) {
  for (const Message& sample : SampleMessages()) {
    for (const Message& m : {sample, DefaultLike(sample)}) {
      for (uint16_t version = kMinSupportedVersion; version <= kProtocolVersion; ++version) {
        std::visit(
            [&](const auto& message) {
              std::ostringstream reference;
              {
                PayloadVersionScope scope(version);
                cereal::BinaryOutputArchive archive(reference);
                archive(message);
              }
              EXPECT_EQ(Hex(EncodeAs(message, version).substr(kHeaderSize)), Hex(reference.str()))
                  << MessageTypeName(TypeOf(m)) << " version " << version;
            },
            m);
      }
    }
  }
}

TEST(WireCodecTest, DefaultMessagesRoundTrip) {
  for (const Message& sample : SampleMessages()) {
    const Message empty = DefaultLike(sample);
    Result<Message> decoded = Decode(Encode(empty));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_TRUE(*decoded == empty) << MessageTypeName(TypeOf(empty));
  }
}

TEST(WireCodecTest, TypedEncodeMatchesVariantEncode) {
  const Message sample = SampleMessages()[2];
  ASSERT_TRUE(std::holds_alternative<TaskAssignment>(sample));
  EXPECT_EQ(Encode(std::get<TaskAssignment>(sample)), Encode(sample));
}

TEST(WireCodecTest, LargeBatchRoundTrips) {
  TaskAssignment batch;
  for (uint64_t i = 0; i < 1000; ++i) {
    TaskSpec t;
    t.job_id = "j";
    t.task_id = i;
    t.op = "noop";
    t.shard_index = static_cast<int32_t>(i);
    t.input_paths = {"/in/" + std::to_string(i) + ".npy"};
    batch.tasks.push_back(t);
  }
  Result<Message> decoded = Decode(Encode(batch));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(std::holds_alternative<TaskAssignment>(*decoded));
  EXPECT_EQ(std::get<TaskAssignment>(*decoded), batch);
}

// The envelope, byte for byte: magic, version 17, type 20 (CancelJob), length 11, epoch 0 (a
// client's), then cereal's u64 size prefix and the string.
TEST(WireCodecTest, EnvelopeLayoutIsLittleEndianAndFixed) {
  const std::string bytes = Encode(CancelJob{"j-9"});
  ASSERT_EQ(bytes.size(), kHeaderSize + 11);
  EXPECT_EQ(Hex(bytes),
            "43504c52"  "1100"  "1400"  "0b000000"  "0000000000000000"
            "0300000000000000"  "6a2d39");
}

// Versions this build has no layout for are refused, both named: a version-15 payload lacks
// fields this build reads, and a version-18 payload may hold fields this build cannot know.
TEST(WireCodecTest, AnotherVersionIsRefusedWithBothVersionsNamed) {
  for (const uint16_t version : {uint16_t{15}, uint16_t{18}}) {
    std::string bytes = Encode(CancelJob{"j-9"});
    bytes[4] = static_cast<char>(version);
    Result<Message> decoded = Decode(bytes);
    ASSERT_FALSE(decoded.ok()) << version;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(decoded.status().message().find("unsupported protocol version " +
                                              std::to_string(version) + " (this build reads 16 to 17)"),
              std::string::npos)
        << decoded.status().message();
  }
}

TEST(WireCodecTest, HeaderWriteReadRoundTrip) {
  char buf[kHeaderSize];
  const Header h{16, MessageType::kWorkersReply, 0x01020304, 0x1122334455667788};
  WriteHeader(h, buf);
  EXPECT_EQ(Hex(std::string_view(buf, kHeaderSize)),
            "43504c52" "1000" "1700" "04030201" "8877665544332211");
  Result<Header> back = ReadHeader(std::string_view(buf, kHeaderSize));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, h);
}

// A coordinator stamps its epoch on an encoded message without re-encoding it; the payload and
// the rest of the header stay as they were, and the message still decodes.
TEST(WireCodecTest, StampEpochRewritesOnlyTheEpoch) {
  const std::string plain = Encode(Reclaim{{TaskAttempt{"j-1", 3, 2}}});
  std::string stamped = plain;
  StampEpoch(stamped, 42);
  ASSERT_EQ(stamped.size(), plain.size());
  EXPECT_EQ(stamped.substr(0, 12), plain.substr(0, 12));
  EXPECT_EQ(stamped.substr(kHeaderSize), plain.substr(kHeaderSize));
  Result<Header> header = ReadHeader(stamped);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->epoch, 42u);
  EXPECT_EQ(ReadHeader(plain)->epoch, 0u);
  Result<Message> decoded = Decode(stamped);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(std::get<Reclaim>(*decoded).attempts.size(), 1u);
}

TEST(WireCodecTest, PeekTypeReadsOnlyTheHeader) {
  const std::string bytes = Encode(Heartbeat{});
  Result<MessageType> type = PeekType(bytes.substr(0, kHeaderSize));
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_EQ(*type, MessageType::kHeartbeat);

  std::string bad = bytes;
  bad[0] = 'X';
  EXPECT_FALSE(PeekType(bad).ok());
  EXPECT_FALSE(PeekType("CPL").ok());
}

// The checked-in fuzz seeds are the encodings of the samples. If this fails, a message's wire
// layout changed: bump kProtocolVersion (docs/protocol.md) and regenerate the seeds with
// make_decode_corpus.
TEST(WireCodecTest, SeedCorpusMatchesSamples) {
  const std::filesystem::path dir =
      std::filesystem::path(COUPLER_SOURCE_DIR) / "tests/fuzz/corpus/decode";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no seed corpus at " << dir;
  for (const Message& sample : SampleMessages()) {
    const std::filesystem::path file = dir / SeedFileName(TypeOf(sample));
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << "missing seed " << file;
    std::stringstream content;
    content << in.rdbuf();
    EXPECT_EQ(Hex(content.str()), Hex(Encode(sample))) << file;
  }
}

TEST(WireCodecTest, ErrorCarriesStatusBothWays) {
  const Status status = NotFound("job j-4 not found");
  const Error error = ErrorFromStatus(status, MessageType::kCancelJob);
  EXPECT_EQ(error.request_type, static_cast<uint16_t>(MessageType::kCancelJob));
  Result<Message> decoded = Decode(Encode(error));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(StatusFromError(std::get<Error>(*decoded)), status);
}

TEST(WireCodecTest, ErrorWithUnknownOrOkCodeIsNeverSuccess) {
  const Status unknown = StatusFromError(Error{0, 999, "from the future"});
  EXPECT_EQ(unknown.code(), StatusCode::kInternal);
  EXPECT_NE(unknown.message().find("from the future"), std::string::npos);
  EXPECT_EQ(StatusFromError(Error{0, 0, "x"}).code(), StatusCode::kInternal);
}

// The numbers docs/protocol.md gives for Error.code and TaskOutcome.error_code: a peer of
// another build reads them, so reordering the enum must fail here, not in the field.
TEST(WireCodecTest, StatusCodesKeepTheirWireNumbers) {
  const std::pair<StatusCode, uint16_t> pinned[] = {
      {StatusCode::kOk, 0},
      {StatusCode::kInvalidArgument, 1},
      {StatusCode::kNotFound, 2},
      {StatusCode::kUnavailable, 3},
      {StatusCode::kResourceExhausted, 4},
      {StatusCode::kDeadlineExceeded, 5},
      {StatusCode::kAborted, 6},
      {StatusCode::kInternal, 7},
      {StatusCode::kPermissionDenied, 8},
      {StatusCode::kCancelled, 9},
      {StatusCode::kInvalidData, 10},
  };
  for (const auto& [code, number] : pinned) {
    EXPECT_EQ(static_cast<uint16_t>(code), number) << StatusCodeName(code);
    if (code == StatusCode::kOk) continue;
    EXPECT_EQ(ErrorFromStatus(Status(code, "m"), MessageType::kCancelJob).code, number);
    EXPECT_EQ(StatusFromError(Error{0, number, "m"}).code(), code) << number;
  }
}

TEST(WireCodecTest, SeedFileNamesAreSnakeCase) {
  EXPECT_EQ(SeedFileName(MessageType::kRegisterWorker), "register_worker.bin");
  EXPECT_EQ(SeedFileName(MessageType::kAck), "ack.bin");
}

}  // namespace
}  // namespace coupler::wire
