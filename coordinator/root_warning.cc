#include "coordinator/root_warning.h"

#include <unistd.h>

#include <map>

#include <fmt/format.h>

#include "runtime/logging.h"

namespace coupler::coordinator {

Result<size_t> CountNonAdminClients(const net::ServerKeys& keys) {
  COUPLER_ASSIGN_OR_RETURN(auto clients, net::ReadAllowList(keys.clients_dir()));
  COUPLER_ASSIGN_OR_RETURN(auto admins, net::ReadAllowList(keys.admins_dir()));
  size_t count = 0;
  for (const auto& [public_z85, name] : clients) count += admins.count(public_z85) == 0 ? 1 : 0;
  return count;
}

std::optional<std::string> RootServesClientsWarning(uid_t euid, size_t non_admin_clients) {
  if (euid != 0 || non_admin_clients == 0) return std::nullopt;
  return fmt::format(
      "running as root with {} client key(s) that are not admins (in authorized/clients/, not "
      "in authorized/admins/): their jobs' files are read, linked and served with root's "
      "rights; run the coordinator as an ordinary user (docs/security.md, \"Run "
      "unprivileged\")",
      non_admin_clients);
}

void WarnIfRootServesNonAdminClients(const net::ServerKeys& keys) {
  if (::geteuid() != 0) return;
  Result<size_t> count = CountNonAdminClients(keys);
  if (!count.ok()) return;
  if (std::optional<std::string> line = RootServesClientsWarning(::geteuid(), *count)) {
    Logger("coordinator")->warn("{}", *line);
  }
}

}  // namespace coupler::coordinator
