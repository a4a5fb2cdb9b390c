#!/usr/bin/env python3
"""meta_cycle.py — where the time of meta's cycle goes under PUT 4 KiB on a
disk (issue 19, must-show 3). A fresh iolake-aio on --workdir, PUT 4 KiB at
--concurrency for --secs after 2 s of warm-up (iolake-s3-bench). Over
--trace-secs in the middle, perf records uprobes on the aio's libraft and
meta FSM and the block layer's issue events:

  raft_uv's log write     UvWriterSubmit -> uvAliveSegmentWriteCb
  segment preparation     uvPrepareWorkCb (a new 64 MiB open segment)
  apply                   fsm_apply .. its return
  answers                 on_applied .. its return (every call of the entry)

and prints
  - the cycle, one per log write: the write (submit to callback: device
    write, flush, the completion's wake-up of the loop), callback to apply,
    apply, answers, answers to the next write; p50, p90 and share of time;
  - the log writes: p50/p90/p99/max, and the time spent in those over 5 ms;
  - with --timeline, per 100 ms: writes, their p50 and max, a segment
    preparation (PREP), and the MiB issued to the disk by source (meta's
    threads: the log and segment preparation; rocksdb: RocksDB's flushes
    and compactions; kworker: the kernel's writeback; discard).

Figures only. Root, perf and tracefs needed; the uprobes are removed at
the end (only this tool's, group "iolcyc").

  bench/meta_cycle.py [--build build] [--workdir /var/tmp] [--secs 10]
                      [--trace-secs 4] [--concurrency 32] [--runs 1]
                      [--timeline] [--flags "..."] [--keep FILE]
"""
import argparse, collections, os, re, shlex, shutil, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

TRACEFS = "/sys/kernel/tracing"
GROUP = "iolcyc"
ENTRY = ("UvWriterSubmit", "uvAliveSegmentWriteCb", "uvPrepareWorkCb", "fsm_apply", "on_applied")
RETURN = ("fsm_apply", "on_applied")


def file_offsets(exe, names):
    """{symbol: offset in the file} for uprobes (vaddr mapped through the
    LOAD segment that holds it)."""
    segs = []
    for line in subprocess.run(["readelf", "-lW", exe], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[2], 16), int(f[1], 16), int(f[4], 16)))  # vaddr, off, filesz
    out = {}
    for line in subprocess.run(["nm", exe], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] in names and f[1] in "tT":
            v = int(f[0], 16)
            for vaddr, off, size in segs:
                if vaddr <= v < vaddr + size:
                    out[f[2]] = v - vaddr + off
    missing = set(names) - set(out)
    if missing:
        raise benchlib.BenchError("%s has no symbol %s" % (exe, ", ".join(sorted(missing))))
    return out


def probes_add(exe):
    offs = file_offsets(exe, set(ENTRY) | set(RETURN))
    lines = ["p:%s/%s %s:0x%x" % (GROUP, n, exe, offs[n]) for n in ENTRY]
    lines += ["r:%s/%s_ret %s:0x%x" % (GROUP, n, exe, offs[n]) for n in RETURN]
    for l in lines:
        tracefs_append(l)


def probes_remove():
    for n in list(ENTRY) + ["%s_ret" % n for n in RETURN]:
        try:
            tracefs_append("-:%s/%s" % (GROUP, n))
        except OSError:
            pass   # not there


