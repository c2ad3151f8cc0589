#include "runtime/net/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <zmq.h>


namespace coupler::net {
namespace {

namespace fs = std::filesystem;

constexpr size_t kZ85KeyChars = 40;

bool ValidZ85Key(const std::string& z85) {
  if (z85.size() != kZ85KeyChars) return false;
  uint8_t raw[32];
  return zmq_z85_decode(raw, z85.c_str()) != nullptr;
}

std::string OctalMode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Render(const CurveKey& key, bool with_secret) {
  std::ostringstream out;
  out << (with_secret ? "# coupler CURVE key pair: the secret below must stay private (0600)\n"
                      : "# coupler CURVE public key: safe to copy to the peers that admit it\n");
  out << "role = " << KeyRoleName(key.role) << "\n";
  out << "name = " << key.name << "\n";
  out << "public = " << key.public_z85 << "\n";
  if (with_secret) out << "secret = " << key.secret_z85 << "\n";
  return out.str();
}

Status WriteFileMode(const std::string& path, const std::string& text, mode_t mode) {
  // Created with its final mode, never world-readable for a moment.
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Internal("cannot write " + tmp + ": " + std::strerror(errno));
  ::fchmod(fd, mode);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const bool ok = n == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Internal("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status MakePrivateDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Internal("cannot make " + dir + " private: " + std::strerror(errno));
  }
  return Status::Ok();
}

// The .key files of `role` in `dir`.
std::vector<fs::path> KeyFilesOf(const std::string& dir, KeyRole role) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".key") continue;
    Result<CurveKey> key = ReadKeyFile(entry.path().string());
    if (key.ok() && key->role == role) out.push_back(entry.path());
  }
  return out;
}

}  // namespace

std::string_view KeyRoleName(KeyRole role) {
  switch (role) {
    case KeyRole::kCoordinator: return "coordinator";
    case KeyRole::kWorker: return "worker";
    case KeyRole::kClient: return "client";
  }
  return "client";
}

Result<KeyRole> ParseKeyRole(std::string_view text) {
  if (text == "coordinator") return KeyRole::kCoordinator;
  if (text == "worker") return KeyRole::kWorker;
  if (text == "client") return KeyRole::kClient;
  return InvalidArgument("unknown key role '" + std::string(text) +
                         "': expected coordinator, worker or client");
}

// Names become file names and appear in logs and status: keep them plain.
Status CheckKeyName(const std::string& name) {
  bool plain = !name.empty() && name.size() <= 64 && name[0] != '.' && name[0] != '-';
  for (char c : name) {
    plain = plain &&
            (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  }
  if (plain) return Status::Ok();
  return InvalidArgument("key name '" + name +
                         "' must be 1-64 letters, digits, '-', '_' or '.', not starting "
                         "with '.' or '-'");
}

Result<CurveKey> GenerateKey(KeyRole role, const std::string& name) {
  COUPLER_RETURN_IF_ERROR(CheckKeyName(name));
  if (!zmq_has("curve")) return Unavailable("this libzmq was built without CURVE support");
  char pub[41];
  char sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) {
    return Internal(std::string("zmq_curve_keypair: ") + zmq_strerror(zmq_errno()));
  }
  return CurveKey{role, name, pub, sec};
}

Status WriteKeyPair(const std::string& dir, const CurveKey& key) {
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(dir));
  const std::string secret_path = dir + "/" + key.name + ".key";
  std::error_code ec;
  if (fs::exists(secret_path, ec)) {
    return InvalidArgument(secret_path + " exists already: remove it first to replace the key "
                           "(its peers must then be given the new public key)");
  }
  COUPLER_RETURN_IF_ERROR(WriteFileMode(secret_path, Render(key, true), 0600));
  return WritePublicKey(dir + "/" + key.name + ".pub", key);
}

Status WritePublicKey(const std::string& path, const CurveKey& key) {
  return WriteFileMode(path, Render(key, false), 0644);
}

Result<CurveKey> ReadKeyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return NotFound("cannot read key file " + path + ": " + std::strerror(errno));
  }
  const bool secret_file = fs::path(path).extension() == ".key";
  if (secret_file && (st.st_mode & 0077) != 0) {
    return InvalidArgument("key file " + path + " is readable by other users (mode " +
                           OctalMode(st.st_mode) + "); chmod 600 it");
  }
  std::ifstream in(path);
  if (!in) return NotFound("cannot read key file " + path);
  CurveKey key;
  bool have_role = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return InvalidArgument(path + ": not a coupler key file");
    auto trim = [](std::string s) {
      const auto b = s.find_first_not_of(" \t\r");
      const auto e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    const std::string k = trim(line.substr(0, eq));
    const std::string v = trim(line.substr(eq + 1));
    if (k == "role") {
      COUPLER_ASSIGN_OR_RETURN(key.role, ParseKeyRole(v));
      have_role = true;
    } else if (k == "name") {
      key.name = v;
    } else if (k == "public") {
      key.public_z85 = v;
    } else if (k == "secret") {
      key.secret_z85 = v;
    }
  }
  if (!have_role || !ValidZ85Key(key.public_z85)) {
    return InvalidArgument(path + ": not a coupler key file (needs role and a 40-character "
                                  "Z85 public key)");
  }
  if (key.name.empty()) key.name = fs::path(path).stem().string();
  if (secret_file) {
    if (!ValidZ85Key(key.secret_z85)) return InvalidArgument(path + ": no valid secret key");
    char derived[41];
    if (zmq_curve_public(derived, key.secret_z85.c_str()) != 0 || key.public_z85 != derived) {
      return InvalidArgument(path + ": the public key does not match the secret key");
    }
  } else {
    key.secret_z85.clear();
  }
  return key;
}

