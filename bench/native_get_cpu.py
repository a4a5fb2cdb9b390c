#!/usr/bin/env python3
"""native_get_cpu.py — GET 4 KiB over S3 and over the native protocol
(issue 19, must-show 5) on one fresh iolake-aio, measured as CPU: the
aio's and the client's (iolake-s3-bench) per GET, beside GET/s and p50,
p99 and max.

    bench/native_get_cpu.py --workdir TMPFS [--build DIR] [--objects 2000]
                            [--gets 60] [--rounds 2] [--record DIR]
                            [--conns 1,2,4] [--syscalls]

Three sides: S3, native (each connection logged in once, calls unsigned)
and native-signed (every call signed, --native-sign-each-call). Each
first PUTs --objects objects (no warm-up), then each round
runs a GET-only load over them (iolake-s3-bench --skip-put, 32 in flight,
--gets GETs of each object; native calls on HTTP/2 connections, one per
gateway loop, as bench/e2e.py makes them), in turn, the order reversed
every other round. The aio's CPU is
utime+stime from /proc/PID/stat across the GET-only run, the client's is
the run's rusage; both divided by the GETs made. With --record DIR,
`perf record --call-graph dwarf` of the aio across each run into
DIR/PROTO-ROUND.perf. --conns runs both native sides at each connection
count (docs/performance.md's sweep); --syscalls counts the aio's writev
calls per GET with `perf stat` instead.

Exit 0, or 2 when a run failed.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import e2e  # noqa: E402  (native_endpoint, native_conns)

TICK = os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--workdir", required=True, help="a tmpfs outside /dev")
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--gets", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--record", help="directory for perf record files")
    ap.add_argument("--conns", help="native HTTP/2 connections, a comma list (default: one "
                    "per gateway loop); each count is a side of its own")
    ap.add_argument("--syscalls", action="store_true",
                    help="perf stat the aio's writev calls per GET (not with --record)")
    a = ap.parse_args()
    try:
        workdir = bl.check_workdir(a.workdir)
        bench = bl.build_bin(a.build, "iolake-s3-bench")
        with bl.Aio(a.build, workdir) as aio:
            nep = e2e.native_endpoint(aio)
            if not nep:
                raise bl.BenchError("iolake-aio wrote no native_endpoint in aio.json")
            j = os.path.join(aio.dir, "cell.json")
            conns = a.conns.split(",") if a.conns else [str(e2e.native_conns(aio))]
            sides = {"s3": (aio.ep, ())}
            for c in conns:
                native = ("--protocol", "native", "--no-create-bucket", "--native-conns", c)
                tag = "" if not a.conns else " %sc" % c
                sides["native" + tag] = (nep, native)
                sides["native-signed" + tag] = (nep, native + ("--native-sign-each-call",))
            put = set()
            for proto, (ep, extra) in sides.items():
                prefix = proto.split()[0] + "/"   # one set of objects per protocol
                if prefix not in put:
                    put.add(prefix)
                    bl.s3bench(bench, ep, "4KiB", a.objects, 32, 0, j, prefix=prefix,
                               extra=extra + ("--warmup", "0s"))
            wv = " aio writev/GET |" if a.syscalls else ""
            print("| run | GET/s | p50 ms | p99 ms | max ms | aio CPU us/GET | client CPU us/GET |"
                  + wv)
            print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if wv else ""))
            for rnd in range(a.rounds):
                order = list(sides)
                for proto in (order if rnd % 2 == 0 else order[::-1]):
                    ep, extra = sides[proto]
                    perf = None
                    stat = os.path.join(aio.dir, "writev.stat")
                    if a.syscalls:
                        perf = subprocess.Popen(
                            ["perf", "stat", "-x,", "-e", "syscalls:sys_enter_writev", "-o", stat,
                             "-p", str(aio.proc.pid)])
                        time.sleep(0.5)
                    elif a.record:
                        perf = subprocess.Popen(
                            ["perf", "record", "--call-graph", "dwarf,16384", "-F", "499", "-o",
                             os.path.join(a.record, "%s-%d.perf" % (proto, rnd)),
                             "-p", str(aio.proc.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        time.sleep(0.5)
                    t0 = bl.cpu_ticks(aio.proc.pid)
                    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    r = bl.s3bench(bench, ep, "4KiB", a.objects, 32, a.gets, j,
                                   prefix=proto.split()[0] + "/", extra=extra + ("--skip-put",))
                    t1 = bl.cpu_ticks(aio.proc.pid)
                    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if perf:
                        perf.send_signal(2)
                        perf.wait()
                    g = r["get"]
                    n = max(g["ops"], 1)
                    client = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
                    extra_col = ""
                    if a.syscalls:
                        with open(stat) as f:
                            w = [ln.split(",")[0] for ln in f if "sys_enter_writev" in ln]
                        extra_col = " %.2f |" % (int(w[0]) / n) if w and w[0].isdigit() else " ? |"
                    print("| %s %d | %s | %.2f | %.2f | %.1f | %.1f | %.1f |%s" % (
                        proto, rnd + 1, bl.fmt_int(g["ops_per_s"]), g["p50_ms"], g["p99_ms"],
                        g["max_ms"], (t1 - t0) * 1e6 / TICK / n, client * 1e6 / n, extra_col),
                        flush=True)
    except bl.BenchError as e:
        print("native_get_cpu.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
