"""coupler's guarantees for your own PyTorch training script, run as the ranks of an mpi_exec node.

    import coupler_torch as ct

    gang = ct.init()                           # process group from the gang's environment
    state = ct.load_latest()                   # a retried group resumes where it saved
    step = state["step"] if state else 0
    batching = ct.OomBackoff(micro_batch=64)   # one rank out of memory: every rank backs off
    while step < total_steps:
        batching.step(model, optimizer, rows_of(step), forward_backward)
        step += 1
        ct.report(step, loss=...)              # the node's steps.jsonl
        if step % 100 == 0 or ct.should_stop():
            ct.save({"step": step, "model": model.state_dict(), ...}, step)
            if ct.should_stop():
                ct.exit_stopped()              # the group ends here, on every rank

Needs nothing beyond Debian's python3-torch: put coupler's python/ folder on sys.path (the
examples do it relative to themselves). Everything here is collective where it says so — call
it at the same point of every step on every rank — and rank 0 alone writes files.

- init(): rank and world size from the launcher (mpirun's OMPI_COMM_WORLD_*, srun's SLURM_*,
  PMIx), the rendezvous from the address and port mpi_exec chose (COUPLER_MASTER_ADDR and
  COUPLER_MASTER_PORT, or MASTER_ADDR and MASTER_PORT), gloo on CPUs and NCCL when the rank
  has a GPU (one per local rank).
- should_stop(): coupler ends a group (cancel, timeout, a drained worker) with SIGTERM to every
  process of it, SIGKILL 2 s later; the first SIGTERM, SIGINT or SIGUSR1 on any rank raises a
  flag, and should_stop() agrees on it over the group (a max over the ranks), so all ranks see
  it at the same step and can save one checkpoint before leaving. exit_stopped() then leaves
  with STOPPED_EXIT, a failure coupler retries (if the node has retries left): the retry
  resumes from that checkpoint.
- checkpoint_dir(): COUPLER_NODE_DIR/checkpoints — the node's folder of this run, so runs never
  resume each other, while a retried attempt finds its predecessor's. save() writes
  ckpt-<step>.pt beside a temporary name, fsyncs it, renames it into place and fsyncs the
  folder, so a checkpoint is whole or absent, whatever kills the rank; latest() names the
  newest whole one.
- report(step, **metrics): one JSON line per call into COUPLER_NODE_DIR/steps.jsonl (rank 0),
  with the wall time: the same file coupler train writes.
- broadcast_parameters(model): rank 0's initial weights on every rank.
- OomBackoff: runs one optimizer step as `accumulate` micro-batches; when any rank runs out of
  memory (torch's OutOfMemoryError on a GPU, or past a memory budget on CPUs) every rank drops
  the step's gradients, halves its micro-batch and doubles accumulation, and redoes the step,
  so the effective batch, and what the step computes, stay the same — the agreement coupler
  train makes. Gradients are averaged over the ranks once per step, after the agreement (a rank
  that ran out of memory mid-backward must not leave the others waiting in an all-reduce), so
  the model is a plain one, not wrapped in DistributedDataParallel (whose all-reduce runs inside
  backward; with torch 1.13 its reducer can also hang the process at exit when every backward
  ran under no_sync): start the replicas equal with broadcast_parameters().
"""
import datetime
import glob
import json
import os
import resource
import signal
import sys
import time

import torch
import torch.distributed as dist

# Exit status of a group that stopped at coupler's request after saving: a failure (so nothing
# downstream reads a half-trained model) that coupler retries when the node has retries left.
STOPPED_EXIT = 75

_stop = {"requested": False, "signal": 0}
_gang = None


class Gang:
    """This process's place in the group."""

    def __init__(self, rank, world, local_rank, device, backend):
        self.rank, self.world, self.local_rank = rank, world, local_rank
        self.device, self.backend = device, backend

    def __repr__(self):
        return (f"Gang(rank={self.rank}, world={self.world}, local_rank={self.local_rank}, "
                f"device={self.device}, backend={self.backend})")


def _env_int(names, default):
    for name in names:
        value = os.environ.get(name, "")
        if value != "":
            return int(value)
    return default


def _on_signal(signum, _frame):
    # Only a flag: the step in progress finishes, should_stop() agrees on it. A second signal
    # ends the process as the signal would.
    _stop["requested"], _stop["signal"] = True, signum
    signal.signal(signum, signal.SIG_DFL)


