#include "cli/doctor/preflight.h"

#include <fmt/format.h>

namespace coupler::doctor {
namespace {

std::string PortOf(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  return colon == std::string::npos ? "" : endpoint.substr(colon + 1);
}

}  // namespace

std::vector<Finding> DiagnosePreflight(const PreflightFacts& f) {
  std::vector<Finding> out;
  const std::string port = PortOf(f.endpoint);
  if (!f.tcp_error.empty()) {
    out.push_back({"coordinator", Verdict::kProblem,
                   fmt::format("cannot reach {}: {}", f.endpoint, f.tcp_error),
                   fmt::format("start the coordinator there, or let this host reach TCP port {} "
                               "(workers) and the next one (clients) through the firewall",
                               port.empty() ? "its" : port)});
    return out;  // nothing further can be asked of it
  }
  out.push_back({"coordinator", Verdict::kOk,
                 fmt::format("{} accepts connections ({:.1f} ms)", f.endpoint, f.tcp_ms), ""});

  switch (f.key) {
    case KeyVerdict::kAnswered:
      out.push_back({"worker key", Verdict::kOk,
                     f.insecure ? fmt::format("the coordinator answers in plaintext (--insecure), "
                                              "protocol {}", f.reply_version)
                                : fmt::format("'{}' ({}) is accepted; the coordinator answers "
                                              "in protocol {}", f.key_name, f.keys_from,
                                              f.reply_version),
                     ""});
      break;
    case KeyVerdict::kRefused:
      out.push_back({"worker key", Verdict::kProblem,
                     fmt::format("the coordinator refused key '{}' ({}): {}", f.key_name,
                                 f.keys_from, f.key_detail),
                     fmt::format("on the coordinator's host, copy {}.pub into its "
                                 "authorized/workers/ (it counts within a second)", f.key_name)});
      break;
    case KeyVerdict::kWrongServer:
      out.push_back({"worker key", Verdict::kProblem,
                     fmt::format("the handshake failed before the key was checked ({}): the "
                                 "coordinator.pub in {} is not this coordinator's key", f.key_detail,
                                 f.keys_from),
                     "copy the coordinator's current keys/coordinator.pub into the worker's key "
                     "folder (its key set was remade)"});
      break;
    case KeyVerdict::kSilent:
      out.push_back({"worker key", Verdict::kProblem,
                     fmt::format("no answer from {} with key '{}'{}", f.endpoint, f.key_name,
                                 f.key_detail.empty() ? "" : ": " + f.key_detail),
                     "check that the endpoint is the coordinator's worker port (not its client "
                     "port, nor another program) and that it is not paused"});
      break;
    case KeyVerdict::kNoKeys:
      out.push_back({"worker key", Verdict::kProblem, f.key_detail,
                     "make a worker key (`coupler keygen --role worker --name NAME --out DIR`), "
                     "copy the coordinator's coordinator.pub into DIR, authorize DIR/NAME.pub on "
                     "the coordinator, and pass --keys DIR"});
      break;
  }

  if (!f.workdir.empty()) {
    if (!f.workdir_error.empty()) {
      out.push_back({"shared fs", Verdict::kProblem, f.workdir_error,
                     "mount the pool's shared filesystem here, at the same path as on the "
                     "coordinator's host, writable by the worker's user"});
    } else if (f.newest_marker_job.empty()) {
      out.push_back({"shared fs", Verdict::kNote,
                     fmt::format("{} is writable here, but no job's marker is in it yet: nothing "
                                 "shows that the coordinator sees the same directory", f.workdir),
                     "run this again once a job has run with that workdir (a worker refuses a "
                     "job's tasks when it cannot see the job's marker)"});
    } else {
      out.push_back({"shared fs", Verdict::kOk,
                     fmt::format("{} is writable here and shows the coordinator's marker of job "
                                 "{}", f.workdir, f.newest_marker_job),
                     ""});
    }
  }

  if (f.mpi_port_range == 0) {
    out.push_back({"mpi ports", Verdict::kNote,
                   "Open MPI picks its TCP ports at random here: gangs across hosts need every "
                   "TCP port open between them",
                   "to open fewer, fix a range on every host (OMPI_MCA_btl_tcp_port_min_v4=P, "
                   "OMPI_MCA_btl_tcp_port_range_v4=N, and OMPI_MCA_oob_tcp_dynamic_ipv4_ports) "
                   "and open just that range"});
  } else if (!f.mpi_ports_busy.empty()) {
    std::string busy;
    for (uint32_t p : f.mpi_ports_busy) busy += (busy.empty() ? "" : ", ") + std::to_string(p);
    out.push_back({"mpi ports", Verdict::kProblem,
                   fmt::format("Open MPI's ports {}-{}: {} already taken here", f.mpi_port_min,
                               f.mpi_port_min + f.mpi_port_range - 1, busy),
                   "stop what holds them, or move the range (OMPI_MCA_btl_tcp_port_min_v4)"});
  } else {
    out.push_back({"mpi ports", Verdict::kOk,
                   fmt::format("Open MPI uses TCP ports {}-{} (the first {} are free here): "
                               "they must be open between the pool's hosts",
                               f.mpi_port_min, f.mpi_port_min + f.mpi_port_range - 1,
                               f.mpi_ports_tried),
                   ""});
  }
  return out;
}

}  // namespace coupler::doctor
