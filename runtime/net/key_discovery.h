// How a worker or client of the same user finds the keys of a coordinator on this machine
// without being told: the coordinator leaves a note per bound endpoint in the user's own
// private folder (~/.coupler/coordinators, 0700) naming its key set directory, or saying it
// runs --insecure. Another user can read neither the note nor the keys it points to.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "runtime/net/curve_keys.h"
#include "runtime/status.h"

namespace coupler::net {

// $COUPLER_HOME, else $HOME/.coupler, else /tmp/coupler-UID.
std::string CouplerHome();

// Records that the coordinator bound to `endpoint` serves with the key set in `keys_dir`
// (empty: it runs --insecure, plaintext).
Status PublishKeyLocation(const std::string& endpoint, const std::string& keys_dir);

// What a worker or client connecting to `endpoint` presents. In order: nothing when
// `insecure`; the key set in `explicit_dir` (--keys) or $COUPLER_KEYS; the local key set the
// coordinator published for that endpoint. nullopt: speak plaintext (the coordinator said it
// runs --insecure). An error names what to pass instead.
Result<std::optional<PeerKeys>> FindPeerKeys(const std::string& endpoint, KeyRole role,
                                             const std::string& explicit_dir, bool insecure);

// FindPeerKeys, for a peer started in the same breath as its coordinator (the README's
// `coupler coordinator ... &` then `coupler worker &`): while the coordinator's note for
// `endpoint` is not written yet — it makes its key set first, which takes a moment on a fresh
// state — or names keys that are not there (an earlier coordinator's note, about to be
// replaced) waits, up to `timeout` (nullopt: until they appear), calling `waiting` once with
// what is missing if it has waited 2 s. Keys given (--keys, $COUPLER_KEYS) or --insecure never
// wait, nor does any other failure (a key that does not parse, a folder it may not read).
Result<std::optional<PeerKeys>> AwaitPeerKeys(const std::string& endpoint, KeyRole role,
                                              const std::string& explicit_dir, bool insecure,
                                              std::optional<std::chrono::milliseconds> timeout,
                                              const std::function<void(const Status&)>& waiting = {});

}  // namespace coupler::net
