#!/usr/bin/env python3
"""Refused CURVE handshakes as an unauthenticated peer makes them: COUNT fresh client keys, each
a DEALER that connects once to ENDPOINT (the coordinator's client port) with the coordinator's
public key and is refused by its ZAP handler. Batches of 200 sockets, closed after a pause so
their handshakes complete. Prints the handshakes attempted and the seconds taken.

Usage: handshake_flood.py ENDPOINT COORDINATOR_PUB COUNT
"""
import sys
import time

import zmq


def server_key(path):
    for line in open(path):
        if line.startswith("public = "):
            return line.split("=", 1)[1].strip().encode()
    raise SystemExit(f"{path}: no 'public = ' line")


def main():
    endpoint, pub_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    server = server_key(pub_path)
    ctx = zmq.Context()
    start = time.perf_counter()
    made = 0
    while made < count:
        batch = []
        for _ in range(min(200, count - made)):
            public, secret = zmq.curve_keypair()
            s = ctx.socket(zmq.DEALER)
            s.linger = 0
            s.reconnect_ivl = -1  # one handshake per key
            s.curve_serverkey = server
            s.curve_publickey = public
            s.curve_secretkey = secret
            s.connect(endpoint)
            batch.append(s)
        made += len(batch)
        time.sleep(0.2)
        for s in batch:
            s.close()
    print(f"{made} handshakes in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