Result<std::map<std::string, std::string>> ReadAllowList(const std::string& dir,
                                                         std::vector<std::string>* refused) {
  auto refuse = [&](std::string why) {
    if (refused != nullptr) refused->push_back(std::move(why));
  };
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::map<std::string, std::string>();
  std::map<std::string, std::vector<std::string>> names_of;  // public -> every name it has
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".pub") continue;
    const std::string file = entry.path().filename().string();
    // The file name is the name an operator sees and removes; it wins over the text inside.
    const std::string name = entry.path().stem().string();
    if (Status s = CheckKeyName(name); !s.ok()) {
      refuse(dir + "/" + file + ": " + std::string(s.message()));
      continue;
    }
    Result<CurveKey> key = ReadKeyFile(entry.path().string());
    if (!key.ok()) {
      refuse(std::string(key.status().message()));
      continue;
    }
    names_of[key->public_z85].push_back(name);
  }
  if (ec) return Internal("cannot list " + dir + ": " + ec.message());
  std::map<std::string, std::string> out;
  for (auto& [key, names] : names_of) {
    if (names.size() == 1) {
      out[key] = names.front();
      continue;
    }
    std::sort(names.begin(), names.end());
    std::string listed;
    for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n + ".pub";
    refuse(dir + ": one key under " + std::to_string(names.size()) + " names (" + listed +
           "): admitted under none until one is removed");
  }
  return out;
}

Result<PeerKeys> LoadPeerKeys(const std::string& dir, KeyRole role) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("key directory " + dir + " does not exist");
  const std::vector<fs::path> keys = KeyFilesOf(dir, role);
  if (keys.empty()) {
    return NotFound("no " + std::string(KeyRoleName(role)) + " key (NAME.key) in " + dir +
                    ": create one with `coupler keygen " + dir + " --role " +
                    std::string(KeyRoleName(role)) + "`");
  }
  if (keys.size() > 1) {
    return InvalidArgument(dir + " holds " + std::to_string(keys.size()) + " " +
                           std::string(KeyRoleName(role)) + " keys; keep one per directory");
  }
  PeerKeys out;
  COUPLER_ASSIGN_OR_RETURN(out.own, ReadKeyFile(keys.front().string()));
  Result<CurveKey> server = ReadKeyFile(dir + "/coordinator.pub");
  if (!server.ok()) {
    return NotFound("no coordinator.pub in " + dir +
                    ": copy the coordinator's public key there (" + server.status().message() + ")");
  }
  if (server->role != KeyRole::kCoordinator) {
    return InvalidArgument(dir + "/coordinator.pub is not a coordinator key");
  }
  out.server_public_z85 = server->public_z85;
  return out;
}

Result<ServerKeys> LoadServerKeys(const std::string& dir) {
  ServerKeys out;
  out.dir = dir;
  Result<CurveKey> own = ReadKeyFile(dir + "/coordinator.key");
  if (!own.ok()) {
    return NotFound("no coordinator key in " + dir + ": create one with `coupler keygen " + dir +
                    " --role coordinator` (" + own.status().message() + ")");
  }
  if (own->role != KeyRole::kCoordinator) {
    return InvalidArgument(dir + "/coordinator.key is not a coordinator key");
  }
  out.own = std::move(*own);
  return out;
}

std::string LocalPeerDir(const std::string& keys_dir, KeyRole role) {
  return keys_dir + (role == KeyRole::kWorker ? "/local-worker" : "/local-client");
}

Result<std::string> EnsureLocalKeySet(const std::string& state_dir) {
  const std::string dir = state_dir + "/keys";
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(dir));
  std::error_code ec;
  if (!fs::exists(dir + "/coordinator.key", ec)) {
    COUPLER_ASSIGN_OR_RETURN(CurveKey server, GenerateKey(KeyRole::kCoordinator, "coordinator"));
    COUPLER_RETURN_IF_ERROR(WriteKeyPair(dir, server));
  }
  COUPLER_ASSIGN_OR_RETURN(ServerKeys server, LoadServerKeys(dir));
  struct Local {
    KeyRole role;
    const char* name;
    std::vector<std::string> lists;
  };
  const Local locals[] = {
      {KeyRole::kWorker, "local-worker", {server.workers_dir()}},
      {KeyRole::kClient, "local", {server.clients_dir(), server.admins_dir()}},
  };
  for (const Local& l : locals) {
    const std::string peer_dir = LocalPeerDir(dir, l.role);
    const std::string key_path = peer_dir + "/" + l.name + ".key";
    if (!fs::exists(key_path, ec)) {
      COUPLER_ASSIGN_OR_RETURN(CurveKey key, GenerateKey(l.role, l.name));
      COUPLER_RETURN_IF_ERROR(WriteKeyPair(peer_dir, key));
      // Listed once, when made: an operator who revokes the local key keeps it revoked.
      for (const std::string& list : l.lists) {
        COUPLER_RETURN_IF_ERROR(MakePrivateDir(list));
        COUPLER_RETURN_IF_ERROR(WritePublicKey(list + "/" + l.name + ".pub", key));
      }
    }
    COUPLER_RETURN_IF_ERROR(WritePublicKey(peer_dir + "/coordinator.pub", server.own));
  }
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(server.workers_dir()));
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(server.clients_dir()));
  COUPLER_RETURN_IF_ERROR(MakePrivateDir(server.admins_dir()));
  return dir;
}

}  // namespace coupler::net
