// The CPU priority of one of a ZeroMQ context's I/O threads. A socket that anyone may open
// connections to (the coordinator's client port) spends its I/O thread's CPU on every CURVE
// handshake, authorized or not — several key agreements each before ZAP can refuse the key. On
// a host whose cores are all busy, that thread then takes CPU from dispatch at a rate an
// unauthenticated peer chooses. Lowering its priority (a higher nice value) lets the threads
// that serve authenticated work go first when they contend, and changes nothing when a core is
// free. The thread is found by the name ZeroMQ gives it: the context's thread name prefix (an
// int, ZMQ_THREAD_NAME_PREFIX, set before its first socket) + "/ZMQbg/IO/" + its index.
#pragma once

#include <chrono>

#include "runtime/status.h"

namespace coupler::net {

// Raises the nice value of I/O thread `io_thread` (0-based, the bit ZMQ_AFFINITY selects) of
// the context named by `name_prefix` by `increment` (capped at 19), waiting up to `wait` for
// the thread to exist and be named (ZeroMQ starts its threads with the context's first socket).
// NotFound when no such thread appears; Internal when the kernel refuses.
Status LowerIoThreadPriority(int name_prefix, int io_thread, int increment,
                             std::chrono::milliseconds wait = std::chrono::milliseconds(1000));

// The nice value of the I/O thread named as above, for checks, waiting up to `wait` for it to
// be named; NotFound when there is none.
Result<int> IoThreadNice(int name_prefix, int io_thread,
                         std::chrono::milliseconds wait = std::chrono::milliseconds(1000));

}  // namespace coupler::net
