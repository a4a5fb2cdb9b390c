#!/usr/bin/env python3
"""smallput_abba.py — PUT tails and cost, builds alternated (issue 19,
must-shows 3 and 6; docs/performance.md, "Small PUTs: the p99 tail and
the rate on disk"). For each run in --order: a fresh iolake-aio of that
build with its data under --workdir, an unmeasured warm-up, then
iolake-s3-bench PUT-only cells (size x objects at a concurrency); per
cell: PUT/s, p50/p99/max, aio's CPU per PUT (utime+stime from /proc over
the cell, per thread name, and meta's loop apart from libuv's pool
threads, which share its name: per tid), meta's Raft entries and ops per entry,
the OSDs' group commits per PUT (from /metrics), the bytes each thread
caused to be written to storage per PUT (/proc/PID/task/*/io), and the
load average;
with --fio, fio's single-writer 4 KiB fdatasync rate on --workdir before
and after (must-show 3 compares PUT 4 KiB on the disk with it).

    bench/smallput_abba.py --build base=DIR --build head=DIR
        [--order base,head,head,base] [--workdir DIR] [--env head:VAR=VALUE]
        [--cells 4KiB:6000:32,64KiB:2000:32] [--aio-flag=--slow-request-ms=20]
        [--nice -19] [--repeat N] [--json FILE]

--env LABEL:VAR=VALUE (repeatable) sets VAR in that label's aio only, so
two labels may share one build and differ by an environment switch (the
variants of bench/patches/meta-cycle-variants.patch).

--workdir must not be under /dev (iolake-aio's OSDs take block files
there): a tmpfs mounted elsewhere, or a dir on the disk (/var/tmp).
Nothing asserts: figures are printed as a markdown table.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from e2e import fio_fdatasync  # noqa: E402

METRICS = {
    "entries": "iolake_meta_batch_ops_count",
    "meta_ops": "iolake_meta_batch_ops_sum",
    "osd_commits": "iolake_osd_kv_commit_batch_size_count",
}


def scrape(ep):
    """Sums of the METRICS series over every label set."""
    text = urllib.request.urlopen(ep + "/metrics", timeout=10).read().decode()
    out = dict.fromkeys(METRICS, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        for k, m in METRICS.items():
            if name == m:
                out[k] += float(line.split()[-1])
    return out


def cpu_ticks(pid):
    """Whole process, per thread name, and per tid of the threads named
    meta (its loop and libuv's pool threads, which take the name of the
    thread that made them): utime+stime in clock ticks."""
    threads, meta = collections.Counter(), {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        name = comm.rstrip("0123456789:_-")
        threads[name] += int(f[11]) + int(f[12])
        if name == "meta":
            meta[tid] = int(f[11]) + int(f[12])
    return sum(threads.values()), threads, meta


def write_bytes(pid):
    """Bytes each thread name caused to be written to storage
    (/proc/PID/task/TID/io write_bytes: O_DIRECT writes and the page-cache
    pages its writes dirtied, charged to the thread that wrote). Exact for
    O_DIRECT; for buffered writes the kernel charges each page-cache folio
    it dirties whole, and ext4 here caches files in large folios: the OSDs'
    commit threads were charged 12.3 GB in 4 s where their pwrite(2)s carried
    ~0.8 GB (perf trace) and the disk took ~2.4 GB (vmstat). Compare the
    device's own count (dev_written) before reading much into these."""
    out = collections.Counter()
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip().rstrip("0123456789:_-")
            with open("/proc/%d/task/%s/io" % (pid, tid)) as f:
                io = dict(line.split(": ") for line in f.read().splitlines() if ": " in line)
        except OSError:
            continue
        out[name] += int(io.get("write_bytes", 0))
    return out


def dev_written(path):
    """Bytes the block device holding path has written since boot
    (/sys/dev/block/MAJ:MIN/stat, sectors of 512 bytes), or None (tmpfs,
    or no such file)."""
    st = os.stat(path)
    try:
        with open("/sys/dev/block/%d:%d/stat" % (os.major(st.st_dev), os.minor(st.st_dev))) as f:
            return int(f.read().split()[6]) * 512
    except (OSError, IndexError, ValueError):
        return None