def init(backend=None, timeout_s=300):
    """Joins the gang's process group (collective). Returns a Gang."""
    global _gang
    if _gang is not None:
        return _gang
    rank = _env_int(["OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK", "RANK"], 0)
    world = _env_int(["OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMIX_SIZE", "WORLD_SIZE"], 1)
    local_rank = _env_int(["OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"], 0)
    addr = os.environ.get("COUPLER_MASTER_ADDR") or os.environ.get("MASTER_ADDR")
    port = os.environ.get("COUPLER_MASTER_PORT") or os.environ.get("MASTER_PORT")
    if world > 1 and (not addr or not port):
        sys.exit("coupler_torch.init: no rendezvous address: run under an mpi_exec node (it sets "
                 "COUPLER_MASTER_ADDR and COUPLER_MASTER_PORT; a command of your own with "
                 "mpirun passes them with -x COUPLER_MASTER_ADDR -x COUPLER_MASTER_PORT), or "
                 "set MASTER_ADDR and MASTER_PORT")
    gpu = torch.cuda.is_available() and torch.cuda.device_count() > 0
    device = torch.device(f"cuda:{local_rank % torch.cuda.device_count()}") if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    backend = backend or ("nccl" if gpu else "gloo")
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(signum, _on_signal)
    if world > 1:
        # gloo pairs over the interface the host name resolves to; a group that meets on
        # loopback (one host) pairs over loopback, which needs no name for the host.
        if addr.startswith("127.") and "GLOO_SOCKET_IFNAME" not in os.environ:
            os.environ["GLOO_SOCKET_IFNAME"] = "lo"
        dist.init_process_group(backend, init_method=f"tcp://{addr}:{port}", rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=timeout_s))
    _gang = Gang(rank, world, local_rank, device, backend)
    return _gang


def broadcast_parameters(model):
    """Collective: every rank takes rank 0's parameters and buffers, so the replicas start
    equal (what DistributedDataParallel does when it wraps a model)."""
    gang = _require_init()
    if gang.world > 1:
        with torch.no_grad():
            for t in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(t.data, src=0)


def _require_init():
    if _gang is None:
        raise RuntimeError("coupler_torch: call init() first")
    return _gang


