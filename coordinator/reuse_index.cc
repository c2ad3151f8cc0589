#include "coordinator/reuse_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

#include <rapidjson/document.h>

#include "runtime/io/atomic_file.h"
#include "runtime/io/content_hash.h"
#include "runtime/io/output_layout.h"
#include "runtime/util/json_writer.h"

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

std::optional<rapidjson::Document> ReadJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(text.str().c_str());
  if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
  return doc;
}

Status WriteText(const std::string& path, const std::string& text) {
  const std::span<const std::byte> part(reinterpret_cast<const std::byte*>(text.data()), text.size());
  return io::WriteFileAtomic(path, std::span<const std::span<const std::byte>>(&part, 1), false);
}

uint64_t U64(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsUint64() ? it->value.GetUint64() : 0;
}

std::string Str(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsString() ? it->value.GetString() : std::string();
}

}  // namespace

ReuseIndex ReuseIndex::Load(const std::string& workdir_root) {
  ReuseIndex index;
  index.path_ = (fs::path(workdir_root) / kReuseIndexFile).string();
  std::optional<rapidjson::Document> doc = ReadJson(index.path_);
  if (!doc || !doc->HasMember("nodes") || !(*doc)["nodes"].IsObject()) return index;
  for (const auto& m : (*doc)["nodes"].GetObject()) {
    if (!m.value.IsObject()) continue;
    NodeOutputs out;
    out.run_dir = Str(m.value, "run_dir");
    out.job_id = Str(m.value, "job");
    out.node = Str(m.value, "node");
    auto files = m.value.FindMember("files");
    if (files != m.value.MemberEnd() && files->value.IsArray()) {
      for (const auto& f : files->value.GetArray()) {
        if (f.IsObject()) out.files.emplace_back(Str(f, "path"), U64(f, "bytes"));
      }
    }
    index.nodes_[m.name.GetString()] = std::move(out);
  }
  return index;
}

std::optional<NodeOutputs> ReuseIndex::FindIntact(const std::string& key) const {
  auto it = nodes_.find(key);
  if (it == nodes_.end() || it->second.run_dir.empty() || it->second.files.empty()) return std::nullopt;
  const std::string dir = io::NodeDir(it->second.run_dir, it->second.node);
  for (const auto& [rel, bytes] : it->second.files) {
    std::error_code ec;
    const uint64_t size = fs::file_size(fs::path(dir) / rel, ec);
    if (ec || size != bytes) return std::nullopt;  // the old run was cleaned up or changed
  }
  return it->second;
}

