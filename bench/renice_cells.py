#!/usr/bin/env python3
"""renice_cells.py — make bench's disk cell (issue 19 must-show 3) with
iolake-aio's threads at other scheduling priorities, settings alternated
(docs/performance.md, "thread priorities on the disk cell"). Per cell: a
fresh aio with its data under --workdir, its threads reniced by name from
outside (setpriority per tid, again after the first PUTs for threads that
start late), a fresh aio's first 4,000 PUTs of 4 KiB at 32, then 5 s of
PUT 4 KiB at 32 after a 2-s warm-up (e2e.py's disk_cell); fio's
single-writer 4 KiB fdatasync on --workdir before and after each round.

    bench/renice_cells.py [--build build] [--workdir /var/tmp]
        [--order base,bg19gw3,bg19gw3,base,meta-5,base] [--rounds 2]

Settings: base (as started), bg19gw3 (RocksDB's threads at nice 19, the
gateway loops at +3), meta-5 (meta's loop at -5; needs CAP_SYS_NICE),
metafifo (the threads named "meta", its loop and libuv's pool threads,
in SCHED_FIFO at priority 1).
Nothing asserts: one line per cell (PUT/s, p50, p99, max, load), the fio
rates, and per setting the sorted rates and their median.
"""
import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import e2e  # noqa: E402

SETTINGS = {
    "base": [],
    "bg19gw3": [("rocksdb", 19), ("gw.", 3)],
    "meta-5": [("meta", -5)],
    "metafifo": [("meta", "fifo")],
}


def renice(pid, setting):
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
        except OSError:
            continue   # the thread ended
        for prefix, nice in setting:
            if not comm.startswith(prefix):
                continue
            if nice == "fifo":
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(1))
            else:
                os.setpriority(os.PRIO_PROCESS, int(tid), nice)


def cell(build, bench, name, d):
    with benchlib.Aio(build, d) as aio:
        renice(aio.proc.pid, SETTINGS[name])
        benchlib.s3bench(bench, aio.ep, "4KiB", 4000, 32, 0, os.path.join(aio.dir, "c.json"),
                         prefix="d/", warmup_ops=200)
        renice(aio.proc.pid, SETTINGS[name])
        r = benchlib.s3bench(bench, aio.ep, "4KiB", 200000, 32, 0,
                             os.path.join(aio.dir, "s.json"), prefix="s/", duration_s=5,
                             warmup_s=2)
    return r["put"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--order", default="base,bg19gw3,bg19gw3,base,meta-5,base")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    order = a.order.split(",")
    for n in order:
        if n not in SETTINGS:
            ap.error("unknown setting %s (known: %s)" % (n, ", ".join(SETTINGS)))
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    rates = {}
    for rnd in range(a.rounds):
        d = tempfile.mkdtemp(prefix="renice.", dir=a.workdir)
        try:
            before = e2e.fio_fdatasync(d, 5)
            for n in order:
                p = cell(a.build, bench, n, d)
                rates.setdefault(n, []).append(p["ops_per_s"])
                print("round %d %-8s %8.0f PUT/s  p50 %.2f  p99 %.2f  max %.1f ms  load %s" % (
                    rnd, n, p["ops_per_s"], p["p50_ms"], p["p99_ms"], p["max_ms"],
                    benchlib.uptime()), flush=True)
            print("round %d fio fdatasync/s: %.0f before, %.0f after" % (
                rnd, before, e2e.fio_fdatasync(d, 5)), flush=True)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    for n, v in rates.items():
        v.sort()
        print("%-8s %s  median %.0f" % (n, ", ".join("%.0f" % x for x in v), v[len(v) // 2]))


if __name__ == "__main__":
    main()
