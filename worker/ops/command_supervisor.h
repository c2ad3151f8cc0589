// The small process between the worker and an op's command: it keeps the command's whole
// process tree (its process group and, as a child subreaper, everything that escapes it, such
// as mpirun's ranks) and kills all of it when the worker asks (timeout, cancel) or dies.
#pragma once

#include <sys/types.h>

namespace coupler::worker {

// The file descriptors the supervisor starts with, all of them the worker's.
struct SupervisorFds {
  int out = -1;       // the command's stdout (write end)
  int err = -1;       // the command's stderr (write end)
  int lifeline = -1;  // read end of a pipe whose only writer is the worker: end-of-file means
                      // the worker closed it (stop the command) or died (the kernel closed it)
  int status = -1;    // write end: receives the command's wait status (an int) once it is reaped
};

// Runs in a child fork()ed from the worker and never returns. It executes /bin/sh -c with
// `argv` (prepared before fork) in a new process group, then waits for the command to end or
// the lifeline to close; on a close it sends SIGTERM to the tree, then SIGKILL after
// `grace_ms`. Whatever the command leaves behind is killed with SIGKILL before it exits.
// The worker is multi-threaded, so everything in here is async-signal-safe: plain system
// calls, no allocation, no locks.
[[noreturn]] void RunSupervisor(char* const argv[], char* const envp[], SupervisorFds fds,
                                int grace_ms);

// pidfd_open(2), or -1 where the kernel lacks it (the caller then polls in short slices).
int PidFdOpen(pid_t pid);

}  // namespace coupler::worker
