"""A Python client for a coupler coordinator: submit, status, wait, cancel, workers, logs.

It speaks the wire protocol of docs/protocol.md itself (the envelope, cereal's binary payload
layout, CURVE with the coordinator's public key) over pyzmq, so it needs no C++ build: only
Debian's python3-zmq and the standard library. The message layouts below are the doc's field
tables; tests/python checks them against the doc and against the bytes the C++ encoder writes.

    from coupler_client import Client
    with Client("tcp://127.0.0.1:7100", keys="/path/to/state/keys/local-client") as c:
        job = c.submit("job.yaml")
        final = c.wait(job)
        print(final["state"], c.logs(job, node="echo"))
"""

from __future__ import annotations

import os
import stat
import struct
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import zmq

__all__ = [
    "Client",
    "CouplerError",
    "CouplerTimeout",
    "PeerKeys",
    "find_peer_keys",
    "load_peer_keys",
    "client_endpoint_for",
    "encode",
    "decode",
    "job_status_json",
    "status_reply_json",
    "workers_json",
    "MESSAGE_TYPES",
    "RECORDS",
    "PROTOCOL_VERSION",
]

# ---------------------------------------------------------------------------------------------
# Errors

# coupler::StatusCode values, as an Error reply carries them (docs/protocol.md, Error).
STATUS_CODES: Dict[int, str] = {
    1: "InvalidArgument",
    2: "NotFound",
    3: "Unavailable",
    4: "ResourceExhausted",
    5: "DeadlineExceeded",
    6: "Aborted",
    7: "Internal",
    8: "PermissionDenied",
    9: "Cancelled",
}
_CODE_OF = {name: code for code, name in STATUS_CODES.items()}


class CouplerError(Exception):
    """A failed request: the coordinator's Error reply, or why it could not be reached.

    `code` is a coupler status code (1 InvalidArgument ... 9 Cancelled; an unknown one reads as
    7 Internal), `code_name` its name, and str(error) the message, e.g. "no job j-000042".
    """

    def __init__(self, code: int, message: str):
        if code not in STATUS_CODES:
            code = _CODE_OF["Internal"]
        super().__init__(message)
        self.code = code
        self.code_name = STATUS_CODES[code]
        self.message = message

    @classmethod
    def of(cls, name: str, message: str) -> "CouplerError":
        return cls(_CODE_OF[name], message)


class CouplerTimeout(CouplerError, TimeoutError):
    """No answer in time (DeadlineExceeded or Unavailable); the message names the endpoint."""


# ---------------------------------------------------------------------------------------------
# The wire format (docs/protocol.md)

MAGIC = b"CPLR"
PROTOCOL_VERSION = 17
HEADER_SIZE = 20
DEFAULT_MAX_PAYLOAD_BYTES = 64 << 20
MAX_SPEC_BYTES = 16 << 20

# name -> type number; numbers are permanent.
MESSAGE_TYPES: Dict[str, int] = {
    "RegisterWorker": 1,
    "Heartbeat": 2,
    "TaskAssignment": 3,
    "TaskResult": 4,
    "LaunchRequest": 5,
    "LaunchDaemon": 6,
    "LaunchOutput": 7,
    "LaunchStop": 8,
    "Registered": 9,
    "ResultAck": 10,
    "RegisterAgain": 11,
    "Reclaim": 12,
    "Reclaimed": 13,
    "SubmitJob": 16,
    "SubmitReply": 17,
    "StatusRequest": 18,
    "StatusReply": 19,
    "CancelJob": 20,
    "DrainWorker": 21,
    "WorkersRequest": 22,
    "WorkersReply": 23,
    "RetryJob": 24,
    "BanWorker": 25,
    "FenceGpu": 26,
    "Ack": 32,
    "Error": 33,
}
_MESSAGE_NAMES = {number: name for name, number in MESSAGE_TYPES.items()}

Fields = List[Tuple[str, str]]

