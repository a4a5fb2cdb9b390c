#!/usr/bin/env python3
"""get_tail_abba.py — the tail of S3 GET under wrk on presigned URLs
(issue 19 must-show 1: p99 within 3x nginx's), base against head, ABBA.

    bench/get_tail_abba.py --base DIR --head DIR [--workdir TMPFS]
                           [--base-flags "..."] [--head-flags "..."]
                           [--sizes 4KiB] [--objects 1000] [--secs 4]
                           [--runs 2] [--rounds 1] [--port 26120] [--nginx]
                           [--interleaved --pairs 6] [--sched]

DIR are build directories (iolake-aio, iolake-s3-bench; nothing is
built; without --workdir a tmpfs is mounted for the run, which needs
root; a dir under /dev is refused, as by e2e.py); base and head may be the same build with different --*-flags
(extra iolake-aio flags, e.g. --head-flags "--loop-slice-us 0"). Each
round is base, head, head, base; each of those a fresh iolake-aio (six
OSDs, 4+2, in-process RPC) on WORKDIR, which PUTs --objects objects per
size with iolake-s3-bench and then runs `wrk -t2 -c32 -d SECS --latency`
--runs times over presigned GET URLs of them, as bench/e2e.py's GET
ceiling does. With --nginx, nginx (bench/e2e.py's, 2 workers, sendfile)
serving files of the same sizes is run by the same wrk before each aio,
for the ratio. With --interleaved, base's and head's aio are both started
once (ports --port and --port+10, the objects PUT into each) and --pairs
rounds of wrk runs alternate between them (base, head, head, base, ...;
nginx before each pair with --nginx): a busy neighbour then hits both
alike, and no aio start-up lies between the runs compared. Every wrk run
prints ops/s, p50, p90, p99 and max, and the
load average; the end prints medians per build and size.

With --sched, `perf sched record` runs over the middle of each aio's wrk
run, and `perf sched timehist` gives every wake-up of that aio's loop
threads (gw.N, meta, osd.N) and of wrk's threads its scheduling delay
(runnable, not running): printed as count, p50, p99 and max per group,
and the share of the loops' wake-ups that waited more than 0.5 ms.

Exit 0, or 1 when a run failed.
"""
import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402
import e2e  # noqa: E402  (wrk's Lua script, presigned_paths, nginx)

UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def ms(v, unit):
    return float(v) * UNIT_MS[unit]


def sched_delays(data, pid):
    """{group: [delay ms]} of perf sched timehist over data: the loop
    threads of process pid and wrk's threads."""
    r = subprocess.run(["perf", "sched", "timehist", "-i", data], capture_output=True, text=True)
    out = {}
    for ln in r.stdout.splitlines():
        x = ln.split()
        if len(x) < 6 or "[" not in x[2]:
            continue
        m = re.match(r"(.+)\[(\d+)/(\d+)\]$", x[2])
        if not m:
            continue
        name, tgid = m.group(1), int(m.group(3))
        try:
            d = float(x[4])
        except ValueError:
            continue
        if tgid == pid and re.match(r"(gw\.\d+|meta|osd\.\d+)$", name):
            g = "loops"
        elif name == "wrk":
            g = "wrk"
        else:
            continue
        out.setdefault(g, []).append(d)
    return out


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def wrk(url, paths, secs, work, sched_pid=0):
    pf = os.path.join(work, "paths.txt")
    with open(pf, "w") as f:
        f.write("\n".join(paths) + "\n")
    lua = os.path.join(work, "paths.lua")
    with open(lua, "w") as f:
        f.write(e2e.WRK_LUA)
    w = subprocess.Popen(["wrk", "-t2", "-c32", "-d%ds" % secs, "--latency", "-s", lua, url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, WRK_PATHS=pf))
    delays = None
    if sched_pid:
        data = os.path.join(work, "sched.data")
        subprocess.run(["sleep", str(secs / 4)])
        subprocess.run(["perf", "sched", "record", "-o", data, "--", "sleep", str(secs / 2)],
                       capture_output=True)
        delays = sched_delays(data, sched_pid)
        os.unlink(data)
    t, err = w.communicate()
    r = subprocess.CompletedProcess(w.args, w.returncode, t, err)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", t)
    lat = re.search(r"Latency\s+[\d.]+\w+\s+[\d.]+\w+\s+([\d.]+)(us|ms|s)", t)
    pcts = dict((p, ms(v, u)) for p, v, u in re.findall(r"(50|90|99)%\s+([\d.]+)(us|ms|s)", t))
    if r.returncode or not rate or not lat or len(pcts) < 3:
        raise bl.BenchError("wrk against %s failed:\n%s%s" % (url, t, r.stderr))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if bad:
        raise bl.BenchError("wrk against %s: %s non-2xx responses" % (url, bad.group(1)))
    res = {"ops": float(rate.group(1)), "p50": pcts["50"], "p90": pcts["90"],
           "p99": pcts["99"], "max": ms(lat.group(1), lat.group(2))}
    if delays is not None:
        lo = delays.get("loops", [])
        res["sched"] = delays
        res["loops_over_05"] = 100.0 * sum(1 for d in lo if d > 0.5) / max(len(lo), 1)
    return res


