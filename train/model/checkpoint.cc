#include "train/model/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <system_error>

#include "runtime/io/atomic_file.h"
#include "runtime/logging.h"

namespace coupler::train {
namespace {

constexpr char kMagic[8] = {'C', 'P', 'L', 'R', 'C', 'K', 'P', 'T'};
// 2 added the run's identity after the fingerprint; 1 is still read (its run unknown).
constexpr uint32_t kVersion = 3;

// FNV-1a over the payload: catches truncation and bit rot; not a security measure.
uint64_t Fnv1a(std::span<const std::byte> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) h = (h ^ static_cast<uint8_t>(b)) * 0x100000001b3ull;
  return h;
}

class Encoder {
 public:
  template <typename T>
  void Put(const T& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put(static_cast<uint64_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out_.insert(out_.end(), p, p + s.size());
  }
  void PutFloats(const std::vector<float>& v) {
    Put(static_cast<uint64_t>(v.size()));
    const auto bytes = std::as_bytes(std::span(v));
    out_.insert(out_.end(), bytes.begin(), bytes.end());
  }
  std::vector<std::byte>& bytes() { return out_; }

 private:
  std::vector<std::byte> out_;
};

class Decoder {
 public:
  explicit Decoder(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint64_t n = 0;
    if (!Get(&n) || in_.size() - pos_ < n) return false;
    s->assign(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool GetFloats(std::vector<float>* v) {
    uint64_t n = 0;
    if (!Get(&n) || (in_.size() - pos_) / sizeof(float) < n) return false;
    v->resize(n);
    std::memcpy(v->data(), in_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  size_t pos_ = 0;
};

std::vector<std::filesystem::path> CheckpointFiles(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // Exactly "ckpt-NNNNNNNNNN.bin": temporaries ("...bin.tmp.<pid>.<hex>") never count.
    if (name.size() == 19 && name.starts_with("ckpt-") && name.ends_with(".bin")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());  // zero-padded steps sort by name
  return files;
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "ckpt-%010lld.bin", static_cast<long long>(step));
  return (std::filesystem::path(dir) / name).string();
}

Status WriteCheckpoint(const std::string& dir, const CheckpointState& state, int keep) {
  Encoder payload;
  payload.Put(state.step);
  payload.Put(state.seed);
  payload.Put(state.micro_batch);
  payload.Put(state.accumulate);
  payload.Put(state.loss_scale);
  payload.Put(state.clean_steps);
  payload.Put(state.optimizer_steps);
  payload.PutString(state.fingerprint);
  payload.PutString(state.run);
  payload.Put(state.train_seconds);
  payload.Put(state.best_val_loss);
  payload.Put(state.best_val_accuracy);
  payload.Put(state.best_epoch);
  payload.Put(state.epochs_since_best);
  payload.PutFloats(state.params);
  payload.PutFloats(state.optimizer_state);

  Encoder header;
  for (char c : kMagic) header.Put(c);
  header.Put(kVersion);
  header.Put(static_cast<uint64_t>(payload.bytes().size()));
  header.Put(Fnv1a(payload.bytes()));
  const std::span<const std::byte> parts[] = {header.bytes(), payload.bytes()};
  const std::string path = CheckpointPath(dir, state.step);
  COUPLER_RETURN_IF_ERROR(io::WriteFileAtomic(path, parts, /*durable=*/true)
                              .WithContext("write checkpoint"));

  const auto files = CheckpointFiles(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < files.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(files[i], ec);
  }
  return Status::Ok();
}

Result<CheckpointState> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("checkpoint " + path + " cannot be opened");
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto bytes = std::as_bytes(std::span(raw));
  Decoder header(bytes);
  char magic[8];
  uint32_t version = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
  for (char& c : magic) header.Get(&c);
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return InvalidArgument("checkpoint " + path + " is not a coupler checkpoint");
  }
  if (!header.Get(&version) || version < 1 || version > kVersion) {
    return InvalidArgument("checkpoint " + path + " has unsupported version " +
                           std::to_string(version));
  }
  constexpr size_t kHeaderBytes = sizeof(kMagic) + 4 + 8 + 8;
  if (!header.Get(&size) || !header.Get(&checksum) || bytes.size() - kHeaderBytes != size) {
    return InvalidArgument("checkpoint " + path + " is truncated");
  }
  const auto payload_bytes = bytes.subspan(kHeaderBytes);
  if (Fnv1a(payload_bytes) != checksum) {
    return InvalidArgument("checkpoint " + path + " is corrupt (checksum mismatch)");
  }
  CheckpointState s;
  Decoder p(payload_bytes);
  const bool ok = p.Get(&s.step) && p.Get(&s.seed) && p.Get(&s.micro_batch) &&
                  p.Get(&s.accumulate) && p.Get(&s.loss_scale) && p.Get(&s.clean_steps) &&
                  p.Get(&s.optimizer_steps) && p.GetString(&s.fingerprint) &&
                  (version < 2 || p.GetString(&s.run)) &&
                  (version < 3 || (p.Get(&s.train_seconds) && p.Get(&s.best_val_loss) &&
                                   p.Get(&s.best_val_accuracy) && p.Get(&s.best_epoch) &&
                                   p.Get(&s.epochs_since_best))) &&
                  p.GetFloats(&s.params) &&
                  p.GetFloats(&s.optimizer_state) && p.done();
  if (!ok) return InvalidArgument("checkpoint " + path + " is malformed");
  return s;
}

std::vector<std::string> CheckpointFolders(const std::string& dir) {
  std::vector<std::string> folders = {dir};
  std::vector<std::string> runs;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && entry.path().filename().string().starts_with("run-")) {
      runs.push_back(entry.path().string());
    }
  }
  std::sort(runs.begin(), runs.end());
  folders.insert(folders.end(), runs.begin(), runs.end());
  return folders;
}

bool HasCheckpoints(const std::string& dir) { return !CheckpointFiles(dir).empty(); }

Result<std::optional<CheckpointState>> ReadNewestCheckpoint(const std::string& dir) {
  auto files = CheckpointFiles(dir);
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    auto state = ReadCheckpoint(it->string());
    if (state.ok()) return std::optional<CheckpointState>(std::move(state).value());
    Logger("train")->warn("skipping unreadable checkpoint: {}", state.status().message());
  }
  return std::optional<CheckpointState>();
}

}  // namespace coupler::train
