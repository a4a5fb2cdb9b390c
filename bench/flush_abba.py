#!/usr/bin/env python3
"""flush_abba.py — small PUTs against the disk's flush, base and head in
ABBA order (issue 19; docs/performance.md, "Small PUTs past the flush
rate"): fio's single-writer 4 KiB fdatasync on DISK before and after; for
each run a fresh iolake-aio with its data dir on DISK, iolake-s3-bench
PUT 4 KiB then 64 KiB at 32 in flight (200 warm-up), p50/p99/max, meta's
ops per Raft entry (iolake_meta_batch_ops) and the syscalls that flush
(perf stat on aio's PID over each cell: fsync, fdatasync, io_submit — the
Raft log's O_DSYNC AIO writes), and the load average.

    bench/flush_abba.py --base BASE_BUILD --head HEAD_BUILD [--disk /var/tmp]
        [--order base,head,head,base] [--n4 8000] [--n64 2000] [--json FILE]

Needs fio and perf (perf_event_paranoid low enough to count syscalls).
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from e2e import fio_fdatasync  # noqa: E402

EV = ("syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,"
      "syscalls:sys_enter_io_submit")


def batch_ops(ep):
    t = urllib.request.urlopen(ep + "/metrics", timeout=5).read().decode()
    s = c = 0.0
    for line in t.splitlines():
        if line.startswith("iolake_meta_batch_ops_sum"):
            s += float(line.split()[-1])
        elif line.startswith("iolake_meta_batch_ops_count"):
            c += float(line.split()[-1])
    return s, c


def cell(name, size, n, aio, bench):
    perf = subprocess.Popen(["perf", "stat", "-x,", "-e", EV, "-p", str(aio.proc.pid)],
                            stderr=subprocess.PIPE, text=True)
    s0, c0 = batch_ops(aio.ep)
    r = benchlib.s3bench(bench, aio.ep, size, n, 32, 1, os.path.join(aio.dir, "c.json"),
                         prefix=size + "/", warmup_ops=200)
    perf.send_signal(2)
    err = perf.communicate()[1]
    s1, c1 = batch_ops(aio.ep)
    sc = {}
    for line in err.splitlines():
        f = line.split(",")
        if len(f) > 2 and "sys_enter_" in f[2]:
            try:
                sc[f[2].split("sys_enter_")[1]] = int(f[0])
            except ValueError:
                pass
    put = r["put"]
    syncs = sc.get("fdatasync", 0) + sc.get("fsync", 0)
    out = {"put": put, "ops_per_entry": (s1 - s0) / (c1 - c0) if c1 > c0 else 0,
           "syscalls": sc, "load": benchlib.uptime()}
    print("%-5s %-6s PUT %7.0f/s p50 %6.2f p99 %7.2f max %7.2f ms | meta ops/entry %5.1f | "
          "fsync+fdatasync per PUT %.3f, io_submit %d | load %s" % (
              name, size, put["ops_per_s"], put["p50_ms"], put["p99_ms"], put["max_ms"],
              out["ops_per_entry"], syncs / max(1, put["ops"]), sc.get("io_submit", 0),
              out["load"]), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--disk", default="/var/tmp")
    ap.add_argument("--order", default="base,head,head,base")
    ap.add_argument("--n4", type=int, default=8000)
    ap.add_argument("--n64", type=int, default=2000)
    ap.add_argument("--json")
    a = ap.parse_args()
    builds = {"base": a.base, "head": a.head}
    out = {"order": a.order, "runs": [], "machine": benchlib.machine()}
    d = tempfile.mkdtemp(prefix="iolake-flush.", dir=a.disk)
    try:
        f0 = fio_fdatasync(d, 3)
        print("fio fdatasync 4 KiB, one writer: %.0f/s (load %s)" % (f0, benchlib.uptime()),
              flush=True)
        for name in a.order.split(","):
            with benchlib.Aio(builds[name], d) as aio:
                bench = benchlib.build_bin(builds[name], "iolake-s3-bench")
                out["runs"].append({"name": name,
                                    "4KiB": cell(name, "4KiB", a.n4, aio, bench),
                                    "64KiB": cell(name, "64KiB", a.n64, aio, bench)})
        f1 = fio_fdatasync(d, 3)
        print("fio fdatasync 4 KiB, one writer: %.0f/s (load %s)" % (f1, benchlib.uptime()),
              flush=True)
        out["fio_fdatasync_iops"] = [f0, f1]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