def show(tag, size, w):
    print("%-8s %-6s %8.0f GET/s  p50 %6.2f  p90 %6.2f  p99 %7.2f  max %7.1f ms | load %s" % (
        tag, size, w["ops"], w["p50"], w["p90"], w["p99"], w["max"], bl.uptime()), flush=True)
    for g, ds in sorted(w.get("sched", {}).items()):
        print("%8s sched delay of %-5s: %6d wake-ups  p50 %.3f  p99 %.3f  max %.2f ms%s" % (
            "", g, len(ds), pct(ds, 0.5), pct(ds, 0.99), max(ds),
            "  (%.1f%% > 0.5 ms)" % w["loops_over_05"] if g == "loops" else ""), flush=True)


def nginx_runs(a, nginx, results):
    port, files = nginx
    for size in a.sizes:
        for _ in range(a.runs):
            w = wrk("http://127.0.0.1:%d" % port, files[size], a.secs, a.workdir)
            results.setdefault(("nginx", size), []).append(w)
            show("nginx", size, w)


def aio_runs(tag, build, flags, a, results):
    for aio, work, size, paths in e2e.presigned_cells(build, a.workdir, a.port, a.sizes,
                                                      a.objects, flags, "gettail."):
        for _ in range(a.runs):
            w = wrk(aio.ep, paths, a.secs, work, aio.proc.pid if a.sched else 0)
            results.setdefault((tag[:4], size), []).append(w)
            show(tag, size, w)


def interleaved(a, nginx, results):
    aios, paths, works = {}, {}, []
    try:
        for k, (tag, build, flags) in enumerate([("base", a.base, a.base_flags),
                                                  ("head", a.head, a.head_flags)]):
            aio = bl.Aio(build, a.workdir, flags=shlex.split(flags))
            aio.port = a.port + 10 * k   # aio takes 3 more ports after it
            aio.ep = "http://127.0.0.1:%d" % aio.port
            aios[tag] = aio
            aio.start()
            work = tempfile.mkdtemp(prefix="gettail.", dir=a.workdir)
            works.append(work)
            bench = bl.build_bin(build, "iolake-s3-bench")
            for i, size in enumerate(a.sizes):
                bl.s3bench(bench, aio.ep, size, a.objects, 32, 1, os.path.join(work, "p.json"),
                           prefix="c%s/" % size,
                           extra=[] if i == 0 else ["--no-create-bucket"])
                paths[tag, size] = e2e.presigned_paths(aio.ep, "bench", "c%s/" % size,
                                                       a.objects)
        order = ["base", "head"]
        for p in range(a.pairs):
            if nginx:
                nginx_runs(a, nginx, results)
            for tag in order:
                for size in a.sizes:
                    w = wrk(aios[tag].ep, paths[tag, size], a.secs, works[0],
                            aios[tag].proc.pid if a.sched else 0)
                    results.setdefault((tag, size), []).append(w)
                    show("%s%d" % (tag, p + 1), size, w)
            order.reverse()
    finally:
        for aio in aios.values():
            aio.close()
        for w in works:
            shutil.rmtree(w, ignore_errors=True)


