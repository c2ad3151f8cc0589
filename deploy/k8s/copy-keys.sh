#!/bin/sh
# The init container of every coupler pod (deploy/k8s): copies key sets out of their Secret
# volumes into folders the pod's own user owns, since coupler runs as that user, not root:
#   coupler-copy-keys FROM TO [FROM TO]...
# Why a copy: the kubelet mounts a Secret's files owned by root, and with the pod's fsGroup
# (which the state and shared claims need to be writable) it adds group read to them (0440);
# coupler refuses a secret key anyone but its owner can read. The copy is made under umask 077
# (files 0400, folders 0700) into an emptyDir in memory that only this pod sees. TO is emptied
# first, so a key removed from the Secret is gone after the pod restarts (the copy is made
# at pod start: `kubectl rollout restart` after changing a Secret).
set -eu
umask 077
if [ $# -eq 0 ] || [ $(($# % 2)) -ne 0 ]; then
  echo "usage: coupler-copy-keys FROM TO [FROM TO]..." >&2
  exit 2
fi
while [ $# -gt 0 ]; do
  from=$1
  to=$2
  shift 2
  [ -d "$to" ] || { echo "coupler-copy-keys: $to is not a folder (mount an emptyDir there)" >&2; exit 1; }
  find "$to" -mindepth 1 -delete
  copied=0
  # The visible names only: ..data and the timestamped folder are the kubelet's plumbing.
  for entry in "$from"/*; do
    [ -e "$entry" ] || continue
    cp -RL "$entry" "$to/"
    copied=$((copied + 1))
  done
  [ "$copied" -gt 0 ] || { echo "coupler-copy-keys: nothing to copy in $from" >&2; exit 1; }
  echo "coupler-copy-keys: $from -> $to ($(find "$to" -type f | wc -l) files, owner $(id -u))"
done
