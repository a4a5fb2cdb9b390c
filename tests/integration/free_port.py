#!/usr/bin/env python3
"""free_port.py — free ports on 127.0.0.1 for the tests (imported by
aio_py.py; run by the shell helpers: `free_port.py [N]` prints the first
of N consecutive free ports).

Drawn at random from 10000-19999, below both the ports iolake-aio draws
for its meta (20000 up to the ephemeral range: a stopped aio keeps its
pair) and the kernel's ephemeral range (ip_local_port_range, 32768-60999
here). Never from that range: a port of it
range can become any outgoing connection's local port (a client's, a
service's own) between this probe and the server's bind, or between a
server's stop and its restart on the same port, which fails the start
with "address already in use" (it did: a meta member, and an aio's
Raft port in test_upgrade)."""
import random, socket, sys


def ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_block(n=1):
    """The first of n consecutive ports free on 127.0.0.1 now, all in
    10000-19999 (and below the ephemeral range)."""
    hi = min(20000, ephemeral_low()) - n
    if hi <= 10000:   # a range starting low (1024-65535): no way out of it
        hi = 20000 - n
    for _ in range(1000):
        p = random.randrange(10000, hi)
        ok = True
        for q in range(p, p + n):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
            if not ok:
                break
        if ok:
            return p
    raise RuntimeError("no block of %d free ports in 10000-%d" % (n, hi))


if __name__ == "__main__":
    print(free_block(int(sys.argv[1]) if len(sys.argv) > 1 else 1))
