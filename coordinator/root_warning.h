// The start-up warning for a coordinator that runs as root while it admits client keys that
// are not admins: it reads, links and serves files on those clients' behalf with root's rights
// (a confused deputy), so an operator is told once, at start, and pointed at the fix.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "runtime/net/curve_keys.h"
#include "runtime/status.h"

namespace coupler::coordinator {

// The keys in authorized/clients/ whose public key is not also in authorized/admins/.
Result<size_t> CountNonAdminClients(const net::ServerKeys& keys);

// The warning line for a coordinator of effective uid `euid` that admits `non_admin_clients`
// such keys; nullopt when there is nothing to warn about (not root, or admins only).
std::optional<std::string> RootServesClientsWarning(uid_t euid, size_t non_admin_clients);

// Logs that warning when this process runs as root. An allow-list it cannot read is left to
// the ZAP handler, which refuses its keys and says why.
void WarnIfRootServesNonAdminClients(const net::ServerKeys& keys);

}  // namespace coupler::coordinator
