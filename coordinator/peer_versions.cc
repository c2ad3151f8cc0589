#include "coordinator/peer_versions.h"

#include "runtime/logging.h"
#include "runtime/wire/codec.h"

namespace coupler::coordinator {

void PeerVersions::Note(const std::string& route, uint16_t version) {
  if (version == wire::kProtocolVersion || version == 0) {
    // The common case: nothing noted, nothing to look up (an upgraded peer on a reused route
    // is forgotten).
    if (!older_.empty()) older_.erase(route);
    return;
  }
  auto [it, added] = older_.emplace(route, version);
  it->second = version;
  if (!added) return;
  noted_.push_back(route);
  while (noted_.size() > kMaxTracked) {
    older_.erase(noted_.front());
    noted_.pop_front();
  }
}

uint16_t PeerVersions::VersionOf(const std::string& route) const {
  auto it = older_.find(route);
  return it == older_.end() ? wire::kProtocolVersion : it->second;
}

bool PeerVersions::Adapt(const std::string& route, std::string& payload) const {
  if (older_.empty()) return true;
  auto it = older_.find(route);
  if (it == older_.end()) return true;
  Result<std::string> older = wire::Reencode(payload, it->second);
  if (!older.ok()) {
    Logger("coordinator")->warn("cannot answer a peer of protocol {}: {}", it->second,
                                older.status().message());
    return false;
  }
  payload = std::move(*older);
  return true;
}

}  // namespace coupler::coordinator
