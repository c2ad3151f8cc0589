#include "runtime/net/key_discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

// When a process started, in clock ticks since boot (/proc/PID/stat, field 22): with the pid it
// names one process, not whichever later reuses the number. nullopt when there is none.
std::optional<uint64_t> ProcessStartTicks(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: count after its end.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  uint64_t ticks = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), ticks);
  if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return ticks;
}

// This process's PID namespace ("pid:[4026531836]"): a pid names a process only inside the
// namespace it was taken in (a coordinator in a container, a CLI on the host).
std::string PidNamespace() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/ns/pid", ec).string();
}

// The note's second line ("pid P STARTTICKS pid:[NS]") names a writer that has stopped: judged
// only from the writer's own PID namespace (from another, its pid means nothing here). False
// for a note that names no writer (an older build's): nothing is known of it.
bool WriterGone(const std::string& writer_line, long* pid_out = nullptr) {
  std::istringstream w(writer_line);
  std::string word;
  long pid = 0;
  uint64_t started = 0;
  std::string pid_ns;
  if (!(w >> word >> pid >> started >> pid_ns) || word != "pid" || pid_ns != PidNamespace()) {
    return false;
  }
  if (pid_out != nullptr) *pid_out = pid;
  return ProcessStartTicks(pid) != started;
}

// Removes the notes of coordinators that have stopped (their pid gone, or reused by another
// process), so the folder holds the live ones, not every coordinator this user ever ran.
void PruneStoppedNotes(const std::string& dir, const std::string& keep) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == keep || !e.is_regular_file(ec) || name.find(".tmp.") != std::string::npos) continue;
    std::ifstream in(e.path());
    std::string note;
    std::string writer;
    std::getline(in, note);
    std::getline(in, writer);
    if (WriterGone(writer)) fs::remove(e.path(), ec);
  }
}

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
    // Who wrote it: a note outliving its coordinator (killed, its machine rebooted) is known
    // for stale, so a peer waits for the next coordinator's rather than use old keys. Readers
    // of the first line alone (older builds) are unaffected.
    if (const std::optional<uint64_t> started = ProcessStartTicks(::getpid())) {
      out << "pid " << ::getpid() << " " << *started << " " << PidNamespace() << "\n";
    }
    if (!out) return Internal("cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  fs::rename(tmp, path, ec);
  if (ec) return Internal("cannot write " + path + ": " + ec.message());
  PruneStoppedNotes(dir, *name);
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
  std::string writer;
  if (name) {
    std::ifstream in(NotesDir() + "/" + *name);
    std::getline(in, note);
    std::getline(in, writer);
  }
  long pid = 0;
  if (!note.empty() && WriterGone(writer, &pid)) {
    return NotFound("the note of the coordinator at " + endpoint + " was left by one that has "
                    "stopped (pid " + std::to_string(pid) + "): is `coupler coordinator` running "
                    "there, as this user?");
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

Result<std::optional<PeerKeys>> AwaitPeerKeys(const std::string& endpoint, KeyRole role,
                                              const std::string& explicit_dir, bool insecure,
                                              std::optional<std::chrono::milliseconds> timeout,
                                              const std::function<void(const Status&)>& waiting) {
  const auto start = std::chrono::steady_clock::now();
  const char* env = std::getenv("COUPLER_KEYS");
  const bool named = insecure || !explicit_dir.empty() || (env != nullptr && *env != '\0');
  bool told = false;
  for (;;) {
    Result<std::optional<PeerKeys>> keys = FindPeerKeys(endpoint, role, explicit_dir, insecure);
    // Not there yet: no note, or a note left by an earlier coordinator on this endpoint whose
    // keys are gone (the new one overwrites it once its own keys exist).
    const bool not_yet = !named && !keys.ok() && keys.status().code() == StatusCode::kNotFound;
    if (!not_yet || (timeout && std::chrono::steady_clock::now() - start >= *timeout)) {
      return keys;
    }
    // Told only past a coordinator's usual start (well under a second): the README's lines
    // stay quiet, a worker pointed at the wrong place says so.
    if (!told && waiting && std::chrono::steady_clock::now() - start >= std::chrono::seconds(2)) {
      waiting(keys.status());
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace coupler::net
