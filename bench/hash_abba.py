#!/usr/bin/env python3
"""hash_abba.py — what hashing off the loop (issue 19, --hash-threads)
does to PUTs: two builds (or one build with two flag sets) run alternately
base head head base ... on a fresh iolake-aio each time (data on
--workdir, a tmpfs), PUT cells of 4 MiB at 8 in flight, 64 KiB and 4 KiB
at 32 (iolake-s3-bench, no GET phase), and the MD5 ceiling of e2e.py
(hashlib MD5 over 4 MiB buffers on every core) measured before and after
the runs. For each cell: ops/s, MiB/s, p50/p99/max and the aio's CPU
time per PUT (utime + stime of the process over the cell, /proc) and of
the gateway's loop threads together (`gw`, `gw.N`), and
the MD5 lanes busy on average over the cell (the delta of
iolake_md5_mb_lane_bytes over iolake_md5_mb_span_bytes from /metrics; "-"
for a build without the multi-buffer MD5 service). A count of 0 skips a
cell (--small 0 --tiny 0: the 4 MiB cell alone). Prints
markdown tables: every run, then medians per side. Figures, never
assertions; the load average is printed with each row.

  bench/hash_abba.py --base BUILD --head BUILD [--base-flags "..."]
                     [--head-flags "..."] [--workdir /dev/shm] [--rounds 2]
                     [--large 100] [--small 2000] [--tiny 3000]
"""
import argparse, json, multiprocessing, os, shlex, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid, tid=None):
    path = "/proc/%d/stat" % pid if tid is None else "/proc/%d/task/%d/stat" % (pid, tid)
    with open(path) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / TICK   # utime, stime


def loop_tids(pid):
    """The gateway's loop threads (named gw by an older aio, gw.0 .. gw.N-1
    since --gw-loops)."""
    out = []
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
            name = f.read().strip()
        if name == "gw" or name.startswith("gw."):
            out.append(int(t))
    return out


def loops_cpu_s(pid, tids):
    total = 0.0
    for t in tids:
        try:
            total += cpu_s(pid, t)
        except OSError:
            pass
    return total


def md5_lanes(aio):
    """(lane_bytes, span_bytes) of the MD5 service, or None (no such metrics)."""
    import urllib.request
    try:
        body = urllib.request.urlopen(aio.ep + "/metrics", timeout=10).read().decode()
    except OSError:
        return None
    v = {}
    for line in body.splitlines():
        for k in ("iolake_md5_mb_lane_bytes", "iolake_md5_mb_span_bytes"):
            if line.startswith(k + " "):
                v[k] = float(line.split()[1])
    if len(v) != 2:
        return None
    return v["iolake_md5_mb_lane_bytes"], v["iolake_md5_mb_span_bytes"]


def put_cell(bench, aio, size, n, conc, tag):
    j = os.path.join(aio.dir, "cell.json")
    cmd = [bench, "--endpoint", aio.ep, "--access-key", benchlib.AK, "--secret-key",
           benchlib.SK, "--bucket", "bench", "--size", size, "--objects", str(n),
           "--concurrency", str(conc), "--gets", "0", "--warmup-ops", str(min(50, n)),
           "--prefix", "%s-%s/" % (tag, size), "--json", j]
    tids = loop_tids(aio.proc.pid)
    m0 = md5_lanes(aio)
    c0, l0 = cpu_s(aio.proc.pid), loops_cpu_s(aio.proc.pid, tids)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    c1, l1 = cpu_s(aio.proc.pid), loops_cpu_s(aio.proc.pid, tids)
    m1 = md5_lanes(aio)
    lanes = None
    if m0 and m1 and m1[1] > m0[1]:
        lanes = (m1[0] - m0[0]) / (m1[1] - m0[1])
    if r.returncode:
        raise benchlib.BenchError("iolake-s3-bench %s: %s" % (size, r.stdout[-2000:]))
    with open(j) as f:
        d = json.load(f)
    p = [x for x in d["phases"] if x["name"] == "put"][0]
    if p["errors"]:
        raise benchlib.BenchError("%s: %d errors" % (size, p["errors"]))
    lat = p["latency_us"]
    # Warm-up PUTs are outside the phase but inside the CPU window.
    ops_total = p["ops"] + min(50, n)
    return {"ops_per_s": p["ops_per_s"], "mib_per_s": p["mib_per_s"], "p50": lat["p50"] / 1e3,
            "p99": lat["p99"] / 1e3, "max": lat.get("max", 0) / 1e3,
            "cpu_ms": (c1 - c0) * 1e3 / ops_total, "loop_ms": (l1 - l0) * 1e3 / ops_total,
            "lanes": lanes}


