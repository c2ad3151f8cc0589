// Bad bytes in, a clear InvalidArgument out: never a crash, never a huge allocation.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/wire/bounded_archive.h"
#include "runtime/wire/codec.h"
#include "tests/wire_sample_messages.h"

namespace coupler::wire {
namespace {

std::string Le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// An envelope built by hand, so every header field can lie.
std::string Raw(uint16_t version, uint16_t type, uint64_t length, const std::string& payload,
                const std::string& magic = "CPLR") {
  return magic + Le(version, 2) + Le(type, 2) + Le(length, 4) + Le(0, 8) + payload;
}

std::string Raw(MessageType type, const std::string& payload) {
  return Raw(kProtocolVersion, static_cast<uint16_t>(type), payload.size(), payload);
}

// The payload of an encoded message, with the header rewritten to match a new payload.
std::string Reframe(const std::string& encoded, const std::string& payload) {
  return encoded.substr(0, 8) + Le(payload.size(), 4) + encoded.substr(12, 8) + payload;
}

// A TaskAssignment of one TaskSpec with every field empty or zero but `kind` (its byte) and
// `params` (the map's bytes after its count of entries).
std::string OneTask(uint8_t kind, uint64_t param_count, const std::string& params) {
  const std::string head = Le(1, 8) + Le(0, 8) + Le(0, 8) + Le(0, 8) + Le(0, 8) + Le(0, 4);
  const std::string after_kind = Le(0, 4) + Le(0, 4) + Le(0, 4) + Le(0, 8) + Le(0, 8);
  // timeout, GPU memory, gpus, then seven empty sizes: gang hosts, gang ranks, gang token,
  // workdir, its token, fused steps, in-memory outputs.
  const std::string tail = Le(0, 8) + Le(0, 8) + Le(0, 4) + std::string(7 * 8, '\0');
  return Raw(MessageType::kTaskAssignment, head + std::string(1, static_cast<char>(kind)) +
                                               after_kind + Le(param_count, 8) + params + tail);
}

struct MalformedCase {
  std::string name;
  std::string bytes;
  std::string expected_words;  // must appear in the status message
  DecodeLimits limits = {};
};

std::vector<MalformedCase> MalformedCases() {
  const std::string cancel = Encode(CancelJob{"j-9"});
  const std::string cancel_payload = cancel.substr(kHeaderSize);
  const uint16_t cancel_type = static_cast<uint16_t>(MessageType::kCancelJob);
  const std::string job_id_payload = Le(3, 8) + "abc";
  return {
      {"empty", "", "header"},
      {"three_bytes", "CPL", "truncated"},
      {"header_only_short", cancel.substr(0, kHeaderSize - 1), "header"},
      {"wrong_magic", "XPLR" + cancel.substr(4), "magic"},
      {"lowercase_magic", "cplr" + cancel.substr(4), "magic"},
      {"version_0", Raw(0, cancel_type, 11, cancel_payload), "version 0"},
      {"version_99", Raw(99, cancel_type, 11, cancel_payload), "version 99"},
      {"version_1_older_peer", Raw(1, cancel_type, 11, cancel_payload), "version 1"},
      {"type_0", Raw(kProtocolVersion, 0, 11, cancel_payload), "type 0"},
      {"type_unknown", Raw(kProtocolVersion, 999, 11, cancel_payload), "unknown message type 999"},
      {"length_more_than_present", Raw(kProtocolVersion, cancel_type, 12, cancel_payload), "truncated"},
      {"length_far_more", Raw(kProtocolVersion, cancel_type, 0xffff, cancel_payload), "length"},
      {"length_less_trailing_bytes", Raw(kProtocolVersion, cancel_type, 10, cancel_payload), "trailing"},
      {"length_zero_with_payload", Raw(kProtocolVersion, cancel_type, 0, cancel_payload), "length"},
      {"payload_over_cap", cancel, "exceeds the limit of 8", DecodeLimits{8}},
      {"length_over_default_cap", Raw(kProtocolVersion, cancel_type, 0xffffffff, ""), "exceeds the limit"},
      {"string_size_2_pow_60", Raw(MessageType::kCancelJob, Le(uint64_t{1} << 60, 8) + "abc"),
       "size prefix 1152921504606846976"},
      {"string_size_max", Raw(MessageType::kCancelJob, Le(~uint64_t{0}, 8)), "exceeds"},
      {"string_size_one_too_many", Raw(MessageType::kCancelJob, Le(4, 8) + "abc"), "exceeds"},
      {"vector_size_past_end", Raw(MessageType::kStatusReply, Le(1000, 8) + std::string(16, '\0')),
       "size prefix 1000"},
      {"vector_size_2_pow_60",
       Raw(MessageType::kTaskAssignment, Le(uint64_t{1} << 60, 8) + std::string(40, '\0')),
       "exceeds"},
      {"vector_elements_run_out",
       Raw(MessageType::kStatusReply, Le(3, 8) + std::string(16, '\0')), "truncated"},
      {"map_size_past_end",
       Raw(MessageType::kRegisterWorker, std::string(8 * 2 + 4 * 4 + 8, '\0') + Le(0, 8) +
                                             Le(uint64_t{1} << 40, 8)),
       "exceeds"},
      {"empty_payload", Raw(MessageType::kCancelJob, ""), "truncated"},
      {"trailing_garbage_in_payload", Raw(MessageType::kCancelJob, job_id_payload + "zz"),
       "2 trailing bytes"},
      {"bool_not_0_or_1", Raw(MessageType::kSubmitReply, Le(0, 8) + "\x02" + Le(0, 8)),
       "not 0 or 1"},
      {"task_kind_3", OneTask(3, 0, ""), "task kind 3 is not 0, 1 or 2"},
      {"param_variant_index_6", OneTask(0, 1, Le(1, 8) + "k" + Le(6, 4) + Le(0, 8)), "variant"},
      {"param_variant_index_negative", OneTask(0, 1, Le(1, 8) + "k" + Le(0xffffffff, 4) + Le(0, 8)),
       "variant"},
  };
}

TEST(WireMalformedTest, EveryMalformedCaseIsRejectedWithItsReason) {
  for (const MalformedCase& c : MalformedCases()) {
    Result<Message> decoded = Decode(c.bytes, c.limits);
    ASSERT_FALSE(decoded.ok()) << c.name;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(decoded.status().message().find(c.expected_words), std::string::npos)
        << c.name << ": \"" << decoded.status().message() << "\" lacks \"" << c.expected_words
        << "\"";
  }
}

// The same bytes with a sane header decode, so each case above fails for its stated reason.
TEST(WireMalformedTest, ControlCasesDecode) {
  EXPECT_TRUE(Decode(Raw(MessageType::kCancelJob, Le(3, 8) + "abc")).ok());
  EXPECT_TRUE(Decode(Raw(MessageType::kSubmitReply, Le(0, 8) + "\x01" + Le(0, 8) + '\0')).ok());
  // No jobs, then the coordinator counters: u64 received, u64 dropped, u32 workers, u64 uptime,
  // u64 x3 queued (cpu, gpu, gang ranks), u32 recommended workers, u64 longest partial hold,
  // u64 x3 refused handshakes, refused registrations, stale outcomes, bool encrypted, an empty
  // store error (u64 size), u64 replies dropped, u64 running, u64 prefetched, no warnings
  // (u64 size).
  EXPECT_TRUE(Decode(Raw(MessageType::kStatusReply, Le(0, 8) + std::string(129, '\0'))).ok());
  EXPECT_TRUE(Decode(Encode(CancelJob{"j-9"}), DecodeLimits{11}).ok());
  // A gang task with one i64 param (variant index 1).
  EXPECT_TRUE(Decode(OneTask(2, 1, Le(1, 8) + "k" + Le(1, 4) + Le(7, 8))).ok());
}

TEST(WireMalformedTest, EveryPrefixOfEveryMessageIsRejected) {
  for (const Message& sample : SampleMessages()) {
    const std::string bytes = Encode(sample);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(Decode(bytes.substr(0, n)).ok()) << MessageTypeName(TypeOf(sample)) << " " << n;
    }
  }
}

// Truncated payloads whose header was fixed to agree: the payload decoder itself must notice.
TEST(WireMalformedTest, EveryPayloadPrefixWithMatchingLengthIsRejected) {
  for (const Message& sample : SampleMessages()) {
    const std::string bytes = Encode(sample);
    const std::string payload = bytes.substr(kHeaderSize);
    for (size_t n = 0; n < payload.size(); ++n) {
      Result<Message> decoded = Decode(Reframe(bytes, payload.substr(0, n)));
      ASSERT_FALSE(decoded.ok()) << MessageTypeName(TypeOf(sample)) << " " << n;
      EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(WireMalformedTest, TrailingBytesInsidePayloadAreRejected) {
  for (const Message& sample : SampleMessages()) {
    const std::string bytes = Encode(sample);
    Result<Message> decoded = Decode(Reframe(bytes, bytes.substr(kHeaderSize) + "x"));
    ASSERT_FALSE(decoded.ok()) << MessageTypeName(TypeOf(sample));
    EXPECT_NE(decoded.status().message().find("trailing"), std::string::npos)
        << decoded.status().message();
  }
}

// Random 1-3 byte flips. A flip inside string text yields a different valid message, so the
// assertion is: rejected, or a message that differs from the original and re-encodes stably.
TEST(WireMalformedTest, RandomByteFlipsNeverCrashOrDecodeToTheOriginal) {
  std::mt19937 rng(12345);
  size_t rejected = 0;
  size_t accepted = 0;
  for (const Message& sample : SampleMessages()) {
    const std::string bytes = Encode(sample);
    std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
    std::uniform_int_distribution<int> bit(0, 7);
    std::uniform_int_distribution<int> flips(1, 3);
    for (int iter = 0; iter < 500; ++iter) {
      std::string mutated = bytes;
      for (int f = flips(rng); f > 0; --f) mutated[pos(rng)] ^= static_cast<char>(1 << bit(rng));
      // The header's epoch is not part of the message: flips that land only there change who
      // the message speaks for (ReadHeader), not what it says.
      std::string without_epoch = mutated;
      StampEpoch(without_epoch, 0);
      if (without_epoch == bytes) continue;
      // Nor do flips that only move the header's version to the previous one, which this build
      // also reads (N-1): most messages are the same in both.
      std::string same_version = without_epoch;
      same_version[4] = bytes[4];
      same_version[5] = bytes[5];
      if (same_version == bytes && PeekVersion(mutated) == kMinSupportedVersion) continue;
      Result<Message> decoded = Decode(mutated);
      if (!decoded.ok()) {
        ++rejected;
        EXPECT_FALSE(decoded.status().message().empty());
        continue;
      }
      ++accepted;
      EXPECT_FALSE(*decoded == sample) << MessageTypeName(TypeOf(sample));
      const std::string again = Encode(*decoded);
      Result<Message> redecoded = Decode(again);
      ASSERT_TRUE(redecoded.ok()) << redecoded.status().ToString();
      EXPECT_EQ(Encode(*redecoded), again);
    }
  }
  // Most flips land in a header, a length or a size prefix; some in text.
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(accepted, 0u);
}

TEST(WireBoundedArchiveTest, NumericVectorNeedsBytesForEveryElementBeforeResizing) {
  // Claims 10 uint32 (40 bytes) with 12 present; cereal's own loader would resize first.
  const std::string bytes = Le(10, 8) + std::string(12, '\0');
  BoundedInputArchive archive(bytes);
  std::vector<uint32_t> values;
  try {
    archive(values);
    FAIL() << "accepted a short vector";
  } catch (const cereal::Exception& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the 12 bytes left"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(values.empty());
}

TEST(WireBoundedArchiveTest, NumericVectorReadsBack) {
  const std::string bytes = Le(3, 8) + Le(7, 4) + Le(8, 4) + Le(9, 4);
  BoundedInputArchive archive(bytes);
  std::vector<uint32_t> values;
  archive(values);
  EXPECT_EQ(values, (std::vector<uint32_t>{7, 8, 9}));
  EXPECT_EQ(archive.remaining(), 0u);
}

TEST(WireBoundedArchiveTest, BoolVectorRejectsNonCanonicalBytes) {
  const std::string bytes = Le(2, 8) + "\x01\x05";
  BoundedInputArchive archive(bytes);
  std::vector<bool> values;
  EXPECT_THROW(archive(values), cereal::Exception);
}

}  // namespace
}  // namespace coupler::wire