# Every message's and record's fields in wire order, typed in the doc's notation: str, bool,
# u8..u64, i32, i64, f64, [T], {str: T}, or a record, enum or variant name.
RECORDS: Dict[str, Fields] = {
    "RegisterWorker": [
        ("worker_id", "str"), ("host", "str"), ("address", "str"), ("pid", "u32"),
        ("slots", "u32"), ("prefetch", "u32"), ("cpus", "u32"), ("memory_bytes", "u64"),
        ("gpus", "[GpuInfo]"), ("labels", "{str: str}"), ("protocol_version", "u16"),
        ("holding", "[HeldAttempt]"),
    ],
    "Heartbeat": [
        ("sender_id", "str"), ("sequence", "u64"), ("running_tasks", "u32"),
        ("timestamp_ms", "u64"), ("gpus", "[GpuUsage]"), ("draining", "bool"),
        ("running", "[TaskAttempt]"), ("gpu_sampling", "str"), ("fenced_gpus", "[u32]"),
    ],
    "TaskAssignment": [("tasks", "[TaskSpec]")],
    "TaskResult": [("worker_id", "str"), ("outcomes", "[TaskOutcome]"), ("prefetch", "u32")],
    "LaunchRequest": [
        ("gang", "TaskAttempt"), ("gang_token", "str"), ("host", "str"), ("command", "str"),
    ],
    "LaunchDaemon": [("launch_id", "u64"), ("gang", "TaskAttempt"), ("command", "str")],
    "LaunchOutput": [
        ("launch_id", "u64"), ("stream", "u8"), ("data", "str"), ("exited", "bool"),
        ("exit_code", "i32"),
    ],
    "LaunchStop": [("gang", "TaskAttempt")],
    "Registered": [("worker_id", "str"), ("release", "[TaskAttempt]")],
    "ResultAck": [("attempts", "[TaskAttempt]")],
    "RegisterAgain": [("reason", "str")],
    "Reclaim": [("attempts", "[TaskAttempt]")],
    "Reclaimed": [("released", "[TaskAttempt]")],
    "SubmitJob": [
        ("spec_text", "str"), ("spec_path", "str"), ("priority", "i32"), ("client_id", "str"),
        ("cwd", "str"), ("submission_id", "str"), ("reuse", "bool"),
    ],
    "SubmitReply": [("job_id", "str"), ("ok", "bool"), ("error", "str"), ("existing", "bool")],
    "StatusRequest": [("job_id", "str"), ("wait_ms", "u32"), ("states", "[JobPhase]"),
                      ("limit", "u32")],
    "StatusReply": [("jobs", "[JobStatus]"), ("coordinator", "CoordinatorStats")],
    "CancelJob": [("job_id", "str")],
    "DrainWorker": [("worker_id", "str")],
    "WorkersRequest": [("worker_id", "str")],
    "WorkersReply": [("workers", "[WorkerStatus]")],
    "RetryJob": [("job_id", "str")],
    "BanWorker": [("worker_id", "str"), ("reason", "str"), ("ban", "bool")],
    "FenceGpu": [("worker_id", "str"), ("gpus", "[u32]"), ("reason", "str"), ("fence", "bool")],
    "Ack": [("request_type", "u16"), ("message", "str")],
    "Error": [("request_type", "u16"), ("code", "u16"), ("message", "str")],
    # Records
    "GpuInfo": [
        ("index", "u32"), ("name", "str"), ("total_memory", "u64"), ("free_memory", "u64"),
        ("uuid", "str"),
    ],
    "TaskAttempt": [("job_id", "str"), ("task_id", "u64"), ("attempt", "u32")],
    "HeldAttempt": [("attempt", "TaskAttempt"), ("started", "bool")],
    "GpuUsage": [
        ("index", "u32"), ("utilization_percent", "u32"), ("used_memory", "u64"),
        ("total_memory", "u64"), ("readings", "u32"), ("temperature_c", "u32"),
        ("power_mw", "u32"), ("power_limit_mw", "u32"), ("throttle_reasons", "u64"),
        ("ecc_uncorrected", "u64"), ("xid_errors", "u64"), ("last_xid", "u32"),
    ],
    "GpuFence": [("index", "u32"), ("reason", "str"), ("since_ms", "u64")],
    "TaskSpec": [
        ("job_id", "str"), ("task_id", "u64"), ("node_id", "str"), ("op", "str"),
        ("attempt", "u32"), ("kind", "TaskKind"), ("shard_index", "i32"), ("shards", "u32"),
        ("ranks", "u32"), ("input_paths", "[str]"), ("output_path", "str"),
        ("params", "{str: ParamValue}"), ("timeout_ms", "u64"), ("gpu_memory_bytes", "u64"),
        ("gpus", "u32"), ("gang_hosts", "[str]"), ("gang_ranks", "[u32]"),
        ("gang_token", "str"), ("workdir", "str"), ("workdir_token", "str"),
        ("fused", "[FusedStep]"), ("in_memory_outputs", "[str]"),
    ],
    "FusedStep": [
        ("task_id", "u64"), ("node_id", "str"), ("op", "str"),
        ("params", "{str: ParamValue}"), ("input_paths", "[str]"), ("output_path", "str"),
        ("timeout_ms", "u64"),
    ],
    "ParamEntry": [("key", "str"), ("value", "str")],
    "TaskOutcome": [
        ("job_id", "str"), ("task_id", "u64"), ("attempt", "u32"), ("ok", "bool"),
        ("error", "str"), ("output_paths", "[str]"), ("rows_in", "u64"), ("rows_out", "u64"),
        ("device", "str"), ("gpu_requested_but_cpu", "bool"), ("kernel_ms", "f64"),
        ("bytes_processed", "u64"), ("host_refused", "bool"), ("wall_ms", "f64"),
        ("error_code", "u16"), ("fused_node", "str"), ("lost_inputs", "[u32]"),
    ],
    "NodeStatus": [
        ("id", "str"), ("state", "NodePhase"), ("tasks_total", "u64"), ("tasks_done", "u64"),
        ("attempts", "u64"), ("error", "str"), ("ranks", "u32"), ("reason", "str"),
        ("hosts", "[str]"), ("tasks_running", "u64"), ("tasks_prefetched", "u64"),
        ("op", "str"), ("stage", "u32"), ("deps", "[str]"), ("reused", "bool"),
        ("reused_from", "str"),
    ],
    "JobStatus": [
        ("id", "str"), ("name", "str"), ("state", "JobPhase"), ("tasks_total", "u64"),
        ("tasks_queued", "u64"), ("tasks_running", "u64"), ("tasks_done", "u64"),
        ("tasks_failed", "u64"), ("attempts", "u64"), ("nodes", "[NodeStatus]"),
        ("error", "str"), ("submitted_ms", "i64"), ("finished_ms", "i64"),
        ("devices", "{str: u64}"), ("gpu_fallbacks", "u64"), ("submitted_by", "str"),
        ("refused_hosts", "[HostRefusal]"), ("tasks_prefetched", "u64"), ("workdir", "str"),
        ("submission_id", "str"),
    ],
    "HostRefusal": [("worker_id", "str"), ("address", "str"), ("reason", "str")],
    "CoordinatorStats": [
        ("messages_received", "u64"), ("messages_dropped", "u64"), ("workers_alive", "u32"),
        ("uptime_ms", "u64"), ("queued_cpu_tasks", "u64"), ("queued_gpu_tasks", "u64"),
        ("queued_gang_ranks", "u64"), ("recommended_workers", "u32"),
        ("longest_partial_hold_ms", "u64"), ("handshakes_refused", "u64"),
        ("registrations_refused", "u64"), ("stale_outcomes_dropped", "u64"),
        ("encrypted", "bool"), ("store_error", "str"), ("replies_dropped", "u64"),
        ("running_tasks", "u64"), ("prefetched_tasks", "u64"), ("warnings", "[str]"),
    ],
    "WorkerStatus": [
        ("id", "str"), ("host", "str"), ("address", "str"), ("slots", "u32"),
        ("running", "u32"), ("state", "WorkerState"), ("gpus", "[GpuInfo]"),
        ("labels", "{str: str}"),
        ("cpus", "u32"), ("memory_bytes", "u64"), ("prefetched", "u32"), ("tasks_done", "u64"),
        ("gpu_usage", "[GpuUsage]"), ("gpu_sampling", "str"), ("warning", "str"),
        ("heard_ms_ago", "u64"), ("ban_reason", "str"), ("protocol_version", "u16"),
        ("gpu_fences", "[GpuFence]"),
    ],
}

# One-byte enums: value -> name. A value outside the table makes the message malformed.
# The numbers are pinned (docs/protocol.md); a client shows and takes the names.
ENUMS: Dict[str, Dict[int, str]] = {
    "TaskKind": {0: "map", 1: "reduce", 2: "gang"},
    "JobPhase": {0: "queued", 1: "running", 2: "succeeded", 3: "failed", 4: "cancelled"},
    "NodePhase": {0: "pending", 1: "ready", 2: "running", 3: "done", 4: "failed",
                  5: "cancelled"},
    "WorkerState": {0: "alive", 1: "draining", 2: "silent", 3: "drained", 4: "lost",
                    5: "banned"},
}

