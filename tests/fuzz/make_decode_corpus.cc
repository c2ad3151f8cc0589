// Writes the seed corpus for fuzz_decode: one valid envelope per message type (the samples of
// tests/wire_sample_messages.h) plus a few malformed ones. Rerun after a protocol version
// bump; WireCodecTest.SeedCorpusMatchesSamples checks the checked-in seeds are current.
//
//   g++ -std=c++20 -I. runtime/status.cc runtime/wire/*.cc runtime/job/job_phase.cc
//       runtime/job/node_phase.cc runtime/pool/worker_state.cc runtime/pool/gpu_health.cc
//       tests/fuzz/make_decode_corpus.cc -lfmt -o /tmp/make_decode_corpus
//   /tmp/make_decode_corpus tests/fuzz/corpus/decode
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/wire/codec.h"
#include "tests/wire_sample_messages.h"

namespace {

bool WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "make_decode_corpus: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_decode_corpus OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "make_decode_corpus: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  using coupler::wire::Encode;
  bool ok = true;
  for (const coupler::wire::Message& m : coupler::wire::SampleMessages()) {
    ok &= WriteFile(dir / coupler::wire::SeedFileName(coupler::wire::TypeOf(m)), Encode(m));
  }
  // Malformed seeds start the fuzzer next to the interesting rejections.
  const std::string cancel = Encode(coupler::wire::CancelJob{"j-9"});
  std::string bad_version = cancel;
  bad_version[4] = 2;  // version field, low byte
  ok &= WriteFile(dir / "bad_version.bin", bad_version);
  std::string huge_string = cancel;
  huge_string[coupler::wire::kHeaderSize + 7] = 0x10;  // string size prefix becomes 2^60 + 3
  ok &= WriteFile(dir / "huge_string_size.bin", huge_string);
  const std::string result = Encode(coupler::wire::SampleMessages()[3]);
  ok &= WriteFile(dir / "truncated_task_result.bin", result.substr(0, result.size() - 5));
  return ok ? 0 : 1;
}
