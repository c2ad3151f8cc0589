// The protocol version each connection of one socket speaks, for those that speak an older one
// than this build (N-1, during a rolling upgrade): what reaches them is written again in their
// version (wire::Reencode), so an upgraded coordinator keeps working with workers and clients
// not yet upgraded. A connection speaking the current version costs nothing here. Bounded: past
// kMaxTracked older connections the oldest noted is forgotten (it would be answered in the
// current version, and refuse that, as before the upgrade). Event loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace coupler::coordinator {

class PeerVersions {
 public:
  static constexpr size_t kMaxTracked = 65536;

  // A message of version `version` arrived on connection `route`.
  void Note(const std::string& route, uint16_t version);
  // `payload` (a whole message) in the version `route` speaks; false when it cannot be written
  // in that version (then it is not sent).
  bool Adapt(const std::string& route, std::string& payload) const;
  // The version `route` speaks (the current one unless noted older).
  uint16_t VersionOf(const std::string& route) const;

 private:
  std::unordered_map<std::string, uint16_t> older_;
  std::deque<std::string> noted_;  // insertion order, for the bound
};

}  // namespace coupler::coordinator
