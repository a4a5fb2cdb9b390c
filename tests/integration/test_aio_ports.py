#!/usr/bin/env python3
"""test_aio_ports.py — meta's kept address in iolake-aio (aio/aio_ports.c).

The first start draws meta's RPC port and its Raft port (+ 1) below the
kernel's ephemeral range and keeps them in DATA/meta/rpc-addr. A restart
whose kept Raft port is held by an outgoing connection (a port of that
range taken as a client's local port, which is how a CI run's
test_upgrade failed to start an aio: "raft mux cannot listen ... address
already in use") waits for it, saying so in its log, and starts once the
connection ends, with every acknowledged object readable.

Fails without the wait: the aio exits 1 at once ("raft start failed").
"""
import os, socket, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from aio_py import Aio, Checks  # noqa: E402


def ephemeral_low():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        return int(f.read().split()[0])


def hold_as_local_port(port):
    """A connected TCP socket whose local port is port (as an outgoing
    connection's ephemeral port is), and the listener it connected to."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.socket()
    cli.bind(("127.0.0.1", port))
    cli.connect(srv.getsockname())
    acc, _ = srv.accept()
    return [cli, acc, srv]


def main():
    c = Checks()
    aio = Aio()
    try:
        aio.start()
        path = os.path.join(aio.data, "meta", "rpc-addr")
        host, port = open(path).read().strip().rsplit(":", 1)
        port = int(port)
        low = ephemeral_low()
        c.expect((host, 20000 <= port and port + 1 < low), ("127.0.0.1", True),
                 "meta's pair %d,%d drawn from 20000 up to the ephemeral range (%d)"
                 % (port, port + 1, low))
        s3 = aio.client()
        s3.create_bucket(Bucket="ports")
        body = os.urandom(100000)
        s3.put_object(Bucket="ports", Key="k", Body=body)
        rc, _ = aio.stop(limit=15)
        c.expect(rc, 0, "aio exits 0 on SIGTERM")

        held = hold_as_local_port(port + 1)
        started = {}

        def start():
            try:
                aio.start(timeout=150)
                started["ok"] = time.time()
            except Exception as e:  # reported below
                started["err"] = str(e)
        t = threading.Thread(target=start)
        t.start()
        waiting = False
        end = time.time() + 30
        while time.time() < end and not waiting and "err" not in started:
            time.sleep(0.2)
            waiting = "meta's kept address is in use" in aio.log_tail(50)
        c.expect((waiting, started.get("err")), (True, None),
                 "with its Raft port %d held by a connection, the aio waits and says so"
                 % (port + 1))
        time.sleep(1)
        c.expect((aio.proc.poll(), "ok" in started), (None, False),
                 "it is still waiting, not started, not exited")
        released = time.time()
        held[1].close()   # the listener's side closes first, so the held
        time.sleep(0.2)   # port does not stay in TIME_WAIT for a minute
        for s in held:
            s.close()
        t.join()
        c.expect((started.get("err"), "ok" in started), (None, True),
                 "it starts once the connection ends (%.1f s later)"
                 % (started.get("ok", released) - released))
        if "ok" in started:
            got = aio.client().get_object(Bucket="ports", Key="k")["Body"].read()
            c.expect(got == body, True, "the object acknowledged before reads back")
            c.expect(open(path).read().strip(), "127.0.0.1:%d" % port,
                     "the kept address is unchanged")
            rc, _ = aio.stop(limit=15)
            c.expect(rc, 0, "aio exits 0 on SIGTERM again")
    finally:
        aio.close()
    c.finish()


if __name__ == "__main__":
    main()
