#include "worker/slurm_env.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <cctype>
#include <memory>

namespace coupler::worker {
namespace {

std::optional<uint32_t> ParseCount(const char* text) {
  if (text == nullptr) return std::nullopt;
  const std::string_view s(text);
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  // SLURM_CPUS_ON_NODE is a plain count; anything else is not trusted.
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string Text(const char* value) { return value == nullptr ? std::string() : value; }

// The lines a command prints, or the reason it could not run.
Result<std::vector<std::string>> CommandLines(const std::string& command) {
  struct Closer {
    void operator()(FILE* f) const { ::pclose(f); }
  };
  std::unique_ptr<FILE, Closer> pipe(::popen(command.c_str(), "r"));
  if (!pipe) return Internal("cannot run `" + command + "`");
  std::vector<std::string> lines;
  std::array<char, 512> buffer{};
  std::string line;
  while (std::fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) {
    line += buffer.data();
    if (line.ends_with('\n')) {
      line.pop_back();
      if (!line.empty()) lines.push_back(std::move(line));
      line.clear();
    }
  }
  if (!line.empty()) lines.push_back(std::move(line));
  const int rc = ::pclose(pipe.release());
  if (rc != 0) return Unavailable("`" + command + "` failed (status " + std::to_string(rc) + ")");
  return lines;
}

std::vector<std::string> AddressesOf(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::vector<std::string> addresses;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return addresses;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    std::array<char, NI_MAXHOST> host{};
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, host.data(), host.size(), nullptr, 0,
                      NI_NUMERICHOST) == 0 &&
        std::find(addresses.begin(), addresses.end(), host.data()) == addresses.end()) {
      addresses.emplace_back(host.data());
    }
  }
  ::freeaddrinfo(found);
  return addresses;
}

bool ShellSafe(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == ',' || c == '[' || c == ']';
  });
}

}  // namespace

std::optional<SlurmAllocation> DetectSlurm(const EnvLookup& getenv) {
  SlurmAllocation slurm;
  slurm.job_id = Text(getenv("SLURM_JOB_ID"));
  slurm.node = Text(getenv("SLURMD_NODENAME"));
  if (slurm.job_id.empty() || slurm.node.empty()) return std::nullopt;
  slurm.partition = Text(getenv("SLURM_JOB_PARTITION"));
  slurm.nodelist = Text(getenv("SLURM_JOB_NODELIST"));
  slurm.cpus_on_node = ParseCount(getenv("SLURM_CPUS_ON_NODE")).value_or(0);
  slurm.gpus_on_node = ParseCount(getenv("SLURM_GPUS_ON_NODE"));
  return slurm;
}

std::string DetectInterconnect() {
  std::error_code ec;
  std::filesystem::directory_iterator devices("/sys/class/infiniband", ec);
  return !ec && devices != std::filesystem::directory_iterator() ? "infiniband" : "";
}

SlurmDefaults ApplySlurmDefaults(const SlurmAllocation& slurm, SlurmDefaults given,
                                 const std::string& interconnect) {
  if (given.slots == 0) given.slots = slurm.cpus_on_node;
  if (given.gpus.empty()) {
    const uint32_t n = slurm.gpus_on_node.value_or(0);
    if (n == 0) {
      given.gpus = "none";
    } else {
      for (uint32_t i = 0; i < n; ++i) given.gpus += (i == 0 ? "" : ",") + std::to_string(i);
    }
  }
  // emplace keeps what the operator set.
  if (!slurm.partition.empty()) given.labels.emplace("slurm_partition", slurm.partition);
  given.labels.emplace("slurm_node", slurm.node);
  given.labels.emplace("slurm_job", slurm.job_id);
  // What a gang may run here (GangSlots): its ranks stay within the CPUs the job was given.
  if (slurm.cpus_on_node > 0) given.labels.emplace("slurm_cpus", std::to_string(slurm.cpus_on_node));
  if (!interconnect.empty()) given.labels.emplace("interconnect", interconnect);
  return given;
}

Result<GangLauncher> ParseGangLauncher(const std::string& text) {
  if (text == "auto") return GangLauncher::kAuto;
  if (text == "mpirun") return GangLauncher::kMpirun;
  if (text == "srun") return GangLauncher::kSrun;
  return InvalidArgument("--gang-launcher must be auto, mpirun or srun, not '" + text + "'");
}

Result<SlurmSteps> ResolveSlurmSteps(const SlurmAllocation& slurm, const std::string& advertised) {
  SlurmSteps steps;
  steps.job_id = slurm.job_id;
  steps.node = slurm.node;
  steps.node_of_address.emplace_back(advertised, slurm.node);
  std::vector<std::string> names;
  if (slurm.nodelist.empty() || !ShellSafe(slurm.nodelist)) {
    names.push_back(slurm.node);
  } else {
    COUPLER_ASSIGN_OR_RETURN(names, CommandLines("scontrol show hostnames '" + slurm.nodelist +
                                                 "' 2>/dev/null"));
  }
  for (const std::string& name : names) {
    for (const std::string& address : AddressesOf(name)) {
      const bool known = std::any_of(steps.node_of_address.begin(), steps.node_of_address.end(),
                                     [&](const auto& e) { return e.first == address; });
      if (!known) steps.node_of_address.emplace_back(address, name);
    }
  }
  return steps;
}

}  // namespace coupler::worker