def _all_max(value):
    gang = _require_init()
    if gang.world == 1:
        return value
    t = torch.tensor([float(value)], device=gang.device if gang.backend == "nccl" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def stop_requested():
    """Whether this rank was signalled (local; not agreed)."""
    return _stop["requested"]


def should_stop():
    """Collective: True on every rank once any rank was asked to stop."""
    return _all_max(1.0 if _stop["requested"] else 0.0) > 0


def exit_stopped():
    """Leaves the group after a stop (every rank calls it), with STOPPED_EXIT."""
    finish()
    sys.exit(STOPPED_EXIT)


def node_dir():
    """The node's folder of this run (mpi_exec's {output}); the working folder outside coupler."""
    return os.environ.get("COUPLER_NODE_DIR") or os.getcwd()


def checkpoint_dir():
    path = os.path.join(node_dir(), "checkpoints")
    os.makedirs(path, exist_ok=True)
    return path


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _checkpoints():
    found = []
    for path in glob.glob(os.path.join(checkpoint_dir(), "ckpt-*.pt")):
        stem = os.path.basename(path)[len("ckpt-"):-len(".pt")]
        if stem.isdigit():
            found.append((int(stem), path))
    return sorted(found)


def save(state, step, keep=3):
    """Rank 0 writes `state` as checkpoint `step`, whole or not at all, and keeps the newest
    `keep`. Returns its path on rank 0, None elsewhere. Not collective."""
    gang = _require_init()
    if gang.rank != 0:
        return None
    folder = checkpoint_dir()
    path = os.path.join(folder, f"ckpt-{int(step):010d}.pt")
    tmp = os.path.join(folder, f".ckpt-{int(step):010d}.pt.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(folder)
    for _, old in _checkpoints()[:-keep] if keep > 0 else []:
        os.remove(old)
    return path


def latest():
    """The newest whole checkpoint's path, or None."""
    found = _checkpoints()
    return found[-1][1] if found else None


def load_latest(map_location="cpu"):
    """The newest checkpoint's state, or None when there is none."""
    path = latest()
    return None if path is None else torch.load(path, map_location=map_location)


def report(step, **metrics):
    """Rank 0 appends {"step", "time", **metrics} to the node's steps.jsonl. Not collective."""
    gang = _require_init()
    if gang.rank != 0:
        return
    line = {"step": int(step), "time": round(time.time(), 3)}
    for name, value in metrics.items():
        line[name] = value.item() if isinstance(value, torch.Tensor) else value
    with open(os.path.join(node_dir(), "steps.jsonl"), "a") as f:
        f.write(json.dumps(line) + "\n")


def finish():
    """Leaves the process group (every rank)."""
    global _gang
    if _gang is not None and _gang.world > 1 and dist.is_initialized():
        dist.destroy_process_group()
    _gang = None


def _resident_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / (1 << 20)


class OutOfMemory(Exception):
    """A micro-batch went past the memory budget (CPUs)."""


class OomBackoff:
    """One optimizer step over a rank's rows as `accumulate` micro-batches, backing off on every
    rank at once when one runs out of memory. Collective: every rank calls step() each step.

    memory_budget_mb (or COUPLER_MEMORY_BUDGET_MB): on CPUs, where running out of memory kills
    the process rather than raising, a micro-batch that leaves the resident set above it counts
    as out of memory."""

    def __init__(self, micro_batch, accumulate=1, memory_budget_mb=None, log=True):
        if micro_batch < 1 or accumulate < 1:
            raise ValueError("OomBackoff: micro_batch and accumulate must be >= 1")
        self.micro_batch, self.accumulate = int(micro_batch), int(accumulate)
        budget = memory_budget_mb or os.environ.get("COUPLER_MEMORY_BUDGET_MB")
        self.memory_budget_mb = float(budget) if budget else None
        self.backoffs = 0
        self.log = log

    def _micro_batches(self, rows):
        n = len(rows)
        return [rows[i:i + self.micro_batch] for i in range(0, n, self.micro_batch)]

    def step(self, model, optimizer, rows, forward_backward):
        """rows: this rank's rows of the step (micro_batch x accumulate of them; anything
        sliceable). forward_backward(chunk, weight): computes the chunk's loss and calls
        (loss * weight).backward(), weight being the chunk's share of `rows`. Averages the
        gradients over the ranks and steps the optimizer. Returns the number of backoffs."""
        gang = _require_init()
        params = [p for p in model.parameters() if p.requires_grad]
        backoffs = 0
        while True:
            optimizer.zero_grad(set_to_none=False)
            out_of_memory = False
            no_sync = getattr(model, "no_sync", None)  # DDP: its own reduce would hang here
            try:
                for chunk in self._micro_batches(rows):
                    if no_sync is not None:
                        with no_sync():
                            forward_backward(chunk, len(chunk) / len(rows))
                    else:
                        forward_backward(chunk, len(chunk) / len(rows))
                    if self.memory_budget_mb is not None and _resident_mb() > self.memory_budget_mb:
                        raise OutOfMemory(f"resident {_resident_mb():.0f} MiB > budget "
                                          f"{self.memory_budget_mb:.0f} MiB")
            except (torch.cuda.OutOfMemoryError, OutOfMemory) as e:
                out_of_memory = True
                reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            if _all_max(1.0 if out_of_memory else 0.0) == 0:
                break
            # Every rank backs off together, so all keep the same effective batch.
            if self.micro_batch == 1:
                raise RuntimeError("OomBackoff: out of memory at a micro-batch of 1 row")
            if gang.device.type == "cuda":
                torch.cuda.empty_cache()
            before = (self.micro_batch, self.accumulate)
            self.micro_batch = (self.micro_batch + 1) // 2
            self.accumulate *= 2
            backoffs += 1
            self.backoffs += 1
            if self.log:
                who = f"this rank: {reason}" if out_of_memory else "another rank"
                print(f"coupler_torch: rank {gang.rank}: out of memory on {who}; micro-batch "
                      f"{before[0]} -> {self.micro_batch}, accumulate {before[1]} -> "
                      f"{self.accumulate}", file=sys.stderr, flush=True)
        if gang.world > 1:
            grads = [p.grad for p in params if p.grad is not None]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            flat /= gang.world
            at = 0
            for g in grads:
                g.copy_(flat[at:at + g.numel()].view_as(g))
                at += g.numel()
        optimizer.step()
        return backoffs