def puts(bench, aio, size, n, conc, prefix, extra=()):
    """A PUT-only iolake-s3-bench run: its put phase's figures."""
    j = os.path.join(aio.dir, "cell.json")
    cmd = [bench, "--endpoint", aio.ep, "--access-key", benchlib.AK, "--secret-key",
           benchlib.SK, "--bucket", "bench", "--size", size, "--objects", str(n),
           "--concurrency", str(conc), "--gets", "0", "--prefix", prefix, "--json", j]
    r = subprocess.run(cmd + list(extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode:
        raise benchlib.BenchError("iolake-s3-bench %s exited %d:\n%s" % (
            size, r.returncode, r.stdout[-2000:]))
    with open(j) as f:
        p = [x for x in json.load(f)["phases"] if x["name"] == "put"][0]
    lat = p["latency_us"]
    return {"ops": p["ops"], "ops_per_s": p["ops_per_s"], "p50_ms": lat["p50"] / 1e3,
            "p99_ms": lat["p99"] / 1e3, "max_ms": lat.get("max", 0) / 1e3}


def cell(aio, bench, size, n, conc, rep=0):
    m0, (c0, t0, x0) = scrape(aio.ep), cpu_ticks(aio.proc.pid)
    w0, dv0 = write_bytes(aio.proc.pid), dev_written(aio.dir)
    r = puts(bench, aio, size, n, conc, "p%s.c%d.%d/" % (size, conc, rep),
             ("--no-create-bucket", "--warmup", "0"))
    m1, (c1, t1, x1) = scrape(aio.ep), cpu_ticks(aio.proc.pid)
    w1, dv1 = write_bytes(aio.proc.pid), dev_written(aio.dir)
    hz = os.sysconf("SC_CLK_TCK")
    ops = r["ops"]
    entries = m1["entries"] - m0["entries"]
    # meta's loop: its busiest tid over the cell; the pool: the others
    md = sorted((x1[t] - x0.get(t, 0) for t in x1), reverse=True) or [0]
    r.update(
        cpu_us=(c1 - c0) * 1e6 / hz / ops,
        meta_loop_us=md[0] * 1e6 / hz / ops,
        meta_pool_us=sum(md[1:]) * 1e6 / hz / ops,
        gw_us=sum(t1[k] - t0[k] for k in t1 if k.startswith("gw")) * 1e6 / hz / ops,
        threads={k: round((t1[k] - t0[k]) * 1e6 / hz / ops, 1) for k in t1
                 if t1[k] - t0[k] > 0},
        entries_per_put=entries / ops,
        ops_per_entry=(m1["meta_ops"] - m0["meta_ops"]) / entries if entries else 0,
        osd_commits_per_put=(m1["osd_commits"] - m0["osd_commits"]) / ops,
        written={k: round((w1[k] - w0.get(k, 0)) / ops) for k in w1 if w1[k] > w0.get(k, 0)},
        # the whole device's, neighbours included: a quiet machine's figure
        dev_written=round((dv1 - dv0) / ops) if dv0 is not None and dv1 is not None else None,
        load=benchlib.uptime())
    return r


def run(label, build, workdir, cells, flags, repeat=1, env=None):
    bench = benchlib.build_bin(build, "iolake-s3-bench")
    out = {}
    with benchlib.Aio(build, workdir, flags=flags, env=env) as aio:
        puts(bench, aio, "4KiB", 500, 32, "warm/", ("--warmup", "0"))
        sizes = [c[0] for c in cells]
        for rep in range(repeat):
            for size, n, conc in cells:
                # a size given at several concurrencies: SIZE@C
                name = size if sizes.count(size) == 1 else "%s@%d" % (size, conc)
                name = name if repeat == 1 else "%s#%d" % (name, rep + 1)
                out[name] = cell(aio, bench, size, n, conc, rep)
                r = out[name]
                print("  %s %s: %.0f/s p50 %.2f p99 %.2f max %.2f ms, %.1f us CPU/PUT (meta "
                      "loop %.1f, meta pool %.1f, gw %.1f) (load %s)"
                      % (label, name, r["ops_per_s"], r["p50_ms"], r["p99_ms"], r["max_ms"],
                         r["cpu_us"], r["meta_loop_us"], r["meta_pool_us"], r["gw_us"],
                         r["load"]), file=sys.stderr, flush=True)
        if any(f.startswith("--slow-request-ms") for f in flags):
            keep = os.path.join(workdir, "aio-%s-%d.log" % (label, os.getpid()))
            with open(aio.log_path, "rb") as src, open(keep, "ab") as dst:
                dst.write(src.read())
            print("  log kept: %s" % keep, file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, help="LABEL=DIR")
    ap.add_argument("--order", help="labels, comma-separated (default: ABBA of two builds)")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--cells", default="4KiB:6000:32,64KiB:2000:32")
    ap.add_argument("--aio-flag", action="append", default=[])
    ap.add_argument("--env", action="append", default=[], metavar="LABEL:VAR=VALUE",
                    help="an environment variable for that label's aio only")
    ap.add_argument("--fio", action="store_true", help="fio's single-writer 4 KiB fdatasync "
                    "rate on --workdir before and after the runs (must-show 3's ceiling)")
    ap.add_argument("--nice", type=int, help="run aio and the client at this niceness "
                    "(e.g. -19 on a machine shared with builds; needs root)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the cells this many times on each aio (cells named SIZE#N): "
                    "whether the cost per PUT grows with the PUTs already done")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.nice is not None:
        os.setpriority(os.PRIO_PROCESS, 0, a.nice)   # inherited by aio and the client
    builds = dict(b.split("=", 1) for b in a.build)
    envs = collections.defaultdict(dict)
    for e in a.env:
        label, _, kv = e.partition(":")
        var, eq, val = kv.partition("=")
        if label not in builds or not var or not eq:
            ap.error("--env %r: want LABEL:VAR=VALUE with LABEL one of --build's" % e)
        envs[label][var] = val
    labels = list(builds)
    order = a.order.split(",") if a.order else (
        labels + labels[::-1] if len(labels) == 2 else labels)
    cells = [(s, int(n), int(c)) for s, n, c in (x.split(":") for x in a.cells.split(","))]
    flags = [x for f in a.aio_flag for x in f.split("=", 1)]
    fio = [fio_fdatasync(a.workdir, 5)] if a.fio else []
    results = []
    for label in order:
        results.append((label, run(label, builds[label], a.workdir, cells, flags, a.repeat,
                                   envs.get(label))))
    if a.fio:
        fio.append(fio_fdatasync(a.workdir, 5))
        print("fio single-writer 4 KiB fdatasync on %s: %.0f/s before, %.0f/s after"
              % (a.workdir, fio[0], fio[1]))
    print("| run | cell | PUT/s | p50 ms | p99 ms | max ms | p99/p50 | CPU us/PUT | "
          "meta entries/PUT | ops/entry | OSD commits/PUT | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for label, out in results:
        for size, r in out.items():
            print("| %s | %s | %.0f | %.2f | %.2f | %.2f | %.1f | %.1f | %.3f | %.1f | %.2f | %s |"
                  % (label, size, r["ops_per_s"], r["p50_ms"], r["p99_ms"], r["max_ms"],
                     r["p99_ms"] / r["p50_ms"] if r["p50_ms"] else 0, r["cpu_us"],
                     r["entries_per_put"], r["ops_per_entry"], r["osd_commits_per_put"],
                     r["load"]))
    print("\n| run | cell | device bytes written per PUT | bytes charged per PUT, by thread "
          "(buffered: whole folios, see write_bytes) |")
    print("|---|---|---:|---|")
    for label, out in results:
        for size, r in out.items():
            print("| %s | %s | %s | %s |" % (
                label, size, "-" if r["dev_written"] is None else r["dev_written"], ", ".join(
                    "%s %d" % kv for kv in sorted(r["written"].items(), key=lambda kv: -kv[1]))))
    print("\n| run | cell | CPU us/PUT | meta loop | meta pool | gw loops | other |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, out in results:
        for size, r in out.items():
            print("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
                label, size, r["cpu_us"], r["meta_loop_us"], r["meta_pool_us"], r["gw_us"],
                r["cpu_us"] - r["meta_loop_us"] - r["meta_pool_us"] - r["gw_us"]))
    for size in results[0][1]:
        for label in labels:
            v = [o[size] for lb, o in results if lb == label]
            med = lambda k: statistics.median(r[k] for r in v)  # noqa: E731
            print("median %s %s: PUT/s %.0f, p99/p50 %.1f, CPU %.1f us/PUT (meta loop %.1f, "
                  "meta pool %.1f, gw %.1f)" % (
                      label, size, med("ops_per_s"),
                      statistics.median(r["p99_ms"] / r["p50_ms"] for r in v), med("cpu_us"),
                      med("meta_loop_us"), med("meta_pool_us"), med("gw_us")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"fio_fdatasync_iops": fio, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
