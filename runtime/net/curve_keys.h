// CURVE key pairs and the key sets built from them: who a coordinator is, which workers and
// clients it admits, and which key a worker or client presents. Keys live in plain files
// (Z85 text), so an operator adds, lists and revokes them with cp, ls and rm.
//
// A key set directory, for each role:
//   coordinator:  coordinator.key (its secret, 0600), coordinator.pub, and
//                 authorized/{workers,clients,admins}/NAME.pub — the allow-lists
//   worker/client: NAME.key (its secret, 0600), NAME.pub, and coordinator.pub (the server)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace coupler::net {

enum class KeyRole { kCoordinator, kWorker, kClient };
std::string_view KeyRoleName(KeyRole role);
Result<KeyRole> ParseKeyRole(std::string_view text);

// One key, as read from a .key (with its secret) or a .pub file (public part only).
struct CurveKey {
  KeyRole role = KeyRole::kClient;
  std::string name;
  std::string public_z85;  // 40 characters
  std::string secret_z85;  // 40 characters; empty for a .pub file
};

// A fresh key pair from libzmq (libsodium underneath).
Result<CurveKey> GenerateKey(KeyRole role, const std::string& name);

// Writes DIR/NAME.key (0600, public and secret) and DIR/NAME.pub (0644), creating DIR (0700).
// Refuses to overwrite an existing key: a replaced secret locks its peers out.
Status WriteKeyPair(const std::string& dir, const CurveKey& key);
// Writes a .pub file only (the public part of `key`), overwriting an older copy.
Status WritePublicKey(const std::string& path, const CurveKey& key);
// Reads a .key or .pub file. A .key file readable by others is refused: its secret is exposed.
Result<CurveKey> ReadKeyFile(const std::string& path);

// Whether `name` may name a key (and so a file, and a peer in logs and status): 1-64 of
// [A-Za-z0-9._-], not starting with '.' or '-'. InvalidArgument says what is wrong.
Status CheckKeyName(const std::string& name);

// The names and keys in an allow-list directory (NAME.pub files): public Z85 -> name. A
// missing directory is an empty list; one that cannot be listed is an error. A file that lists
// nobody is left out, its reason appended to `refused` (when given): a name CheckKeyName
// refuses, a file that is unreadable or no key file, and a public key under two names (then
// under neither: a peer's identity must not depend on the order the folder is read in).
Result<std::map<std::string, std::string>> ReadAllowList(
    const std::string& dir, std::vector<std::string>* refused = nullptr);

// What a worker or client presents: its own pair and the coordinator's public key.
struct PeerKeys {
  CurveKey own;
  std::string server_public_z85;
};
// Loads the one NAME.key of `role` in `dir` and its coordinator.pub, or says what is missing.
Result<PeerKeys> LoadPeerKeys(const std::string& dir, KeyRole role);

// What a coordinator serves with: its pair and where its allow-lists live.
struct ServerKeys {
  CurveKey own;
  std::string dir;
  std::string workers_dir() const { return dir + "/authorized/workers"; }
  std::string clients_dir() const { return dir + "/authorized/clients"; }
  std::string admins_dir() const { return dir + "/authorized/admins"; }
};
Result<ServerKeys> LoadServerKeys(const std::string& dir);

// The key set a coordinator makes for itself in its state directory at first start, so a
// worker or client of the same user on the same machine can use it with no setup:
//   STATE/keys/                 the coordinator's key set (see above)
//   STATE/keys/local-worker/    a worker key set (local-worker.key + coordinator.pub)
//   STATE/keys/local-client/    a client key set (local.key + coordinator.pub), also an admin
// Creates what is missing, keeps what exists. Returns the coordinator's key set directory.
Result<std::string> EnsureLocalKeySet(const std::string& state_dir);
// Where a worker or client finds its key set inside a local key set directory.
std::string LocalPeerDir(const std::string& keys_dir, KeyRole role);

}  // namespace coupler::net
