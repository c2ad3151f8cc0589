// `coupler keygen DIR --role R [--name N]`: a CURVE key pair for a coordinator, a worker or a
// client, written as DIR/NAME.key (secret, 0600) and DIR/NAME.pub (to hand to the peer).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "runtime/net/curve_keys.h"

namespace coupler::cli {
namespace {

struct KeygenArgs {
  std::string dir;
  std::string role;
  std::string name;
};

int Keygen(const KeygenArgs& a) {
  Result<net::KeyRole> role = net::ParseKeyRole(a.role);
  if (!role.ok()) {
    std::fprintf(stderr, "coupler: %s\n", role.status().message().c_str());
    return kExitBadInput;
  }
  const std::string name = a.name.empty() ? std::string(net::KeyRoleName(*role)) : a.name;
  Result<net::CurveKey> key = net::GenerateKey(*role, name);
  Status written = key.ok() ? net::WriteKeyPair(a.dir, *key) : key.status();
  if (!written.ok()) {
    std::fprintf(stderr, "coupler: %s\n", written.message().c_str());
    return written.code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure;
  }
  std::printf("%s/%s.key  (secret: keep it here)\n%s/%s.pub  public key %s\n", a.dir.c_str(),
              name.c_str(), a.dir.c_str(), name.c_str(), key->public_z85.c_str());
  if (*role == net::KeyRole::kCoordinator) {
    std::printf("next: put the workers' and clients' .pub files in %s/authorized/workers/ and "
                "%s/authorized/clients/ (admins also in authorized/admins/), and copy %s/%s.pub "
                "as coordinator.pub into each worker's and client's key directory\n",
                a.dir.c_str(), a.dir.c_str(), a.dir.c_str(), name.c_str());
  } else {
    std::printf("next: copy the coordinator's public key to %s/coordinator.pub, and %s.pub to "
                "the coordinator's authorized/%ss/\n",
                a.dir.c_str(), name.c_str(), std::string(net::KeyRoleName(*role)).c_str());
  }
  return kExitOk;
}

}  // namespace

void AddKeygenCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<KeygenArgs>();
  CLI::App* c = app.add_subcommand("keygen", "Create a CURVE key pair (docs/security.md)");
  c->add_option("dir", args->dir, "directory to write NAME.key and NAME.pub into")->required();
  c->add_option("--role", args->role, "coordinator, worker or client")->required();
  c->add_option("--name", args->name, "the key's name, as allow-lists and status show it "
                                      "(default: the role)");
  c->callback([args, run] { *run = [args] { return Keygen(*args); }; });
}

}  // namespace coupler::cli
