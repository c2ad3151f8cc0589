// Principal: who a client request acts as, typed. A peer's key is one kind, the coordinator's
// own HTTP API another, so no key file, whatever its name, can stand for the API (which holds
// an admin's rights): rights are decided on the kind and the public key, never on a name.
#pragma once

#include <cstdint>
#include <string>

#include "coordinator/http/loop_channel.h"

namespace coupler::coordinator {

struct Principal {
  enum class Kind : uint8_t {
    kKey = 1,       // a CURVE key on an allow-list (its name and public key below)
    kHttpApi = 2,   // the HTTP API's requests (the token holder: the state directory's owner)
    kInsecure = 3,  // --insecure: nobody is told apart
  };
  Kind kind = Kind::kInsecure;
  std::string name;        // kKey: the key's name (its file in the allow-list)
  std::string public_z85;  // kKey: the key its handshake proved

  static Principal Key(std::string name, std::string public_z85) {
    return {Kind::kKey, std::move(name), std::move(public_z85)};
  }
  static Principal HttpApi() { return {Kind::kHttpApi, {}, {}}; }
  static Principal Insecure() { return {Kind::kInsecure, {}, {}}; }

  // What jobs record as their submitter, and logs show: the key's name, "@http-api" (no key
  // may be named so: '@' is not allowed in key names), or "" under --insecure.
  std::string label() const {
    switch (kind) {
      case Kind::kKey: return name;
      case Kind::kHttpApi: return http::kApiUser;
      case Kind::kInsecure: return {};
    }
    return {};
  }
};

}  // namespace coupler::coordinator
