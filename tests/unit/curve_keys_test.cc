#include "runtime/net/curve_keys.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/temp_dir.h"

namespace coupler::net {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

unsigned Mode(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 07777;
}

io::TempDir Dir() {
  auto d = io::TempDir::Create("coupler-keys-");
  EXPECT_TRUE(d.ok());
  return std::move(*d);
}

TEST(CurveKeysTest, KeygenWritesAPrivateSecretAndAPublicKeyThatReadBack) {
  io::TempDir d = Dir();
  const std::string dir = d.path() + "/w";
  Result<CurveKey> key = GenerateKey(KeyRole::kWorker, "gpu-node-7");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  ASSERT_TRUE(WriteKeyPair(dir, *key).ok());
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(dir + "/gpu-node-7.key"), 0600u);
  Result<CurveKey> secret = ReadKeyFile(dir + "/gpu-node-7.key");
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  EXPECT_EQ(secret->public_z85, key->public_z85);
  EXPECT_EQ(secret->secret_z85, key->secret_z85);
  EXPECT_EQ(secret->role, KeyRole::kWorker);
  Result<CurveKey> pub = ReadKeyFile(dir + "/gpu-node-7.pub");
  ASSERT_TRUE(pub.ok());
  EXPECT_TRUE(pub->secret_z85.empty());
  // Never overwritten: a replaced secret would lock its peers out.
  EXPECT_EQ(WriteKeyPair(dir, *key).code(), StatusCode::kInvalidArgument);
}

TEST(CurveKeysTest, ExposedOrTamperedKeysAreRefused) {
  io::TempDir d = Dir();
  Result<CurveKey> key = GenerateKey(KeyRole::kClient, "alice");
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(WriteKeyPair(d.path(), *key).ok());
  const std::string secret = d.path() + "/alice.key";
  ::chmod(secret.c_str(), 0644);
  Result<CurveKey> exposed = ReadKeyFile(secret);
  ASSERT_FALSE(exposed.ok());
  EXPECT_THAT(exposed.status().message(), HasSubstr("readable by other users"));
  ::chmod(secret.c_str(), 0600);
  // Another key's public half beside this secret.
  Result<CurveKey> other = GenerateKey(KeyRole::kClient, "bob");
  ASSERT_TRUE(other.ok());
  std::ofstream(secret) << "role = client\nname = alice\npublic = " << other->public_z85
                        << "\nsecret = " << key->secret_z85 << "\n";
  Result<CurveKey> mismatched = ReadKeyFile(secret);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.status().message(), HasSubstr("does not match"));
  EXPECT_FALSE(GenerateKey(KeyRole::kClient, "../etc/passwd").ok());
}

TEST(CurveKeysTest, TheLocalKeySetIsMadeOnceAndARevokedLocalKeyStaysRevoked) {
  io::TempDir d = Dir();
  Result<std::string> dir = EnsureLocalKeySet(d.path());
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  Result<ServerKeys> server = LoadServerKeys(*dir);
  ASSERT_TRUE(server.ok());
  Result<PeerKeys> worker = LoadPeerKeys(LocalPeerDir(*dir, KeyRole::kWorker), KeyRole::kWorker);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  EXPECT_EQ(worker->server_public_z85, server->own.public_z85);
  Result<PeerKeys> client = LoadPeerKeys(LocalPeerDir(*dir, KeyRole::kClient), KeyRole::kClient);
  ASSERT_TRUE(client.ok());
  // A worker key set holds no client key.
  EXPECT_EQ(LoadPeerKeys(LocalPeerDir(*dir, KeyRole::kWorker), KeyRole::kClient).status().code(),
            StatusCode::kNotFound);
  auto workers = ReadAllowList(server->workers_dir());
  ASSERT_TRUE(workers.ok());
  EXPECT_EQ(workers->count(worker->own.public_z85), 1u);
  EXPECT_EQ(ReadAllowList(server->admins_dir())->count(client->own.public_z85), 1u);

  // The operator revokes the local worker key; the next start neither re-lists it nor makes
  // new keys.
  fs::remove(server->workers_dir() + "/local-worker.pub");
  ASSERT_TRUE(EnsureLocalKeySet(d.path()).ok());
  EXPECT_TRUE(ReadAllowList(server->workers_dir())->empty());
  EXPECT_EQ(LoadServerKeys(*dir)->own.public_z85, server->own.public_z85);
}

}  // namespace
}  // namespace coupler::net