def tracefs_append(line):
    """One definition into uprobe_events (os.write: Python's append mode
    seeks, which tracefs refuses)."""
    fd = os.open(os.path.join(TRACEFS, "uprobe_events"), os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


EV = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s*(.*)$")


def read_events(path):
    r = subprocess.run(["perf", "script", "-i", path], capture_output=True, text=True)
    ev = []
    for line in r.stdout.splitlines():
        m = EV.match(line)
        if m:
            ev.append((float(m.group(3)), m.group(4).split(":", 1)[-1] if m.group(4).startswith(GROUP)
                       else m.group(4), m.group(1), m.group(5)))
    ev.sort()
    return ev


def pct(v, p):
    return v[min(len(v) - 1, int(len(v) * p))] if v else 0.0


def cycles(ev):
    """One record per log write: [submit, callback, apply, apply_ret, answered, next submit]."""
    out, cur = [], None
    for t, name, _, _ in ev:
        if name == "UvWriterSubmit":
            if cur and None not in cur:
                out.append(cur + [t])
            cur = [t, None, None, None, None]
        elif cur is None:
            continue
        elif name == "uvAliveSegmentWriteCb" and cur[1] is None:
            cur[1] = t
        elif name == "fsm_apply" and cur[1] is not None and cur[2] is None:
            cur[2] = t
        elif name == "fsm_apply_ret" and cur[2] is not None:
            cur[3] = t
        elif name == "on_applied_ret" and cur[3] is not None:
            cur[4] = t
    return out


def report(ev, timeline):
    cyc = cycles(ev)
    if not cyc:
        print("  no complete cycle traced (is this iolake-aio's meta writing?)")
        return
    parts = ["log write (submit to callback)", "callback to apply", "apply", "answers",
             "answers to the next write"]
    spans = [[(c[i + 1] - c[i]) * 1e6 for c in cyc] for i in range(5)]
    total = sum(sum(s) for s in spans)
    print("  %d cycles, %.0f us each on average" % (len(cyc), total / len(cyc)))
    for name, s in zip(parts, spans):
        v = sorted(s)
        print("    %-32s p50 %6.0f  p90 %6.0f us  %5.1f %% of the time" % (
            name, pct(v, .5), pct(v, .9), 100 * sum(v) / total))
    w = sorted(spans[0])
    print("  log writes: p50 %.2f, p90 %.2f, p99 %.2f, max %.1f ms; %.2f s of %.2f s in writes over 5 ms" % (
        pct(w, .5) / 1e3, pct(w, .9) / 1e3, pct(w, .99) / 1e3, w[-1] / 1e3,
        sum(x for x in w if x > 5000) / 1e6, cyc[-1][5] - cyc[0][0]))
    if not timeline:
        return
    t0 = cyc[0][0]
    lat = collections.defaultdict(list)
    for c in cyc:
        lat[int((c[0] - t0) * 10)].append((c[1] - c[0]) * 1e3)
    prep = set()
    io = collections.defaultdict(collections.Counter)
    for t, name, comm, rest in ev:
        b = int((t - t0) * 10)
        if name == "uvPrepareWorkCb":
            prep.add(b)
        elif name == "block:block_rq_issue":
            f = rest.split()
            if len(f) < 3 or f[1].startswith("F") or not f[2].isdigit():
                continue
            src = "discard" if f[1].startswith("D") else comm.split("/")[0].split(":")[0][:8]
            io[b][src] += int(f[2])
    print("  per 100 ms: writes, their p50 / max ms, PREP, MiB issued by source")
    for b in range(0, max(lat) + 1):
        v = sorted(lat.get(b, []))
        print("    %4.1f s %4d  %6.2f / %6.1f  %-4s  %s" % (
            b / 10, len(v), pct(v, .5), v[-1] if v else 0, "PREP" if b in prep else "",
            " ".join("%s %.0f" % (k, n / 2**20) for k, n in io[b].most_common() if n >= 1 << 19)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/var/tmp")
    ap.add_argument("--secs", type=float, default=10)
    ap.add_argument("--trace-secs", type=float, default=4)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeline", action="store_true")
    ap.add_argument("--flags", default="")
    ap.add_argument("--keep", metavar="FILE", help="keep the (last run's) perf.data there, for perf script")
    a = ap.parse_args()
    if a.trace_secs + 3 > a.secs:
        ap.error("--secs must leave 3 s around --trace-secs")
    if not shutil.which("perf"):
        ap.error("perf not found: apt-get install linux-perf (the uprobes are read with perf record)")
    if os.geteuid() != 0:
        ap.error("run as root: uprobes are added through tracefs")
    exe = os.path.realpath(benchlib.build_bin(a.build, "iolake-aio"))
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    probes_remove()
    probes_add(exe)
    try:
        for run in range(a.runs):
            d = tempfile.mkdtemp(prefix="meta-cycle.", dir=a.workdir)
            data = os.path.join(d, "perf.data")
            try:
                with benchlib.Aio(a.build, d, flags=shlex.split(a.flags)) as aio:
                    res = {}

                    def load():
                        try:
                            res["r"] = benchlib.s3bench(bench, aio.ep, "4KiB", 10**6, a.concurrency, 0,
                                                        os.path.join(aio.dir, "s.json"), prefix="c/",
                                                        duration_s=a.secs, warmup_s=2)
                        except benchlib.BenchError as e:
                            res["err"] = e
                    th = threading.Thread(target=load)
                    th.start()
                    time.sleep(2 + (a.secs - a.trace_secs) / 2)
                    subprocess.run(["perf", "record", "-a", "-e", GROUP + ":*", "-e",
                                    "block:block_rq_issue", "-o", data, "--", "sleep",
                                    str(a.trace_secs)], capture_output=True, check=True)
                    th.join()
                    if "err" in res:
                        raise res["err"]
                    p = res["r"]["put"]
                    print("run %d (%s, load %s): PUT 4 KiB at %d: %s/s, p50 %.2f, p99 %.2f, max %.1f ms" % (
                        run + 1, benchlib.fs_type(d), benchlib.uptime(), a.concurrency,
                        benchlib.fmt_int(p["ops_per_s"]), p["p50_ms"], p["p99_ms"], p["max_ms"]))
                    report(read_events(data), a.timeline)
                    if a.keep:
                        shutil.copy(data, a.keep)
            finally:
                subprocess.run(["rm", "-rf", d])
    finally:
        probes_remove()


if __name__ == "__main__":
    try:
        main()
    except benchlib.BenchError as e:
        sys.exit("meta_cycle: %s" % e)