# Variants: an i32 index, then the alternative's value. ParamValue decodes to the plain Python
# value (bool, int, float, str, list of str, list of {"key", "value"} entries); encoding picks
# the alternative by Python type.
VARIANTS: Dict[str, List[str]] = {
    "ParamValue": ["bool", "i64", "f64", "str", "[str]", "[ParamEntry]"]}

_SCALARS = {
    "bool": "<?", "u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q",
    "i32": "<i", "i64": "<q", "f64": "<d",
}


def _text(b: bytes) -> str:
    # Paths and commands are bytes on the C++ side; surrogateescape keeps any byte round-trip.
    return b.decode("utf-8", "surrogateescape")


def _bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _param_alternative(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return 1
    if isinstance(value, float):
        return 2
    if isinstance(value, str):
        return 3
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return 4
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, dict) and set(v) == {"key", "value"} for v in value):
        return 5
    raise TypeError("a ParamValue is a bool, int, float, str, list of str or list of "
                    "{key, value} entries, not %r" % (value,))


def _write(out: bytearray, type_: str, value: Any) -> None:
    if type_ == "str":
        data = _bytes(value)
        out += struct.pack("<Q", len(data))
        out += data
    elif type_ in _SCALARS:
        out += struct.pack(_SCALARS[type_], value)
    elif type_.startswith("[") and type_.endswith("]"):
        out += struct.pack("<Q", len(value))
        for item in value:
            _write(out, type_[1:-1], item)
    elif type_.startswith("{str: ") and type_.endswith("}"):
        # std::map writes its entries in key order: byte order of the keys.
        out += struct.pack("<Q", len(value))
        for key in sorted(value, key=_bytes):
            _write(out, "str", key)
            _write(out, type_[6:-1], value[key])
    elif type_ in RECORDS:
        for name, field_type in RECORDS[type_]:
            _write(out, field_type, value[name])
    elif type_ in ENUMS:
        number = value if isinstance(value, int) else {
            n: v for v, n in ENUMS[type_].items()}[value]
        out += struct.pack("<B", number)
    elif type_ in VARIANTS:
        index = _param_alternative(value)
        out += struct.pack("<i", index)
        _write(out, VARIANTS[type_][index], value)
    else:
        raise TypeError("unknown wire type " + type_)


class _Reader:
    """Reads a payload, refusing what cereal's writer could not have made (docs/protocol.md,
    Limits): a length prefix past the bytes left, a bool byte other than 0 or 1."""

    def __init__(self, payload: bytes):
        self.data = memoryview(payload)
        self.offset = 0

    def take(self, n: int) -> memoryview:
        if n > len(self.data) - self.offset:
            raise ValueError("payload truncated: needs %d bytes at offset %d, only %d left"
                             % (n, self.offset, len(self.data) - self.offset))
        chunk = self.data[self.offset:self.offset + n]
        self.offset += n
        return chunk

    def size(self) -> int:
        at = self.offset
        (n,) = struct.unpack("<Q", self.take(8))
        if n > len(self.data) - self.offset:  # every element takes at least one byte
            raise ValueError("size prefix %d at offset %d exceeds the %d bytes left"
                             % (n, at, len(self.data) - self.offset))
        return n

    def read(self, type_: str) -> Any:
        if type_ == "str":
            return _text(bytes(self.take(self.size())))
        if type_ == "bool":
            byte = self.take(1)[0]
            if byte > 1:
                raise ValueError("bool at offset %d is %d, not 0 or 1" % (self.offset - 1, byte))
            return byte == 1
        if type_ in _SCALARS:
            fmt = _SCALARS[type_]
            (v,) = struct.unpack(fmt, self.take(struct.calcsize(fmt)))
            return v
        if type_.startswith("[") and type_.endswith("]"):
            return [self.read(type_[1:-1]) for _ in range(self.size())]
        if type_.startswith("{str: ") and type_.endswith("}"):
            out = {}
            for _ in range(self.size()):
                key = self.read("str")
                out[key] = self.read(type_[6:-1])
            return out
        if type_ in RECORDS:
            return {name: self.read(field_type) for name, field_type in RECORDS[type_]}
        if type_ in ENUMS:
            value = self.take(1)[0]
            if value not in ENUMS[type_]:
                raise ValueError("%s value %d is not one of %s"
                                 % (type_, value, sorted(ENUMS[type_])))
            return ENUMS[type_][value]
        if type_ in VARIANTS:
            (index,) = struct.unpack("<i", self.take(4))
            if not 0 <= index < len(VARIANTS[type_]):
                raise ValueError("%s index %d out of range" % (type_, index))
            return self.read(VARIANTS[type_][index])
        raise TypeError("unknown wire type " + type_)


def encode(message_type: str, fields: Dict[str, Any]) -> bytes:
    """The envelope for one message: the 20-byte header, then `fields` in wire order.

    Every field of the message must be present (the protocol has no optional fields). The
    header's epoch is 0, as from every client (only coordinators and workers stamp one).
    """
    payload = bytearray()
    _write(payload, message_type, fields)
    if len(payload) > 0xFFFFFFFF:
        raise ValueError("%s payload of %d bytes cannot be framed" % (message_type, len(payload)))
    header = MAGIC + struct.pack("<HHIQ", PROTOCOL_VERSION, MESSAGE_TYPES[message_type],
                                 len(payload), 0)
    return header + bytes(payload)


def decode(data: bytes, max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
           ) -> Tuple[str, Dict[str, Any]]:
    """(message type name, fields) of one envelope, or CouplerError InvalidArgument naming the
    fault, with the checks of docs/protocol.md's Limits and rejection."""
    def bad(why: str) -> CouplerError:
        return CouplerError.of("InvalidArgument", why)

    if len(data) < HEADER_SIZE:
        raise bad("truncated message: %d bytes, shorter than the %d-byte header"
                  % (len(data), HEADER_SIZE))
    if data[:4] != MAGIC:
        raise bad('bad magic: not a coupler message (expected "CPLR")')
    version, number, size, _epoch = struct.unpack("<HHIQ", data[4:HEADER_SIZE])
    if version != PROTOCOL_VERSION:
        raise bad("unsupported protocol version %d (this client reads %d)"
                  % (version, PROTOCOL_VERSION))
    if number not in _MESSAGE_NAMES:
        raise bad("unknown message type %d" % number)
    name = _MESSAGE_NAMES[number]
    if size > max_payload_bytes:
        raise bad("%s payload of %d bytes exceeds the limit of %d bytes"
                  % (name, size, max_payload_bytes))
    if size != len(data) - HEADER_SIZE:
        raise bad("%s length field says %d payload bytes but %d follow the header"
                  % (name, size, len(data) - HEADER_SIZE))
    reader = _Reader(bytes(data[HEADER_SIZE:]))
    try:
        fields = reader.read(name)
    except (ValueError, struct.error) as e:
        raise bad("malformed %s payload: %s" % (name, e)) from None
    left = len(reader.data) - reader.offset
    if left:
        raise bad("%s payload has %d trailing bytes after the message" % (name, left))
    return name, fields