def nginx_start(a):
    d = tempfile.mkdtemp(prefix="gettail-nginx.", dir=a.workdir)
    files = {}
    for size in a.sizes:
        os.makedirs(os.path.join(d, "root", "f", size))
        blob = os.urandom(e2e.SIZES[size])
        for i in range(a.objects):
            with open(os.path.join(d, "root", "f", size, "%08d" % i), "wb") as f:
                f.write(blob)
        files[size] = ["/f/%s/%08d" % (size, i) for i in range(a.objects)]
    return d, e2e.nginx_start(d), files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--base-flags", default="")
    ap.add_argument("--head-flags", default="")
    ap.add_argument("--workdir", help="a tmpfs outside /dev (default: mount one under /tmp)")
    ap.add_argument("--sizes", default="4KiB")
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--secs", type=int, default=4)
    ap.add_argument("--runs", type=int, default=2, help="wrk runs per aio and size")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--port", type=int, default=26120)
    ap.add_argument("--nginx", action="store_true")
    ap.add_argument("--interleaved", action="store_true")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--sched", action="store_true", help="perf sched: the loops' wake-up delays")
    a = ap.parse_args()
    a.sizes = a.sizes.split(",")
    print("load before %s" % bl.uptime(), flush=True)
    try:
        if a.workdir:
            a.workdir = bl.check_workdir(a.workdir)
            return run(a)
        with bl.tmpfs_mount() as d:
            a.workdir = d
            return run(a)
    except bl.BenchError as e:
        print("failed: %s" % e, file=sys.stderr)
        return 1


def run(a):
    order = [("base", a.base, a.base_flags), ("head", a.head, a.head_flags),
             ("head", a.head, a.head_flags), ("base", a.base, a.base_flags)]
    results = {}
    nginx = None
    try:
        if a.nginx:
            nd, port, files = nginx_start(a)
            nginx = (nd, (port, files))
        if a.interleaved:
            interleaved(a, nginx[1] if nginx else None, results)
        for r in range(0 if a.interleaved else a.rounds):
            for j, (tag, build, flags) in enumerate(order):
                if nginx:
                    nginx_runs(a, nginx[1], results)
                aio_runs("%s%d" % (tag, r * 2 + j // 2 + 1), build, shlex.split(flags), a,
                         results)
    except bl.BenchError as e:
        print("failed: %s" % e, file=sys.stderr)
        return 1
    finally:
        if nginx:
            e2e.nginx_stop(nginx[0])
            shutil.rmtree(nginx[0], ignore_errors=True)
    print("\nmedians (load %s)" % bl.uptime())
    print("| build | size | runs | GET/s | p50 ms | p90 ms | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (tag, size), ws in sorted(results.items()):
        med = {k: statistics.median(w[k] for w in ws) for k in ("ops", "p50", "p90", "p99", "max")}
        print("| %s | %s | %d | %.0f | %.2f | %.2f | %.2f | %.1f |" % (
            tag, size, len(ws), med["ops"], med["p50"], med["p90"], med["p99"], med["max"]))
    if a.sched:
        print("\nloop threads' wake-ups, all runs pooled: scheduling delay (ms)")
        print("| build | size | wake-ups | p50 | p99 | p99.9 | max | > 0.5 ms |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for (tag, size), ws in sorted(results.items()):
            ds = [d for w in ws for d in w.get("sched", {}).get("loops", [])]
            if ds:
                print("| %s | %s | %d | %.3f | %.3f | %.3f | %.2f | %.1f%% |" % (
                    tag, size, len(ds), pct(ds, 0.5), pct(ds, 0.99), pct(ds, 0.999), max(ds),
                    100.0 * sum(1 for d in ds if d > 0.5) / len(ds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
