// `/metrics`: a snapshot in the Prometheus text exposition format (version 0.0.4), written
// directly rather than through prometheus-cpp: every value already sits in the snapshot the
// loop published, so a registry would only be a second copy of the state to keep in step,
// and a second thread model beside ours. Names and units follow Prometheus' conventions
// (`_total` counters, `_seconds`, `_bytes`, `_ratio`); no task ids as labels and job ids only on
// running gangs' progress (coupler_node_step, coupler_node_metric), so the series count stays
// bounded by the pool's size, not by its history.
#pragma once

#include <string>
#include <string_view>

#include "coordinator/http/connection_gate.h"
#include "coordinator/http/readiness.h"
#include "coordinator/http/snapshot.h"

namespace coupler::coordinator::http {

std::string RenderMetrics(const Snapshot& snapshot, std::string_view version);

// The HTTP side's own connection counts (ConnectionGate), served after RenderMetrics' text:
// they change with every connection, not with the loop's snapshots.
std::string RenderConnectionMetrics(const ConnectionCounts& counts);

// The `process_*` series (process_metrics.h), read now.
std::string RenderProcessMetrics();

// `coupler_ready`: 1 while /readyz answers 200.
std::string RenderReadinessMetric(const Readiness& readiness);

// A label value escaped as the format wants it (backslash, double quote, newline).
std::string EscapeLabelValue(std::string_view value);

}  // namespace coupler::coordinator::http