# ---------------------------------------------------------------------------------------------
# The JSON shapes `coupler status --json` and `coupler workers --json` print
# (runtime/wire/status_json.cc), so a script can switch between the CLI and this module.

def job_status_json(j: Dict[str, Any]) -> Dict[str, Any]:
    """A wire JobStatus as `coupler status JOB --json` prints it."""
    return {
        "id": j["id"],
        "name": j["name"],
        "state": j["state"],
        "tasks": {
            "total": j["tasks_total"], "queued": j["tasks_queued"],
            "prefetched": j["tasks_prefetched"], "running": j["tasks_running"],
            "done": j["tasks_done"], "failed": j["tasks_failed"],
        },
        "attempts": j["attempts"],
        "error": j["error"],
        "submitted_ms": j["submitted_ms"],
        "finished_ms": j["finished_ms"],
        "submitted_by": j["submitted_by"],
        "submission_id": j["submission_id"],
        "workdir": j["workdir"],
        "devices": dict(j["devices"]),
        "gpu_fallbacks": j["gpu_fallbacks"],
        "refused_hosts": [{"worker": r["worker_id"], "address": r["address"],
                           "reason": r["reason"]} for r in j["refused_hosts"]],
        "nodes": [{
            "id": n["id"], "state": n["state"], "tasks": n["tasks_total"],
            "done": n["tasks_done"], "running": n["tasks_running"],
            "prefetched": n["tasks_prefetched"], "attempts": n["attempts"],
            "error": n["error"], "ranks": n["ranks"], "reason": n["reason"],
            "hosts": list(n["hosts"]), "reused": n["reused"],
            **({"reused_from": n["reused_from"]} if n["reused"] else {}),
        } for n in j["nodes"]],
    }


def status_reply_json(reply: Dict[str, Any]) -> Dict[str, Any]:
    """A wire StatusReply as `coupler status --json` prints it."""
    c = reply["coordinator"]
    return {
        "jobs": [job_status_json(j) for j in reply["jobs"]],
        "coordinator": {
            "messages_received": c["messages_received"],
            "messages_dropped": c["messages_dropped"],
            "workers_alive": c["workers_alive"],
            "uptime_ms": c["uptime_ms"],
            "queued": {"cpu_tasks": c["queued_cpu_tasks"], "gpu_tasks": c["queued_gpu_tasks"],
                       "gang_ranks": c["queued_gang_ranks"]},
            "running_tasks": c["running_tasks"],
            "prefetched_tasks": c["prefetched_tasks"],
            "recommended_workers": c["recommended_workers"],
            "longest_partial_hold_ms": c["longest_partial_hold_ms"],
            "encrypted": c["encrypted"],
            "handshakes_refused": c["handshakes_refused"],
            "registrations_refused": c["registrations_refused"],
            "stale_outcomes_dropped": c["stale_outcomes_dropped"],
            "replies_dropped": c["replies_dropped"],
            "store_error": c["store_error"],
            "warnings": list(c["warnings"]),
        },
    }


# GpuUsage.readings bits (pinned, docs/protocol.md) and the fields each one makes valid.
_GPU_READINGS = [(1, ("temperature_c",)), (2, ("power_mw",)), (4, ("power_limit_mw",)),
                 (8, ("throttle_reasons",)), (16, ("ecc_uncorrected",)),
                 (32, ("xid_errors", "last_xid"))]


def _gpu_usage_json(g: Dict[str, Any]) -> Dict[str, Any]:
    """A GpuUsage as `coupler workers --json` prints it: only the readings NVML gave."""
    out = {k: g[k] for k in ("index", "utilization_percent", "used_memory", "total_memory")}
    for bit, names in _GPU_READINGS:
        if g["readings"] & bit:
            for name in names:
                out[name] = g[name]
    return out


