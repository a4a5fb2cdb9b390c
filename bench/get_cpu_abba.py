#!/usr/bin/env python3
"""get_cpu_abba.py — CPU per S3 GET of iolake-aio under wrk on presigned
URLs (issue 19, must-show 1), base against head, in ABBA order.

    bench/get_cpu_abba.py --base DIR --head DIR [--workdir TMPFS]
                          [--sizes 4KiB,64KiB] [--secs 6] [--rounds 1]
                          [--port 26100] [--record DIR [--call-graph dwarf]]
                          [--base-flags "..."] [--head-flags "..."]

DIR are build directories (iolake-aio, iolake-s3-bench; nothing is built).
Each round is base, head, head, base. Each run is a fresh iolake-aio (six
OSDs, 4+2, in-process RPC) on WORKDIR (a tmpfs outside /dev; without
--workdir one is mounted under /tmp for the run, which needs root),
listening on --port. Per size it PUTs --objects objects with
iolake-s3-bench, makes presigned GET URLs for them (boto3, SigV4 query)
and runs `wrk -t2 -c32 -d SECS` over them, the
way bench/e2e.py does. The store's CPU is utime+stime of the aio process
from /proc/PID/stat across the wrk run; divided by wrk's request count it
is "CPU µs per GET", the figure that means something on a loaded machine
(ops/s and p99 are printed too, and are noise under load). `perf stat -p`
counts the process's syscalls and context switches over the same run
(and /proc/PID/task the CPU of meta's loop thread, "meta", per GET):
per GET, those counts move little with the load.

With --head only (no --base) it runs the head once per round.
--base-flags / --head-flags: extra iolake-aio flags for that side's runs
(base and head may be one build, compared with and without a flag). With
--record DIR it runs `perf record -g -F 1999 -p <aio>` across each wrk run
into DIR/TAG-SIZE.perf instead of counting; --call-graph dwarf records
whole stacks instead (the build has no frame pointers, so -g's stacks stop
at the first libc or protobuf-c frame), at -F 499 to keep the files small.

Exit 0, or 1 when a run failed.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import e2e  # noqa: E402  (wrk's Lua script and presigned_paths)

TICK = os.sysconf("SC_CLK_TCK")


def thread_ticks(pid, comm):
    """utime+stime of pid's threads named comm (meta's loop: "meta")."""
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                head, x = f.read().rsplit(")", 1)
        except OSError:
            continue
        if head.split("(", 1)[1] == comm:
            x = x.split()
            n += int(x[11]) + int(x[12])
    return n


def wrk_run(aio, paths, secs, work, perf_out, call_graph="fp"):
    pf = os.path.join(work, "paths.txt")
    with open(pf, "w") as f:
        f.write("\n".join(paths) + "\n")
    lua = os.path.join(work, "paths.lua")
    with open(lua, "w") as f:
        f.write(e2e.WRK_LUA)
    stat_out = os.path.join(work, "stat.csv")
    if perf_out:
        cmd = ["perf", "record", "-g", "-F", "1999", "-o", perf_out]
        if call_graph == "dwarf":
            cmd = ["perf", "record", "--call-graph", "dwarf,16384", "-F", "499", "-o", perf_out]
    else:
        cmd = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,context-switches",
               "-o", stat_out]
    perf = subprocess.Popen(cmd + ["-p", str(aio.proc.pid)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    t0 = bl.cpu_ticks(aio.proc.pid)
    m0 = thread_ticks(aio.proc.pid, "meta")
    r = subprocess.run(["wrk", "-t2", "-c32", "-d%ds" % secs, "--latency", "-s", lua, aio.ep],
                       capture_output=True, text=True, env=dict(os.environ, WRK_PATHS=pf))
    t1 = bl.cpu_ticks(aio.proc.pid)
    m1 = thread_ticks(aio.proc.pid, "meta")
    perf.send_signal(2)
    perf.wait()
    counts = {}
    if not perf_out:
        with open(stat_out) as f:
            for ln in f:
                x = ln.strip().split(",")
                if len(x) > 3 and x[0][:1].isdigit():
                    counts[x[2]] = float(x[0])
    t = r.stdout
    n = re.search(r"(\d+) requests in", t)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", t)
    if r.returncode or not n or not rate:
        raise bl.BenchError("wrk failed:\n%s%s" % (t, r.stderr))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if bad:
        raise bl.BenchError("wrk: %s non-2xx responses" % bad.group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", t)
    reqs = int(n.group(1))
    return {"ops": float(rate.group(1)), "reqs": reqs,
            "p99": float(p99.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[p99.group(2)],
            "cpu_us": (t1 - t0) * 1e6 / TICK / max(reqs, 1),
            "meta_us": (m1 - m0) * 1e6 / TICK / max(reqs, 1),
            "sys": counts.get("raw_syscalls:sys_enter", 0) / max(reqs, 1),
            "cs": counts.get("context-switches", 0) / max(reqs, 1)}


def one_run(tag, build, a, results):
    flags = shlex.split(a.head_flags if tag.startswith("head") else a.base_flags)
    for aio, work, size, paths in e2e.presigned_cells(build, a.workdir, a.port, a.sizes,
                                                      a.objects, flags, "getcpu."):
        perf_out = os.path.join(a.record, "%s-%s.perf" % (tag, size)) if a.record else None
        w = wrk_run(aio, paths, a.secs, work, perf_out, a.call_graph)
        results.setdefault((tag[:4], size), []).append(w)
        print("%-6s %-6s %8.0f GET/s p99 %7.1f ms %8d reqs  CPU %6.1f us/GET "
              "(meta thread %5.1f)  syscalls %5.1f/GET  cs %5.2f/GET | load %s" % (
                  tag, size, w["ops"], w["p99"], w["reqs"], w["cpu_us"], w["meta_us"],
                  w["sys"], w["cs"], bl.uptime()), flush=True)


def runs(a, order, results):
    for r in range(a.rounds):
        for j, (tag, build) in enumerate(order):
            one_run("%s%d" % (tag, r * 2 + j // 2 + 1 if a.base else r + 1), build, a, results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base")
    ap.add_argument("--head", required=True)
    ap.add_argument("--workdir", help="a tmpfs outside /dev (default: mount one under /tmp)")
    ap.add_argument("--sizes", default="4KiB,64KiB")
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--secs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--port", type=int, default=26100)
    ap.add_argument("--record", help="directory for perf record files")
    ap.add_argument("--call-graph", choices=["fp", "dwarf"], default="fp",
                    help="stacks of --record: frame pointers (-g) or DWARF")
    ap.add_argument("--base-flags", default="", help="extra iolake-aio flags of the base runs")
    ap.add_argument("--head-flags", default="", help="extra iolake-aio flags of the head runs")
    a = ap.parse_args()
    a.sizes = a.sizes.split(",")
    order = [("base", a.base), ("head", a.head), ("head", a.head), ("base", a.base)]
    if not a.base:
        order = [("head", a.head)]
    results = {}
    try:
        if a.workdir:
            a.workdir = bl.check_workdir(a.workdir)
            runs(a, order, results)
        else:
            with bl.tmpfs_mount() as d:
                a.workdir = d
                runs(a, order, results)
    except bl.BenchError as e:
        print("failed: %s" % e, file=sys.stderr)
        return 1
    print("\nmedians (load %s)" % bl.uptime())
    print("| build | size | runs | GET/s | p99 ms | CPU us/GET | meta thread us/GET | "
          "syscalls/GET | switches/GET |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (tag, size), ws in sorted(results.items()):
        med = {k: statistics.median(w[k] for w in ws) for k in ws[0]}
        print("| %s | %s | %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.2f |" % (
            tag, size, len(ws), med["ops"], med["p99"], med["cpu_us"], med["meta_us"],
            med["sys"], med["cs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
