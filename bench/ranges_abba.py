#!/usr/bin/env python3
"""ranges_abba.py — object records in the root group vs in range groups
(issue 13): a fresh iolake-aio with `--range-groups 0` (A) and with
`--range-groups N` (B), alternated A B B A ... so that a machine whose load
drifts hurts both alike; iolake-s3-bench PUT then GET of 4 KiB and 64 KiB
objects at 32 in flight on each. Prints a markdown table (ops/s, p50, p99,
max) per run and the median per side. Figures, never assertions.

  bench/ranges_abba.py [--build build] [--workdir TMPFS] [--groups 4]
                       [--rounds 2] [--objects 4000]
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def cell(bench, aio, size, n):
    j = os.path.join(aio.dir, "cell.json")
    benchlib.s3bench(bench, aio.ep, size, n, 32, 2, j, prefix="r%s/" % size,
                     warmup_ops=min(200, n))
    with open(j) as f:
        d = json.load(f)
    out = {}
    for p in d["phases"]:
        if p["name"] in ("put", "get"):
            lat = p["latency_us"]
            out[p["name"]] = (p["ops_per_s"], lat["p50"] / 1e3, lat["p99"] / 1e3,
                              lat.get("max", 0) / 1e3)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir")
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--objects", type=int, default=4000)
    a = ap.parse_args()
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")

    def run(workdir):
        rows = []
        order = []
        for r in range(a.rounds):
            order += [0, a.groups] if r % 2 == 0 else [a.groups, 0]
        for g in order:
            with benchlib.Aio(a.build, workdir, flags=["--range-groups", str(g)]) as aio:
                import time
                time.sleep(2.0)   # the root leader makes the range groups
                for size, n in (("4KiB", a.objects), ("64KiB", a.objects // 2)):
                    res = cell(bench, aio, size, n)
                    for ph in ("put", "get"):
                        rows.append((g, size, ph) + res[ph] + (benchlib.uptime(),))
                        print("| %d | %s | %s | %.0f | %.2f | %.2f | %.1f | %s |" % rows[-1],
                              flush=True)
        print()
        print("| --range-groups | size | phase | median ops/s | median p99 ms | worst max ms |")
        print("|---:|---|---|---:|---:|---:|")
        for size in ("4KiB", "64KiB"):
            for ph in ("put", "get"):
                for g in (0, a.groups):
                    sel = [r for r in rows if r[0] == g and r[1] == size and r[2] == ph]
                    print("| %d | %s | %s | %.0f | %.2f | %.1f |" % (
                        g, size, ph, statistics.median(r[3] for r in sel),
                        statistics.median(r[5] for r in sel), max(r[6] for r in sel)))

    print("machine: %s; load %s" % (benchlib.machine(), benchlib.uptime()))
    print("| --range-groups | size | phase | ops/s | p50 ms | p99 ms | max ms | load |")
    print("|---:|---|---|---:|---:|---:|---:|---|")
    if a.workdir:
        run(benchlib.check_workdir(a.workdir))
    else:
        with benchlib.tmpfs_mount() as d:
            run(d)


if __name__ == "__main__":
    main()
