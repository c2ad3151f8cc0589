#!/bin/sh
# What a binary linking only coupler_client (and so coupler_runtime) pulled in: no MPI, NCCL or
# SQLite among its shared libraries, and no scheduler, store or training code among its symbols.
# Usage: link_check.sh BINARY. Exits 1 naming what it found.
set -eu
bin="$1"
status=0
libs="$(ldd "$bin")"
for lib in libmpi libnccl libsqlite3 libcudart; do
  if printf '%s\n' "$libs" | grep -q "$lib"; then
    echo "$bin needs $lib:"; printf '%s\n' "$libs" | grep "$lib"; status=1
  fi
done
symbols="$(nm -C "$bin")"
for what in 'coupler::coordinator::' 'coupler::train::' 'coupler::comm::' 'sqlite3_' 'MPI_'; do
  if printf '%s\n' "$symbols" | grep -q "$what"; then
    echo "$bin holds $what symbols, e.g.:"; printf '%s\n' "$symbols" | grep "$what" | head -3; status=1
  fi
done
[ "$status" -eq 0 ] && echo "$bin: runtime and client only ($(printf '%s\n' "$libs" | wc -l) shared libraries)"
exit "$status"
