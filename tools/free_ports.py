#!/usr/bin/env python3
"""Ports of 127.0.0.1 for the servers of a cluster started on this machine.

Used by the scripts that start clusters of real processes (tools/chaos.py,
tests/elastic/elastic_training.py, examples/cluster/run_cluster.sh). As a script,
`free_ports.py N` prints N ports on one line.
"""
import random
import socket
import sys

LOWEST_PORT = 10000


def free_ports(n):
    """n distinct ports of 127.0.0.1 free now, below the kernel's ephemeral range, so
    that no outgoing connection's source port takes one before its server listens.
    Another listener may still take one: callers that can, start again on new ports."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    rng = random.SystemRandom()
    while True:
        socks = [socket.socket() for _ in range(n)]
        try:
            for s in socks:
                s.bind(("127.0.0.1", rng.randrange(LOWEST_PORT, max(ephemeral_low, LOWEST_PORT + n))))
            return [s.getsockname()[1] for s in socks]
        except OSError:
            continue  # taken (or drawn twice): draw all n again
        finally:
            for s in socks:
                s.close()


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]))))
