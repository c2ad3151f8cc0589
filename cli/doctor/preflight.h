// `coupler doctor --coordinator EP`'s judgement: before a new host joins the pool, can its
// worker reach the coordinator, is its key accepted, does it see the pool's shared filesystem,
// are the MPI ports its gangs use free here. Facts in (gathered by cli/doctor/preflight_probe.h,
// against the real coordinator), findings out, one line each with its fix; pure, so each
// failure an operator meets on a new host is unit-tested without the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/doctor/diagnose.h"

namespace coupler::doctor {

// How the coordinator answered a worker's message over its keys.
enum class KeyVerdict {
  kAnswered,     // the handshake passed and a reply came: the key is on authorized/workers/
  kRefused,      // the coordinator refused the key (not on its allow-list)
  kWrongServer,  // the handshake failed before any key was checked: a stale coordinator.pub
  kSilent,       // connected, no reply in time (cut short, a proxy, another program)
  kNoKeys,       // this host holds no worker key for the coordinator
};

struct PreflightFacts {
  std::string endpoint;     // as given
  std::string tcp_error;    // why the TCP connect failed; empty: it succeeded
  double tcp_ms = 0;
  bool insecure = false;    // --insecure: plaintext, no key to check
  std::string key_name;     // the worker key presented
  std::string keys_from;    // where it was found
  KeyVerdict key = KeyVerdict::kSilent;
  std::string key_detail;   // the handshake's or the key lookup's own words
  uint16_t reply_version = 0;
  // --workdir: the shared directory the pool's jobs use.
  std::string workdir;
  std::string workdir_error;       // cannot be read or written here; empty: it can
  std::string newest_marker_job;   // a coordinator's job marker seen in it; empty: none
  // Open MPI's TCP ports (OMPI_MCA_btl_tcp_port_min_v4 / _range_v4): empty range: dynamic.
  uint32_t mpi_port_min = 0;
  uint32_t mpi_port_range = 0;
  std::vector<uint32_t> mpi_ports_busy;  // of the range's first ports, those taken here
  uint32_t mpi_ports_tried = 0;
};

std::vector<Finding> DiagnosePreflight(const PreflightFacts& facts);

}  // namespace coupler::doctor