def workers_json(workers: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Wire WorkerStatus records as `coupler workers --json` prints them."""
    return [{
        "id": w["id"], "host": w["host"], "address": w["address"], "slots": w["slots"],
        "running": w["running"], "prefetched": w["prefetched"], "tasks_done": w["tasks_done"],
        "heard_ms_ago": w["heard_ms_ago"], "state": w["state"], "cpus": w["cpus"],
        "memory_bytes": w["memory_bytes"], "labels": dict(w["labels"]),
        "gpus": [dict(g) for g in w["gpus"]],
        "gpu_usage": [_gpu_usage_json(g) for g in w["gpu_usage"]],
        "gpu_fences": [dict(f) for f in w["gpu_fences"]],
        "gpu_sampling": w["gpu_sampling"], "warning": w["warning"],
        "ban_reason": w["ban_reason"], "protocol_version": w["protocol_version"],
    } for w in workers]


# ---------------------------------------------------------------------------------------------
# Keys (runtime/net/curve_keys.h, runtime/net/key_discovery.h, docs/security.md)

class PeerKeys:
    """What a client presents: its own CURVE pair and the coordinator's public key (Z85)."""

    def __init__(self, name: str, public: str, secret: str, server_public: str):
        self.name = name
        self.public = public
        self.secret = secret
        self.server_public = server_public

    def __repr__(self) -> str:  # never the secret
        return "PeerKeys(name=%r, public=%r)" % (self.name, self.public)


def _read_key_file(path: str) -> Dict[str, str]:
    """The `key = value` lines of a NAME.key / NAME.pub file; a .key readable by others is
    refused, as the C++ reader does: its secret is exposed."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise CouplerError.of("NotFound", "cannot read key file %s: %s" % (path, e.strerror))
    secret_file = path.endswith(".key")
    if secret_file and mode & 0o077:
        raise CouplerError.of("InvalidArgument",
                              "key file %s is readable by other users (mode %04o); chmod 600 it"
                              % (path, stat.S_IMODE(mode)))
    out: Dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise CouplerError.of("InvalidArgument", path + ": not a coupler key file")
            key, value = line.split("=", 1)
            out[key.strip(" \t\r")] = value.strip(" \t\r")
    if "role" not in out or len(out.get("public", "")) != 40:
        raise CouplerError.of("InvalidArgument", path + ": not a coupler key file (needs role "
                              "and a 40-character Z85 public key)")
    if secret_file:
        secret = out.get("secret", "")
        try:
            derived = zmq.curve_public(secret.encode()).decode() if len(secret) == 40 else ""
        except zmq.ZMQError:
            derived = ""
        if not derived:
            raise CouplerError.of("InvalidArgument", path + ": no valid secret key")
        if derived != out["public"]:
            raise CouplerError.of("InvalidArgument",
                                  path + ": the public key does not match the secret key")
    out.setdefault("name", os.path.splitext(os.path.basename(path))[0])
    return out


def load_peer_keys(keys_dir: str, role: str = "client") -> PeerKeys:
    """The one NAME.key of `role` in a key set directory and its coordinator.pub."""
    if not os.path.isdir(keys_dir):
        raise CouplerError.of("NotFound", "key directory %s does not exist" % keys_dir)
    found = []
    for entry in sorted(os.listdir(keys_dir)):
        if not entry.endswith(".key"):
            continue
        try:
            key = _read_key_file(os.path.join(keys_dir, entry))
        except CouplerError:
            continue  # as KeyFilesOf: only readable keys of this role count
        if key.get("role") == role:
            found.append(key)
    if not found:
        raise CouplerError.of("NotFound", "no %s key (NAME.key) in %s: create one with "
                              "`coupler keygen %s --role %s`" % (role, keys_dir, keys_dir, role))
    if len(found) > 1:
        raise CouplerError.of("InvalidArgument", "%s holds %d %s keys; keep one per directory"
                              % (keys_dir, len(found), role))
    try:
        server = _read_key_file(os.path.join(keys_dir, "coordinator.pub"))
    except CouplerError as e:
        raise CouplerError.of("NotFound", "no coordinator.pub in %s: copy the coordinator's "
                              "public key there (%s)" % (keys_dir, e))
    if server["role"] != "coordinator":
        raise CouplerError.of("InvalidArgument",
                              "%s/coordinator.pub is not a coordinator key" % keys_dir)
    own = found[0]
    return PeerKeys(own["name"], own["public"], own["secret"], server["public"])


def coupler_home() -> str:
    """$COUPLER_HOME, else $HOME/.coupler, else /tmp/coupler-UID (runtime/net/key_discovery)."""
    if os.environ.get("COUPLER_HOME"):
        return os.environ["COUPLER_HOME"]
    if os.environ.get("HOME"):
        return os.environ["HOME"] + "/.coupler"
    return "/tmp/coupler-%d" % os.getuid()


def _note_name(endpoint: str) -> Optional[str]:
    # The coordinator's note per bound endpoint: tcp by port, ipc by an FNV-1a hash of the path.
    transport, sep, rest = endpoint.partition("://")
    if not sep:
        return None
    if transport == "tcp":
        port = rest.rpartition(":")[2]
        return None if port in ("", "*") or ";" in rest else "tcp-" + port
    if transport == "ipc" and rest:
        h = 1469598103934665603
        for c in _bytes(rest):
            h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return "ipc-%016x" % h
    return None


def _process_start_ticks(pid: int) -> Optional[int]:
    # /proc/PID/stat field 22: with the pid it names one process, not a later one reusing it.
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 1:].split()
    try:
        return int(fields[19])  # fields[0] is field 3
    except (IndexError, ValueError):
        return None


def _writer_gone(writer_line: str) -> Optional[int]:
    """The pid of the coordinator that wrote a note, when it has stopped; None when it runs, or
    when the note cannot tell (an older build's note, or one written in another PID namespace:
    a pid means nothing outside its own), as runtime/net/key_discovery judges it."""
    words = writer_line.split()
    if len(words) != 4 or words[0] != "pid":
        return None
    try:
        pid, started = int(words[1]), int(words[2])
        namespace = os.readlink("/proc/self/ns/pid")
    except (ValueError, OSError):
        return None
    if words[3] != namespace:
        return None
    return pid if _process_start_ticks(pid) != started else None


def find_peer_keys(endpoint: str, keys: Optional[str] = None,
                   insecure: bool = False) -> Optional[PeerKeys]:
    """What a client dialling `endpoint` presents, found as `coupler` finds it: nothing when
    `insecure`; the key set in `keys`, else $COUPLER_KEYS; else the local key set the coordinator
    of this user on this machine noted for that endpoint (None: it runs --insecure)."""
    if insecure:
        return None
    keys_dir = keys or os.environ.get("COUPLER_KEYS", "")
    if keys_dir:
        return load_peer_keys(keys_dir, "client")
    name = _note_name(endpoint)
    note = ""
    writer = ""
    if name:
        try:
            with open(os.path.join(coupler_home(), "coordinators", name), encoding="utf-8") as f:
                note = f.readline().rstrip("\n")
                writer = f.readline().rstrip("\n")
        except OSError:
            note = ""
    stopped = _writer_gone(writer) if note else None
    if stopped is not None:
        raise CouplerError.of(
            "NotFound",
            "the note of the coordinator at %s was left by one that has stopped (pid %d): is "
            "`coupler coordinator` running there, as this user?" % (endpoint, stopped))
    if not note:
        raise CouplerError.of(
            "NotFound",
            "no keys for the coordinator at %s (is `coupler coordinator` running there, as this "
            "user?): pass keys=DIR (or set COUPLER_KEYS) with a client key set "
            "(docs/security.md), or insecure=True if it runs --insecure" % endpoint)
    if note == "insecure":
        return None
    try:
        return load_peer_keys(os.path.join(note, "local-client"), "client")
    except CouplerError as e:
        raise CouplerError(e.code, "the local keys of the coordinator at %s: %s" % (endpoint, e))


def client_endpoint_for(endpoint: str) -> str:
    """The client socket of a coordinator whose workers connect to `endpoint`: the port + 1
    (tcp), or `<path>.clients` (ipc)."""
    if endpoint.startswith("ipc://"):
        return endpoint + ".clients"
    head, sep, port = endpoint.rpartition(":")
    if not sep or port in ("", "*") or not port.isdigit():
        return endpoint
    return "%s:%d" % (head, int(port) + 1)


# ---------------------------------------------------------------------------------------------
# Task logs on the shared filesystem (runtime/job/task_logs.h): what `coupler logs` reads.

_MAX_PRINT_BYTES = 64 << 20
_TEMP_INFIX = ".tmp."


def _parse_log_name(name: str) -> Optional[Tuple[int, int, str]]:
    # "task-000012.attempt-0.stdout" -> (12, 0, "stdout")
    if not name.startswith("task-"):
        return None
    rest = name[5:]
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if digits == 0 or not rest[digits:].startswith(".attempt-"):
        return None
    task = int(rest[:digits])
    rest = rest[digits + 9:]
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if digits == 0 or not rest[digits:].startswith("."):
        return None
    return task, int(rest[:digits]), rest[digits + 1:]


def _stream_key(stream: str) -> Tuple[str, int, int, str]:
    # stdout, stderr, then each rank's files by rank number (text order puts rank.10 first).
    def std_order(s: str) -> int:
        return 0 if s == "stdout" else 1 if s == "stderr" else 2
    head, slash, leaf = stream.rpartition("/")
    if not slash:
        return ("", 0, std_order(stream), stream)
    prefix, rank = head, 0
    dot = head.rfind("rank.")
    if dot >= 0:
        prefix = head[:dot]
        number = head[dot + 5:]
        digits = len(number) - len(number.lstrip("0123456789"))
        rank = int(number[:digits]) if digits else 0
    return ("~" + prefix, rank, std_order(leaf), leaf)


def list_task_logs(workdir: str, nodes: Sequence[str], node: Optional[str] = None,
                   task: Optional[int] = None, attempt: Optional[int] = None
                   ) -> List[Dict[str, Any]]:
    """The log files of a job's workdir as `coupler logs` lists them: [{node, task_id, attempt,
    stream, path}], each task's latest attempt unless `attempt`, sorted by node (in the job's
    order), task, attempt, stream. A `node` the job lacks is CouplerError NotFound."""
    if node and node not in nodes:
        raise CouplerError.of("NotFound", "the job has no node '%s'; its nodes: %s"
                              % (node, ", ".join(nodes) or "(none)"))
    files: List[Dict[str, Any]] = []
    for n in nodes:
        if node and n != node:
            continue
        log_dir = os.path.join(workdir, n, "logs")
        try:
            entries = sorted(os.scandir(log_dir), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if _TEMP_INFIX in e.name:
                continue
            parsed = _parse_log_name(e.name)
            if parsed is None or (task is not None and parsed[0] != task):
                continue
            base = {"node": n, "task_id": parsed[0], "attempt": parsed[1]}
            if parsed[2] == "ranks" and e.is_dir():
                files += _rank_files(e.path, base)
            elif parsed[2] in ("stdout", "stderr") and e.is_file():
                files.append(dict(base, stream=parsed[2], path=e.path))
    latest: Dict[Tuple[str, int], int] = {}
    for f in files:
        k = (f["node"], f["task_id"])
        latest[k] = max(latest.get(k, 0), f["attempt"])
    files = [f for f in files if f["attempt"] == (
        attempt if attempt is not None else latest[(f["node"], f["task_id"])])]
    order = {n: i for i, n in enumerate(nodes)}
    files.sort(key=lambda f: (order[f["node"]], f["task_id"], f["attempt"],
                              _stream_key(f["stream"])))
    return files


def _rank_files(ranks_dir: str, base: Dict[str, Any]) -> List[Dict[str, Any]]:
    # mpirun --output-filename: {job}/rank.N/{stdout,stderr}; Open MPI numbers the job 1.
    out = []
    for job in sorted(os.scandir(ranks_dir), key=lambda e: e.name):
        if not job.is_dir():
            continue
        for rank in sorted(os.scandir(job.path), key=lambda e: e.name):
            if not rank.is_dir() or not rank.name.startswith("rank."):
                continue
            for f in sorted(os.scandir(rank.path), key=lambda e: e.name):
                if not f.is_file() or _TEMP_INFIX in f.name:
                    continue
                prefix = "" if job.name == "1" else job.name + "/"
                out.append(dict(base, stream=prefix + rank.name + "/" + f.name, path=f.path))
    return out


def _read_log(path: str, max_bytes: int = _MAX_PRINT_BYTES) -> str:
    # The file's end, at most max_bytes of it, cut at a line start when one is in reach.
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        start = max(0, size - max_bytes)
        f.seek(start)
        data = f.read()
    if start > 0:
        nl = data.find(b"\n")
        if 0 <= nl and nl + 1 < len(data):
            data = data[nl + 1:]
    return _text(data)


# ---------------------------------------------------------------------------------------------
# The client

FINISHED_STATES = ("succeeded", "failed", "cancelled")
_KNOWN_STATES = ("queued", "running") + FINISHED_STATES
_CONNECT_TIMEOUT_S = 3.0  # a live coordinator completes a handshake in milliseconds
_LONG_POLL_MAX_MS = 60_000


class Client:
    """Requests to one coordinator's client socket, one at a time, each with a deadline.

    coordinator: the coordinator's worker endpoint (`--listen`); clients are served on its
        port + 1, or on `clients` when given (`--clients`).
    keys: a client key set directory (NAME.key + coordinator.pub); default $COUPLER_KEYS, then
        the local keys of a coordinator of this user on this machine.
    insecure: plaintext, to a coordinator started --insecure.
    timeout_s: how long a request waits for its reply.
    """

    def __init__(self, coordinator: str = "tcp://127.0.0.1:7100", clients: Optional[str] = None,
                 keys: Optional[str] = None, insecure: bool = False, timeout_s: float = 10):
        self.endpoint = clients or client_endpoint_for(coordinator)
        self.timeout_s = float(timeout_s)
        self._keys = find_peer_keys(self.endpoint, keys, insecure)
        self._ctx = zmq.Context()
        self._socket: Optional[zmq.Socket] = None
        self._monitor: Optional[zmq.Socket] = None
        self._handshake_ok = False
        self._opened = 0.0
        self._open()

    # -- connection ------------------------------------------------------------------------

    def _open(self) -> None:
        """A fresh DEALER socket: after a timeout or a refusal, so nothing sent on the old one
        can answer (or reach the coordinator for) a later request."""
        self._close_socket()
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 5000)
        if self._keys is not None:
            s.setsockopt(zmq.CURVE_SERVERKEY, self._keys.server_public.encode())
            s.setsockopt(zmq.CURVE_PUBLICKEY, self._keys.public.encode())
            s.setsockopt(zmq.CURVE_SECRETKEY, self._keys.secret.encode())
        # Watched from before it connects, so a refused key is seen, not waited out.
        self._monitor = s.get_monitor_socket(
            zmq.EVENT_CONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        s.connect(self.endpoint)
        self._socket = s
        self._handshake_ok = False
        self._connected = False  # a TCP/IPC connection, whether or not a handshake followed
        self._cut_short = 0  # handshakes that ended without a reason (see _handshake_refusal)
        self._opened = time.monotonic()

    def _close_socket(self) -> None:
        if self._socket is not None:
            try:
                self._socket.disable_monitor()
            except zmq.ZMQError:
                pass
            self._socket.close(0)
            self._socket = None
        if self._monitor is not None:
            self._monitor.close(0)
            self._monitor = None

    def close(self) -> None:
        """Closes the socket and its ZeroMQ context."""
        self._close_socket()
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None  # type: ignore[assignment]

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _handshake_refusal(self) -> Optional[CouplerError]:
        assert self._monitor is not None
        while True:
            try:
                frames = self._monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return None
            if not frames or len(frames[0]) < 6:
                continue
            event, value = struct.unpack("<HI", frames[0][:6])
            if event == zmq.EVENT_CONNECTED:
                self._connected = True
            elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._handshake_ok = True
            elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                return CouplerError.of(
                    "PermissionDenied",
                    "the coordinator at %s refused this key (ZAP status %d): ask its operator "
                    "to add your NAME.pub to its allow-list (docs/security.md)"
                    % (self.endpoint, value))
            elif event == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
                return CouplerError.of(
                    "Unavailable",
                    "the security handshake with the coordinator at %s failed: it is not the "
                    "coordinator whose coordinator.pub this key set holds, or it does not run "
                    "with the same --insecure setting" % self.endpoint)
            elif event == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
                # A connection cut mid-handshake; libzmq retries, and so do we. Counted: a
                # listener that ends every handshake is not a coordinator that is down.
                self._cut_short += 1

    def call(self, message_type: str, fields: Dict[str, Any],
             extra_s: float = 0.0) -> Tuple[str, Dict[str, Any]]:
        """Sends one request and returns the reply (type name, fields). An Error reply raises
        CouplerError with the coordinator's code and message. `extra_s`: how long the
        coordinator may hold the reply on purpose (a long poll)."""
        assert self._socket is not None, "the client is closed"
        self._socket.send(encode(message_type, fields))
        deadline = time.monotonic() + self.timeout_s + extra_s
        connect_by = self._opened + min(self.timeout_s, _CONNECT_TIMEOUT_S)
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        reply: Optional[bytes] = None
        while reply is None:
            refused = self._handshake_refusal()
            if refused is not None:
                self._open()
                raise refused
            now = time.monotonic()
            if not self._handshake_ok and now >= connect_by:
                waited = int(min(self.timeout_s, _CONNECT_TIMEOUT_S))
                # A coordinator that cannot read the handshake (it was made for another
                # server key) drops it without a word: say so rather than "is it running?".
                if self._cut_short > 0:
                    why = ("the security handshake was cut short %d time(s) in %d s: it does not "
                           "run with the same --insecure setting, or it is not the coordinator "
                           "whose coordinator.pub this key set holds" % (self._cut_short, waited))
                elif self._connected:
                    # Something took the connection and never finished a handshake: a
                    # coordinator made for another key, or one with keys on while this client
                    # speaks plaintext, or one too busy to answer yet. Not "is it running?".
                    why = ("connected, but no security handshake completed within %d s: %s"
                           % (waited, "is the coordinator.pub of this key set that "
                              "coordinator's key?" if self._keys is not None else
                              "does it run with keys on (this client runs insecure)?"))
                else:
                    why = "no coordinator answered within %d s; is it running?" % waited
                self._open()  # the request must not reach a coordinator that comes up later
                raise CouplerTimeout.of("Unavailable", "%s: %s" % (self.endpoint, why))
            left = deadline - now
            if left <= 0:
                break
            wait = min(left, connect_by - now if not self._handshake_ok else left, 0.05)
            events = dict(poller.poll(max(1, int(wait * 1000))))
            if self._socket in events:
                reply = self._socket.recv_multipart()[-1]
        if reply is None:
            self._open()  # a late reply must not answer the next request
            raise CouplerTimeout.of(
                "DeadlineExceeded", "no answer from the coordinator at %s within %g s (is "
                "`coupler coordinator` running there?)" % (self.endpoint, self.timeout_s))
        name, reply_fields = decode(reply)
        if name == "Error":
            raise CouplerError(reply_fields["code"], reply_fields["message"])
        return name, reply_fields

    def _expect(self, want: str, got: Tuple[str, Dict[str, Any]], what: str) -> Dict[str, Any]:
        if got[0] != want:
            raise CouplerError.of("Internal", "unexpected reply to %s: %s" % (what, got[0]))
        return got[1]

    # -- requests ---------------------------------------------------------------------------

    def submit(self, spec_path: str, priority: int = 0,
               submission_id: Optional[str] = None, reuse: bool = False) -> str:
        """Submits the job spec at `spec_path` (YAML or JSON) and returns its job id.

        As `coupler submit` does, the text travels with the file's absolute path (its relative
        inputs resolve against its folder) and this process's directory. A spec with errors
        raises CouplerError InvalidArgument with the coordinator's diagnostics. A second submit
        with the same `submission_id` returns the first one's job. `reuse`: as `--reuse`,
        nodes unchanged since a succeeded run keep its outputs.
        """
        try:
            size = os.path.getsize(spec_path)
            with open(spec_path, "rb") as f:
                text = f.read()
        except OSError:
            raise CouplerError.of("NotFound", "cannot read the spec file " + spec_path) from None
        if size > MAX_SPEC_BYTES:
            raise CouplerError.of("InvalidArgument", "spec is %.1f MiB, over the %d MiB limit"
                                  % (size / (1 << 20), MAX_SPEC_BYTES >> 20))
        reply = self._expect("SubmitReply", self.call("SubmitJob", {
            "spec_text": _text(text),
            "spec_path": os.path.abspath(spec_path),
            "priority": int(priority),
            "client_id": "python-%d" % os.getpid(),
            "cwd": os.getcwd(),
            "submission_id": submission_id or "",
            "reuse": bool(reuse),
        }), "submit")
        if not reply["ok"]:
            raise CouplerError.of("InvalidArgument", reply["error"])
        return reply["job_id"]

    def status_reply(self, job_id: str = "", wait_ms: int = 0, state: str = "",
                     limit: int = 0) -> Dict[str, Any]:
        """The raw StatusReply (wire field names, every field, nodes' op/stage/deps too)."""
        wait_ms = max(0, min(int(wait_ms), _LONG_POLL_MAX_MS))
        if state and state not in _KNOWN_STATES:
            raise CouplerError.of("InvalidArgument", "no job state '%s' (%s)"
                                  % (state, ", ".join(_KNOWN_STATES)))
        return self._expect("StatusReply", self.call("StatusRequest", {
            "job_id": job_id, "wait_ms": wait_ms, "states": [state] if state else [],
            "limit": int(limit),
        }, extra_s=wait_ms / 1000.0), "status")

    def status(self, job_id: Optional[str] = None, state: Optional[str] = None,
               limit: Optional[int] = None) -> Dict[str, Any]:
        """With a job id: that job, as `coupler status JOB --json` prints it; an unknown id
        raises CouplerError NotFound ("no job ..."). Without: {"jobs": [...], "coordinator":
        {...}} as `coupler status --json` prints it, newest first, only jobs in `state`, at most
        `limit` (None or 0: all)."""
        if job_id:
            reply = self.status_reply(job_id)
            if not reply["jobs"]:
                raise CouplerError.of("NotFound", "no job " + job_id)
            return job_status_json(reply["jobs"][0])
        return status_reply_json(self.status_reply(state=state or "", limit=limit or 0))

    def wait(self, job_id: str, timeout_s: Optional[float] = None,
             poll_s: float = 2.0) -> Dict[str, Any]:
        """Waits for the job to finish and returns its final status (as status(job_id)).

        Long polls as `coupler submit --wait` does: each request is answered when the job
        finishes or after `poll_s`, so waiting neither spins nor lags. `timeout_s` None: no
        limit; past it, CouplerTimeout. A state this client does not know ends the wait too.
        """
        give_up = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            wait_s = poll_s
            if give_up is not None:
                wait_s = min(wait_s, give_up - time.monotonic())
                if wait_s <= 0:
                    raise CouplerTimeout.of("DeadlineExceeded", "job %s did not finish within "
                                            "%g s (coordinator %s)"
                                            % (job_id, timeout_s, self.endpoint))
            reply = self.status_reply(job_id, wait_ms=int(wait_s * 1000))
            if not reply["jobs"]:
                raise CouplerError.of("NotFound", "no job " + job_id)
            job = reply["jobs"][0]
            if job["state"] in FINISHED_STATES or job["state"] not in _KNOWN_STATES:
                return job_status_json(job)

    def cancel(self, job_id: str) -> str:
        """Cancels the job (only its submitter's key or an admin key may); returns the
        coordinator's acknowledgement text."""
        return self._expect("Ack", self.call("CancelJob", {"job_id": job_id}),
                            "cancel")["message"]

    def retry(self, job_id: str) -> str:
        """Runs a failed or cancelled job's failed nodes and what depends on them again, in
        place (as `coupler retry`); a running or succeeded job raises CouplerError
        InvalidArgument. Returns the coordinator's acknowledgement text."""
        return self._expect("Ack", self.call("RetryJob", {"job_id": job_id}),
                            "retry")["message"]

    def drain(self, worker_id: str) -> str:
        """Asks a worker to finish what it holds and leave (admin keys only)."""
        return self._expect("Ack", self.call("DrainWorker", {"worker_id": worker_id}),
                            "drain")["message"]

    def ban(self, worker_id: str, reason: str) -> str:
        """Refuses a worker until unbanned, across restarts (admin keys only): a connected one
        is dropped at once and its tasks run elsewhere. As `coupler worker ban`."""
        return self._expect("Ack", self.call("BanWorker", {"worker_id": worker_id,
                                                           "reason": reason, "ban": True}),
                            "ban")["message"]

    def unban(self, worker_id: str) -> str:
        """Lifts a ban (admin keys only). As `coupler worker unban`."""
        return self._expect("Ack", self.call("BanWorker", {"worker_id": worker_id,
                                                           "reason": "", "ban": False}),
                            "unban")["message"]

    def fence_gpu(self, worker_id: str, reason: str, gpus: Sequence[int] = ()) -> str:
        """Stops work going to a worker's GPUs (all of them when `gpus` is empty), across
        restarts, until cleared (admin keys only). As `coupler worker fence-gpu`."""
        return self._expect("Ack", self.call("FenceGpu", {"worker_id": worker_id,
                                                          "gpus": list(gpus), "reason": reason,
                                                          "fence": True}),
                            "fence-gpu")["message"]

    def clear_gpu(self, worker_id: str, gpus: Sequence[int] = ()) -> str:
        """Lifts the fences of a worker's GPUs, whoever set them (admin keys only). As
        `coupler worker clear-gpu`."""
        return self._expect("Ack", self.call("FenceGpu", {"worker_id": worker_id,
                                                          "gpus": list(gpus), "reason": "",
                                                          "fence": False}),
                            "clear-gpu")["message"]

    def workers(self) -> List[Dict[str, Any]]:
        """The worker pool, as `coupler workers --json` prints it."""
        reply = self._expect("WorkersReply", self.call("WorkersRequest", {"worker_id": ""}),
                             "workers")
        return workers_json(reply["workers"])

    def logs(self, job_id: str, node: Optional[str] = None, task: Optional[int] = None,
             attempt: Optional[int] = None) -> str:
        """What the job's tasks printed, as `coupler logs JOB [NODE [TASK]] [--attempt N]`
        prints it: each file under a "==> node/task N attempt A stream <==" header, each
        task's latest attempt unless `attempt`. Read from the job's workdir, which must be
        mounted here (the shared filesystem the workers write to); "" when none yet."""
        reply = self.status_reply(job_id)
        if not reply["jobs"]:
            raise CouplerError.of("NotFound", "no job " + job_id)
        job = reply["jobs"][0]
        if not job["workdir"]:
            raise CouplerError.of("Unavailable", "the coordinator did not say where job %s's "
                                  "workdir is" % job_id)
        nodes = [n["id"] for n in job["nodes"]]
        out = []
        for i, f in enumerate(list_task_logs(job["workdir"], nodes, node, task, attempt)):
            try:
                text = _read_log(f["path"])
            except OSError as e:
                raise CouplerError.of("NotFound", "cannot read %s: %s" % (f["path"], e.strerror))
            out.append("%s==> %s/task %d attempt %d %s <==\n" % (
                "" if i == 0 else "\n", f["node"], f["task_id"], f["attempt"], f["stream"]))
            out.append(text)
            if text and not text.endswith("\n"):
                out.append("\n")
        return "".join(out)
