#include "worker/ops/missing_shard.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "runtime/io/output_layout.h"
#include "worker/ops/gang_launch.h"

namespace coupler::worker {
namespace {

constexpr std::string_view kNoteSuffix = ".missing";

// A note's values are single lines: control characters (a command's newlines) become spaces.
std::string OneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

struct ShardName {
  std::string node;
  int64_t shard = -1;
};

// "{workdir}/{node}/part-NNNNN.npz" (or .npy) read back into its node and shard: only for naming it in
// an error. The name must be what io::ShardFileName makes, so the layout has one owner.
std::optional<ShardName> ParseShardPath(std::string_view path) {
  const std::filesystem::path p(path);
  const std::string file = p.filename().string();
  constexpr std::string_view kPrefix = "part-";
  if (file.size() <= kPrefix.size() || file.compare(0, kPrefix.size(), kPrefix) != 0) {
    return std::nullopt;
  }
  int64_t shard = -1;
  const char* first = file.data() + kPrefix.size();
  const auto [end, ec] = std::from_chars(first, file.data() + file.size(), shard);
  if (ec != std::errc() || shard < 0 ||
      (io::ShardFileName(shard) != file &&
       io::ShardFileName(shard, io::ShardKind::kPart, io::ShardFormat::kRecords) != file)) {
    return std::nullopt;
  }
  const std::string node = p.parent_path().filename().string();
  if (node.empty()) return std::nullopt;
  return ShardName{node, shard};
}

struct Note {
  ShardName name;
  std::string why;
};

std::optional<Note> ReadNote(std::string_view path) {
  std::ifstream in(MissingShardNotePath(path));
  if (!in) return std::nullopt;
  Note note;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    const std::string value = line.substr(colon + 2);
    if (key == "node") {
      note.name.node = value;
    } else if (key == "shard") {
      std::from_chars(value.data(), value.data() + value.size(), note.name.shard);
    } else if (key == "why") {
      note.why = value;
    }
  }
  if (note.why.empty()) return std::nullopt;
  return note;
}

std::string Describe(std::string_view path, const std::optional<ShardName>& name) {
  if (!name || name->node.empty() || name->shard < 0) return "input " + std::string(path);
  return "input shard " + std::to_string(name->shard) + " of node '" + name->node + "' (" +
         std::string(path) + ")";
}

}  // namespace

std::string MissingShardNotePath(std::string_view output_path) {
  return std::string(output_path) + std::string(kNoteSuffix);
}

Status NoteMissingShard(std::string_view output_path, std::string_view node, int64_t shard,
                        std::string_view why) {
  std::ostringstream text;
  text << "node: " << OneLine(node) << "\nshard: " << shard << "\nwhy: " << OneLine(why) << "\n";
  return WriteTextFile(MissingShardNotePath(output_path), text.str());
}

void ClearMissingShardNote(std::string_view output_path) {
  std::error_code ec;
  std::filesystem::remove(MissingShardNotePath(output_path), ec);
}

Status ExplainMissingInput(std::string_view path, const Status& not_found) {
  if (not_found.code() != StatusCode::kNotFound) return not_found;
  if (std::optional<Note> note = ReadNote(path)) {
    std::optional<ShardName> name = note->name;
    if (name->node.empty() || name->shard < 0) name = ParseShardPath(path);
    return InvalidData(Describe(path, name) + " is missing: " + note->why);
  }
  return NotFound(Describe(path, ParseShardPath(path)) + " is missing: " + not_found.message());
}

}  // namespace coupler::worker
