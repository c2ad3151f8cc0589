// Shared pieces of the multi-host tests (and bench/hosts_train_bench.cc): what a HostsCluster's
// CLI says about workers' addresses and a gang's hosts, the rank files of coupler_rank_address,
// and counting log lines. Free functions over HostsCluster, which stays as it is.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/test_bed.h"

namespace coupler::itest {

// `coupler workers --json`: worker id -> the address it advertised (hosts are addresses).
inline std::map<std::string, std::string> WorkerAddresses(HostsCluster& cluster) {
  std::map<std::string, std::string> out;
  const CommandResult r = cluster.Cli({"workers", "--json"});
  rapidjson::Document d;
  if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError() || !d.IsArray()) return out;
  for (const auto& w : d.GetArray()) out[Str(w, "id")] = Str(w, "address");
  return out;
}

// How often `needle` occurs in `text`.
inline size_t Occurrences(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// The address in `ip -o -4 addr show eth0` output ("... inet 10.1.2.3/24 ..."), or "".
inline std::string InetAddress(const std::string& ip_output) {
  const auto at = ip_output.find("inet ");
  if (at == std::string::npos) return "";
  const auto from = at + 5;
  return ip_output.substr(from, ip_output.find('/', from) - from);
}

// Which host (by name) of `bed` has `address`; "" when none.
inline std::string HostNameOf(const TestBed& bed, const std::string& address) {
  for (const Host& h : bed.hosts()) {
    if (h.address() == address) return h.name();
  }
  return "";
}

// The rank files of coupler_rank_address, by rank: key -> value.
inline std::map<int, std::map<std::string, std::string>> RankFiles(const fs::path& dir) {
  std::map<int, std::map<std::string, std::string>> out;
  for (const auto& name : ListDir(dir)) {
    if (name.rfind("rank-", 0) != 0 || name.size() < 9 || name.substr(name.size() - 4) != ".txt") {
      continue;
    }
    const int rank = std::stoi(name.substr(5));
    std::stringstream in(ReadFile(dir / name));
    for (std::string line; std::getline(in, line);) {
      const auto eq = line.find('=');
      if (eq != std::string::npos) out[rank][line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return out;
}

// The machine's hostname, which every host of a bed shares.
inline std::string MachineHostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace coupler::itest