Status ReuseIndex::Save() const {
  json::Writer w;
  w.BeginObject();
  w.Field("version", 1);
  w.BeginObject("nodes");
  for (const auto& [key, out] : nodes_) {
    w.BeginObject(key);
    w.Field("run_dir", out.run_dir);
    w.Field("job", out.job_id);
    w.Field("node", out.node);
    w.BeginArray("files");
    for (const auto& [rel, bytes] : out.files) {
      w.BeginObject();
      w.Field("path", rel);
      w.Field("bytes", bytes);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return WriteText(path_, w.Finish());
}

FileHashCache FileHashCache::Load(const std::string& workdir_root) {
  FileHashCache cache;
  cache.path_ = (fs::path(workdir_root) / kFileHashesFile).string();
  std::optional<rapidjson::Document> doc = ReadJson(cache.path_);
  if (!doc || !doc->HasMember("files") || !(*doc)["files"].IsObject()) return cache;
  for (const auto& m : (*doc)["files"].GetObject()) {
    if (!m.value.IsObject()) continue;
    Entry e;
    e.bytes = U64(m.value, "bytes");
    auto mt = m.value.FindMember("mtime_ns");
    e.mtime_ns = mt != m.value.MemberEnd() && mt->value.IsInt64() ? mt->value.GetInt64() : 0;
    e.inode = U64(m.value, "inode");
    e.hash = std::strtoull(Str(m.value, "hash").c_str(), nullptr, 16);
    cache.files_[m.name.GetString()] = e;
  }
  return cache;
}

Result<uint64_t> FileHashCache::Hash(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFound("cannot read " + path + ": it is gone");
  Entry now;
  now.bytes = static_cast<uint64_t>(st.st_size);
  now.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  now.inode = static_cast<uint64_t>(st.st_ino);
  auto it = files_.find(path);
  if (it != files_.end() && it->second.bytes == now.bytes && it->second.mtime_ns == now.mtime_ns &&
      it->second.inode == now.inode) {
    return it->second.hash;
  }
  COUPLER_ASSIGN_OR_RETURN(now.hash, io::HashFile(path));
  files_[path] = now;
  changed_ = true;
  return now.hash;
}

Status FileHashCache::Save() const {
  if (!changed_) return Status::Ok();
  json::Writer w;
  w.BeginObject();
  w.Field("version", 1);
  w.BeginObject("files");
  for (const auto& [path, e] : files_) {
    w.BeginObject(path);
    w.Field("bytes", e.bytes);
    w.Field("mtime_ns", e.mtime_ns);
    w.Field("inode", e.inode);
    w.Field("hash", io::HashHex(e.hash));
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return WriteText(path_, w.Finish());
}

Result<std::vector<std::pair<std::string, uint64_t>>> ListNodeOutputs(const std::string& node_dir) {
  std::vector<std::pair<std::string, uint64_t>> out;
  std::error_code ec;
  // A node that wrote nothing (noop, an exec with no outputs) has no folder: no outputs.
  if (!fs::exists(node_dir, ec) && !ec) return out;
  fs::recursive_directory_iterator it(node_dir, ec), end;
  if (ec) return NotFound("cannot list " + node_dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Internal("cannot list " + node_dir + ": " + ec.message());
    const fs::path rel = it->path().lexically_relative(node_dir);
    if (it.depth() == 0 && it->is_directory() && rel == "logs") {
      it.disable_recursion_pending();  // printed output, not outputs
      continue;
    }
    if (!it->is_regular_file() || io::IsTempFileName(it->path().filename().string())) continue;
    out.emplace_back(rel.string(), it->file_size());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status RecordNodeOutputs(const std::string& workdir_root, const std::string& key,
                         const std::string& run_dir, const std::string& job_id,
                         const std::string& node) {
  NodeOutputs out;
  out.run_dir = run_dir;
  out.job_id = job_id;
  out.node = node;
  COUPLER_ASSIGN_OR_RETURN(out.files, ListNodeOutputs(io::NodeDir(run_dir, node)));
  if (out.files.empty()) return Status::Ok();  // nothing a later run could take over
  ReuseIndex index = ReuseIndex::Load(workdir_root);
  index.Put(key, std::move(out));
  return index.Save();
}

Status LinkNodeOutputs(const std::string& from_node_dir, const std::string& to_node_dir,
                       const std::vector<std::pair<std::string, uint64_t>>& files) {
  std::error_code ec;
  if (fs::weakly_canonical(from_node_dir, ec) == fs::weakly_canonical(to_node_dir, ec)) {
    return Status::Ok();
  }
  for (const auto& file : files) {
    const fs::path from = fs::path(from_node_dir) / file.first;
    const fs::path to = fs::path(to_node_dir) / file.first;
    fs::create_directories(to.parent_path(), ec);
    // Beside the target first, then renamed over it: a reader never sees a partial file.
    const std::string tmp = io::TempPathFor(to.string());
    fs::create_hard_link(from, tmp, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(from, tmp, ec);
      if (ec) return Internal("cannot link or copy " + from.string() + " to " + to.string() + ": " + ec.message());
    }
    COUPLER_RETURN_IF_ERROR(io::RenameOver(tmp, to.string()));
  }
  return Status::Ok();
}

}  // namespace coupler::coordinator