def fmt_lanes(v):
    return "-" if v is None else "%.2f" % v


def _md5_worker(secs):
    import hashlib
    buf = os.urandom(4 << 20)
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        hashlib.md5(buf).digest()
        n += 1
    return n * len(buf)


def md5_ceiling(secs=2):
    ncpu = os.cpu_count() or 1
    with multiprocessing.Pool(ncpu) as p:
        total = sum(p.map(_md5_worker, [secs] * ncpu))
    return total / secs / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--base-flags", default="")
    ap.add_argument("--head-flags", default="")
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--large", type=int, default=100, help="4 MiB PUTs per cell")
    ap.add_argument("--small", type=int, default=2000, help="64 KiB PUTs per cell")
    ap.add_argument("--tiny", type=int, default=3000, help="4 KiB PUTs per cell")
    a = ap.parse_args()
    bench = benchlib.build_bin(a.head, "iolake-s3-bench")
    sides = {"base": (a.base, shlex.split(a.base_flags)), "head": (a.head, shlex.split(a.head_flags))}
    print("machine: %s; load %s" % (benchlib.machine(), benchlib.uptime()))
    md5 = [md5_ceiling()]
    print("MD5 ceiling before: %.0f MiB/s on %d cores (load %s)" % (md5[0], os.cpu_count(),
                                                                    benchlib.uptime()))
    order = []
    for r in range(a.rounds):
        order += ["base", "head", "head", "base"] if r % 2 == 0 else ["head", "base", "base", "head"]
    cells = [c for c in [("4MiB", a.large, 8), ("64KiB", a.small, 32), ("4KiB", a.tiny, 32)]
             if c[1] > 0]
    rows = []
    print("| run | side | cell | in flight | ops/s | MiB/s | p50 ms | p99 ms | max ms | "
          "aio CPU ms/PUT | loop CPU ms/PUT | MD5 lanes busy | load |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for i, side in enumerate(order):
        build, flags = sides[side]
        with benchlib.Aio(build, a.workdir, osd_size="4G", flags=flags) as aio:
            for size, n, conc in cells:
                x = put_cell(bench, aio, size, n, conc, "r%d" % i)
                rows.append((side, size, x))
                print("| %d | %s | PUT %s | %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %s | %s |" % (
                    i, side, size, conc, x["ops_per_s"], x["mib_per_s"], x["p50"], x["p99"],
                    x["max"], x["cpu_ms"], x["loop_ms"], fmt_lanes(x["lanes"]),
                    benchlib.uptime()), flush=True)
    md5.append(md5_ceiling())
    print("\nMD5 ceiling after: %.0f MiB/s (load %s)" % (md5[1], benchlib.uptime()))
    ceil = statistics.mean(md5)
    print("\n| cell | side | median MiB/s | median ops/s | median p50 ms | median p99 ms | "
          "worst max ms | median CPU ms/PUT | median loop CPU ms/PUT | median MD5 lanes busy | "
          "÷ MD5 ceiling (%.0f MiB/s) |" % ceil)
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, _, _ in cells:
        for side in ("base", "head"):
            xs = [x for s, c, x in rows if s == side and c == size]
            med = lambda k: statistics.median(x[k] for x in xs)  # noqa: E731
            ls = [x["lanes"] for x in xs if x["lanes"] is not None]
            print("| PUT %s | %s | %.1f | %.0f | %.1f | %.1f | %.1f | %.2f | %.2f | %s | %.2f |" % (
                size, side, med("mib_per_s"), med("ops_per_s"), med("p50"), med("p99"),
                max(x["max"] for x in xs), med("cpu_ms"), med("loop_ms"),
                fmt_lanes(statistics.median(ls) if ls else None), med("mib_per_s") / ceil))


if __name__ == "__main__":
    main()
