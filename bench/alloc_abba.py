#!/usr/bin/env python3
"""alloc_abba.py — allocations and CPU per S3 request of iolake-aio, base
against head, in ABBA order (issue 19's zero-copy figures).

    bench/alloc_abba.py --base DIR --head DIR [--workdir /dev/shm] [--record]

DIR are build directories (iolake-aio, iolake-s3-bench; nothing is built).
The order is base, head, head, base. Each run is a fresh iolake-aio (six
OSDs, 4+2, in-process RPC) on WORKDIR. For each cell (4 KiB x 4,000 and
64 KiB x 2,000 at 32 in flight, 4 MiB x 100 at 8), it runs a PUT-only
phase and then a GET-only phase (--skip-put, each object read twice).
Every phase is run under

    perf stat -e probe_libc:malloc,probe_libc:calloc,task-clock -p <aio>

and its count is divided by the phase's operations. That prints ops/s,
MiB/s, p50/p99/max, allocations per op and CPU µs per op, and the load
average.

The uprobes must exist first; this script creates them and removes them
at the end:
    perf probe -x /lib/x86_64-linux-gnu/libc.so.6 malloc   (and calloc).
With --record it runs perf record -g instead (files
/tmp/alloc_abba-TAG-SIZE-PHASE.perf; no allocation counts).

The allocation counts include everything in the process (meta, RocksDB,
OpenSSL), so compare base with head from the same session, not with other
days. Exit 0, or 1 when a run failed.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

CELLS = [("4KiB", 32, 4000), ("64KiB", 32, 2000), ("4MiB", 8, 100)]
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def phase(bench, aio, tag, size, conc, objs, name, record):
    js = "/tmp/alloc_abba-%s-%s-%s.json" % (tag, size, name)
    extra = ["--gets", "0"] if name == "put" else ["--gets", "2", "--skip-put"]
    if name == "get" or size != CELLS[0][0]:
        extra.append("--no-create-bucket")
    cmd = [bench, "--endpoint", aio.ep, "--access-key", bl.AK, "--secret-key", bl.SK,
           "--bucket", "bench", "--size", size, "--objects", str(objs),
           "--concurrency", str(conc), "--prefix", size, "--json", js] + extra
    base = "/tmp/alloc_abba-%s-%s-%s" % (tag, size, name)
    if record:
        perf = ["perf", "record", "-g", "-F", "1999", "-p", str(aio.proc.pid), "-o", base + ".perf"]
    else:
        perf = ["perf", "stat", "-x,", "-e", "probe_libc:malloc,probe_libc:calloc,task-clock",
                "-p", str(aio.proc.pid), "-o", base + ".stat"]
    p = subprocess.Popen(perf, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p.send_signal(2)
    p.wait()
    if r.returncode:
        raise bl.BenchError("iolake-s3-bench %s %s: %s" % (size, name, r.stdout[-1500:]))
    with open(js) as f:
        d = [x for x in json.load(f)["phases"] if x["name"] == name][0]
    lat = d["latency_us"]
    line = "%s %-5s %s %7.0f ops/s %7.1f MiB/s p50 %7.2f p99 %7.2f max %8.2f ms" % (
        tag, size, name.upper(), d["ops_per_s"], d["mib_per_s"], lat["p50"] / 1e3,
        lat["p99"] / 1e3, lat.get("max", 0) / 1e3)
    if not record:
        st = {}
        with open(base + ".stat") as f:
            for ln in f:
                x = ln.strip().split(",")
                if len(x) > 3 and x[0][:1].isdigit():
                    st[x[2]] = float(x[0])
        allocs = st.get("probe_libc:malloc", 0) + st.get("probe_libc:calloc", 0)
        line += " | allocs/op %.1f cpu_us/op %.1f" % (allocs / d["ops"],
                                                    st.get("task-clock", 0) * 1e3 / d["ops"])
    print(line + " | load " + bl.uptime(), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    if not a.record:
        for fn in ("malloc", "calloc"):
            subprocess.run(["perf", "probe", "-q", "-x", LIBC, fn],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rc = 0
    try:
        for tag, build in (("base1", a.base), ("head1", a.head), ("head2", a.head),
                           ("base2", a.base)):
            bench = bl.build_bin(build, "iolake-s3-bench")
            print("== %s %s load %s" % (tag, build, bl.uptime()), flush=True)
            with bl.Aio(build, a.workdir) as aio:
                for size, conc, objs in CELLS:
                    for name in ("put", "get"):
                        phase(bench, aio, tag, size, conc, objs, name, a.record)
    except bl.BenchError as e:
        print("failed: %s" % e, file=sys.stderr)
        rc = 1
    finally:
        if not a.record:
            subprocess.run(["perf", "probe", "-q", "-d", "probe_libc:malloc", "-d",
                            "probe_libc:calloc"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    return rc


if __name__ == "__main__":
    sys.exit(main())
