#include "runtime/net/key_discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/net/endpoint.h"

namespace coupler::net {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInsecure = "insecure";

// One note per address a peer may dial: tcp by port (a peer may write 127.0.0.1, localhost or
// the address the coordinator bound as a wildcard), ipc by path.
std::optional<std::string> NoteName(const std::string& endpoint) {
  const std::optional<Endpoint> e = ParseEndpoint(endpoint);
  if (!e) return std::nullopt;
  if (e->transport == "tcp") {
    if (e->port == "*") return std::nullopt;
    return "tcp-" + e->port;
  }
  if (e->transport == "ipc") {
    uint64_t h = 1469598103934665603ull;  // FNV-1a: a stable name for any path length
    for (unsigned char c : e->path) h = (h ^ c) * 1099511628211ull;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "ipc-%016llx", static_cast<unsigned long long>(h));
    return std::string(buf);
  }
  return std::nullopt;
}

std::string NotesDir() { return CouplerHome() + "/coordinators"; }

}  // namespace

std::string CouplerHome() {
  if (const char* h = std::getenv("COUPLER_HOME"); h != nullptr && *h != '\0') return h;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.coupler";
  }
  return "/tmp/coupler-" + std::to_string(::getuid());
}

Status PublishKeyLocation(const std::string& endpoint, const std::string& keys_dir) {
  const std::optional<std::string> name = NoteName(endpoint);
  if (!name) return Status::Ok();  // nothing a peer could look up
  const std::string dir = NotesDir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  ::chmod(CouplerHome().c_str(), 0700);
  ::chmod(dir.c_str(), 0700);
  const std::string path = dir + "/" + *name;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << (keys_dir.empty() ? std::string(kInsecure)
                             : fs::absolute(keys_dir, ec).lexically_normal().string())
        << "\n";
    if (!out) return Internal("cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  fs::rename(tmp, path, ec);
  if (ec) return Internal("cannot write " + path + ": " + ec.message());
  return Status::Ok();
}

Result<std::optional<PeerKeys>> FindPeerKeys(const std::string& endpoint, KeyRole role,
                                             const std::string& explicit_dir, bool insecure) {
  if (insecure) return std::optional<PeerKeys>();
  std::string dir = explicit_dir;
  if (dir.empty()) {
    if (const char* env = std::getenv("COUPLER_KEYS"); env != nullptr) dir = env;
  }
  if (!dir.empty()) {
    COUPLER_ASSIGN_OR_RETURN(PeerKeys keys, LoadPeerKeys(dir, role));
    return std::optional<PeerKeys>(std::move(keys));
  }
  const std::optional<std::string> name = NoteName(endpoint);
  std::string note;
  if (name) {
    std::ifstream in(NotesDir() + "/" + *name);
    std::getline(in, note);
  }
  if (note.empty()) {
    return NotFound("no keys for the coordinator at " + endpoint +
                    " (is `coupler coordinator` running there, as this user?): pass --keys DIR "
                    "(or set COUPLER_KEYS) with a " +
                    std::string(KeyRoleName(role)) +
                    " key set (docs/security.md), or --insecure if it runs --insecure");
  }
  if (note == kInsecure) return std::optional<PeerKeys>();
  Result<PeerKeys> keys = LoadPeerKeys(LocalPeerDir(note, role), role);
  if (!keys.ok()) {
    return keys.status().WithContext("the local keys of the coordinator at " + endpoint);
  }
  return std::optional<PeerKeys>(std::move(*keys));
}

}  // namespace coupler::net
