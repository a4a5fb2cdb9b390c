#!/usr/bin/env python3
"""cluster.py — `make bench-cluster` (issue 15 must-show 5): make bench's
cells on the netns cluster, and on iolake-aio in the same run, side by
side, with where the CPU went.

    bench/cluster.py [--build build] [--workdir TMPFS] [--nodes 6]
                     [--quick] [--json FILE]

1. The cluster: infra/netns-cluster.sh up, NODES nodes (one network
   namespace each, its own address on a bridge), every node one OSD and a
   gateway, the first three also a meta member, EC 4+2, OSD files on
   TMPFS, gateways without the per-address limits (the client is one
   address). Cells as make bench's (bench/e2e.py): PUT then GET of 4 KiB
   and 64 KiB at 32 in flight and of 4 MiB at 8, each cell driven by one
   iolake-s3-bench per gateway of the first three nodes at once (the
   concurrency split between them), ops/s summed, p50 the median of
   theirs, p99 and max the worst.
2. iolake-aio (six OSDs, 4+2, in-process RPC) on TMPFS, the same cells
   from one iolake-s3-bench.
3. During each cell, CPU time by process kind (meta, osd, gw; aio is one
   process) from /proc, and the machine's busy share from /proc/stat: on
   one host the cluster's processes, its kernel networking (veth, bridge,
   loopback TCP) and the clients share the same cores, which is what
   limits it here; the figures say how that time splits.

Prints markdown tables. Nothing asserts; exit 0 unless something failed
to run. Needs root (network namespaces).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError, fmt_int  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CL = os.path.join(HERE, "..", "infra", "netns-cluster.sh")
SUBNET = "10.81.0"
CLK = os.sysconf("SC_CLK_TCK")


def plan(quick):
    return [("4KiB", 1000 if quick else 5000, 32, 4), ("64KiB", 500 if quick else 2000, 32, 4),
            ("4MiB", 24 if quick else 100, 8, 3)]


def proc_cpu(pid):
    """utime + stime of pid, seconds; 0 when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / CLK
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_busy():
    """(busy, total) jiffies over every CPU."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


class CpuMeter:
    """CPU seconds per kind of process between start() and stop()."""

    def __init__(self, kinds):
        self.kinds = kinds   # {kind: [pid, ...]}

    def start(self):
        self.t0 = time.time()
        self.c0 = {k: sum(proc_cpu(p) for p in ps) for k, ps in self.kinds.items()}
        self.m0 = machine_busy()

    def stop(self):
        secs = time.time() - self.t0
        c1 = {k: sum(proc_cpu(p) for p in ps) for k, ps in self.kinds.items()}
        m1 = machine_busy()
        busy = (m1[0] - self.m0[0]) / max(1, m1[1] - self.m0[1])
        return {"secs": secs, "busy": busy,
                "cores": {k: (c1[k] - self.c0[k]) / secs for k in self.kinds}}


def cluster_pids(d):
    kinds = {"meta": [], "osd": [], "gw": []}
    with open(os.path.join(d, "pids")) as f:
        for line in f:
            parts = line.split()   # "nI ROLE PID": roles meta, osdJ, gw
            kind = parts[1].rstrip("0123456789") if len(parts) == 3 else ""
            if kind in kinds:
                kinds[kind].append(int(parts[2]))
    return kinds


def run_cells(bench, endpoints, quick, kinds, work, ak, sk):
    """Each cell from one iolake-s3-bench per endpoint at once."""
    out = {}
    for size, n, conc, gets in plan(quick):
        per = max(1, conc // len(endpoints))
        res = [None] * len(endpoints)
        errs = []

        def one(i, ep):
            try:
                j = os.path.join(work, "cell-%s-%d.json" % (size, i))
                res[i] = benchlib.s3bench(bench, ep, size, max(1, n // len(endpoints)), per, gets,
                                          j, ak=ak, sk=sk, bucket="bench%d" % i,
                                          prefix="c%s/" % size,
                                          warmup_ops=min(200, n // len(endpoints)))
            except BenchError as e:
                errs.append(str(e))

        meter = CpuMeter(kinds)
        meter.start()
        ts = [threading.Thread(target=one, args=(i, ep)) for i, ep in enumerate(endpoints)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        cpu = meter.stop()
        if errs:
            raise BenchError(errs[0])
        cell = {"cpu": cpu, "load": benchlib.uptime()}
        for ph in ("put", "get"):
            rs = [r[ph] for r in res]
            p50s = sorted(r["p50_ms"] for r in rs)
            cell[ph] = {"ops_per_s": sum(r["ops_per_s"] for r in rs),
                        "mib_per_s": sum(r["mib_per_s"] for r in rs),
                        "p50_ms": p50s[len(p50s) // 2],
                        "p99_ms": max(r["p99_ms"] for r in rs),
                        "max_ms": max(r.get("max_ms", 0) for r in rs)}
        out[size] = cell
        print("  %s done (load %s)" % (size, cell["load"]), file=sys.stderr, flush=True)
    return out


def cluster_run(build, bench, work, nodes, quick):
    d = tempfile.mkdtemp(prefix="cluster.", dir=work)
    gwflags = " ".join(benchlib.unlimited_flags(benchlib.build_bin(build, "iolake-gw")))
    up = [CL, "up", "--dir", d, "--build", build, "--nodes", str(nodes), "--osds-per-node", "1",
          "--prefix", "bc", "--subnet", SUBNET, "--ec", "4+2", "--osd-size", "2G",
          "--gw-flags", gwflags]
    try:
        r = subprocess.run(up, capture_output=True, text=True)
        if r.returncode:
            raise BenchError("netns-cluster up failed:\n" + (r.stdout + r.stderr)[-2000:])
        creds = {}
        with open(os.path.join(d, "credentials")) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    creds[k] = v
        eps = ["http://%s.%d:9000" % (SUBNET, i) for i in range(1, min(3, nodes) + 1)]
        return run_cells(bench, eps, quick, cluster_pids(d), d,
                         creds["AWS_ACCESS_KEY_ID"], creds["AWS_SECRET_ACCESS_KEY"])
    finally:
        subprocess.run([CL, "down", "--dir", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def aio_run(build, bench, work, quick):
    with benchlib.Aio(build, work) as a:
        return run_cells(bench, [a.ep], quick, {"aio": [a.proc.pid]}, a.dir, benchlib.AK,
                         benchlib.SK)


def print_tables(out):
    print("### make bench-cluster\n")
    print("Machine: %s; load average at the end %s.\n" % (out["machine"], out["load"]))
    print("| cell | where | ops/s | MiB/s | p50 ms | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for size, _, conc, _ in plan(out["quick"]):
        for ph in ("put", "get"):
            for where in ("cluster", "aio"):
                c = out[where][size][ph]
                print("| %s %s x%d | %s | %s | %.1f | %.1f | %.1f | %.1f |" % (
                    ph.upper(), size, conc, where, fmt_int(c["ops_per_s"]), c["mib_per_s"],
                    c["p50_ms"], c["p99_ms"], c["max_ms"]))
    print("\nCPU during each cell (PUT and GET phases together), in cores busy:\n")
    print("| cell | where | machine busy | meta | osd | gw | aio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for size, _, _, _ in plan(out["quick"]):
        for where in ("cluster", "aio"):
            cpu = out[where][size]["cpu"]
            c = cpu["cores"]
            print("| %s | %s | %.0f%% | %s | %s | %s | %s |" % (
                size, where, 100 * cpu["busy"],
                *("%.2f" % c[k] if k in c else "" for k in ("meta", "osd", "gw", "aio"))))


def measure(build, bench, work, a):
    out = {"machine": benchlib.machine(), "quick": a.quick}
    print("cluster (%d nodes)..." % a.nodes, file=sys.stderr, flush=True)
    out["cluster"] = cluster_run(build, bench, work, a.nodes, a.quick)
    print("aio...", file=sys.stderr, flush=True)
    out["aio"] = aio_run(build, bench, work, a.quick)
    out["load"] = benchlib.uptime()
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir")
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    build = os.path.abspath(a.build)
    bench = benchlib.build_bin(build, "iolake-s3-bench")
    if a.workdir:
        benchlib.check_workdir(a.workdir)
        out = measure(build, bench, a.workdir, a)
    else:
        with benchlib.tmpfs_mount() as work:
            out = measure(build, bench, work, a)
    print_tables(out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print("bench-cluster: %s" % e, file=sys.stderr)
        sys.exit(1)
