#!/usr/bin/env python3
"""put_cpu_profile.py — where a large PUT's CPU goes in iolake-aio (issue 19,
must-show 4): a fresh iolake-aio on --workdir (a tmpfs), --warm unmeasured
PUTs, then --objects PUTs of --size at --concurrency in flight
(iolake-s3-bench, no time-based warm-up inside the window). Over the
measured phase: aio's CPU per PUT from /proc (the process, and each thread
kind: gw.N, osd.N, iolake-mdN, store-commit, iou-wrk-N, meta ...) with
context switches per PUT, the machine's busy share; with --perf, a
`perf record -g -F 999` of the aio over the phase, whose samples are put in
buckets by thread and stack (first rule that matches) and scaled to ms per
PUT. Figures only; the load average is printed.

  bench/put_cpu_profile.py --build BUILD [--flags "..."] [--objects 300]
                           [--size 4MiB] [--concurrency 8] [--workdir /dev/shm]
                           [--perf DIR] [--stat] [--rounds 1]

--stat: `perf stat -e context-switches,page-faults,raw_syscalls:sys_enter`
of the aio over the phase, printed per PUT (not with --perf).
"""
import argparse, collections, json, os, re, shlex, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def threads(pid):
    """{thread kind: (cpu s, context switches)} over the live threads."""
    cpu, sw = collections.Counter(), collections.Counter()
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            comm = open("/proc/%d/task/%s/comm" % (pid, t)).read().strip()
            st = open("/proc/%d/task/%s/stat" % (pid, t)).read().rsplit(")", 1)[1].split()
            status = open("/proc/%d/task/%s/status" % (pid, t)).read()
        except OSError:
            continue
        kind = re.sub(r"\d+$", "N", comm)
        cpu[kind] += (int(st[11]) + int(st[12])) / TICK
        sw[kind] += sum(int(x) for x in re.findall(r"ctxt_switches:\s+(\d+)", status))
    return cpu, sw


def proc_cpu(pid):
    st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / TICK


def machine_cpu():
    return [int(x) for x in open("/proc/stat").readline().split()[1:]]


def put(bench, aio, n, size, conc, prefix):
    j = os.path.join(aio.dir, "cell.json")
    cmd = [bench, "--endpoint", aio.ep, "--access-key", benchlib.AK, "--secret-key",
           benchlib.SK, "--bucket", "bench", "--size", size, "--objects", str(n),
           "--concurrency", str(conc), "--gets", "0", "--warmup", "0", "--prefix", prefix,
           "--json", j]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        raise benchlib.BenchError(r.stdout[-2000:])
    return [x for x in json.load(open(j))["phases"] if x["name"] == "put"][0]


# (bucket, test on (thread kind, stack top first)); the first match wins.
def _any(st, names, depth=8):
    return any(x.startswith(names) for x in st[:depth])


RULES = [
    ("MD5 of the body (md5 lanes k8/k16)", lambda t, s: s[0] in ("k8", "k16")),
    ("tmpfs write: copy into the page cache", lambda t, s: s[0] == "copy_folio_from_iter_atomic"),
    ("tmpfs write: page allocation, page cache insert, memcg",
     lambda t, s: _any(s, ("shmem_", "__alloc_frozen", "get_page_from_freelist", "charge_memcg",
                           "memcg", "__folio", "filemap_")) and _any(s, ("shmem_", "generic_perform_write"), 16)),
    ("socket receive copy", lambda t, s: s[0] in ("_copy_to_iter", "rep_movs_alternative")
     and _any(s, ("tcp_recvmsg", "sock_read_iter", "skb_copy_datagram"), 12)),
    ("gateway memcpy (HTTP read buffer -> segment)", lambda t, s: t.startswith("gw") and "memmove" in s[0]),
    ("EC encode (ISA-L)", lambda t, s: s[0].startswith("gf_")),
    ("crc32c (ISA-L)", lambda t, s: s[0].startswith("crc32_iscsi")),
    ("RocksDB (OSD index, meta)", lambda t, s: any("rocksdb" in x for x in s[:16])),
    ("scheduling: switches, wake-ups, futex/epoll/eventfd waits",
     lambda t, s: s[0] in ("finish_task_switch.isra.0", "__schedule", "_raw_spin_unlock_irqrestore",
                           "_raw_spin_unlock_irq", "try_to_wake_up")
     or _any(s, ("futex_", "do_futex", "ep_poll", "do_epoll", "schedule_hrtimeout", "eventfd_",
                 "__x64_sys_futex", "try_to_wake_up"))),
    ("io_uring submission and completion", lambda t, s: _any(s, ("io_uring", "io_wq", "io_issue", "io_submit"), 5)),
]


def buckets(data, ms_per_put):
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    samples, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            if cur:
                samples.append(cur)
            cur = None
        elif not line.startswith("\t"):
            cur = [re.sub(r"\d+$", "N", line.split()[0].rstrip("-")), []]
        elif cur is not None:
            cur[1].append((line.strip().split(None, 1) + ["?"])[1])
    if cur:
        samples.append(cur)
    got, by_thread = collections.Counter(), collections.Counter()
    for t, st in samples:
        st = st or ["?"]
        t = re.sub(r"-N$", "", t)
        by_thread[t] += 1
        for name, f in RULES:
            if f(t, st):
                got[name] += 1
                break
        else:
            got["other, " + t] += 1
    n = max(1, len(samples))
    print("\n%d samples; ms per PUT scale the share by the run's %.2f ms of aio CPU per PUT\n"
          % (len(samples), ms_per_put))
    print("| where | share | ms per PUT |\n|---|---:|---:|")
    for k, v in got.most_common():
        print("| %s | %.1f %% | %.2f |" % (k, 100 * v / n, ms_per_put * v / n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--flags", default="")
    ap.add_argument("--objects", type=int, default=300)
    ap.add_argument("--warm", type=int, default=16)
    ap.add_argument("--size", default="4MiB")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--perf", metavar="DIR", help="perf record -g into DIR/perf.data and bucket it")
    ap.add_argument("--stat", action="store_true",
                    help="perf stat context switches, page faults and syscalls per PUT")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measured phases back to back on the same aio, each printed "
                         "(how the cost grows as objects accumulate)")
    a = ap.parse_args()
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    with benchlib.Aio(a.build, a.workdir, osd_size="4G", flags=shlex.split(a.flags)) as aio:
        put(bench, aio, a.warm, a.size, a.concurrency, "warm/")
        for r in range(a.rounds):
            if a.rounds > 1:
                print("\n## round %d of %d (%d objects stored before it)"
                      % (r + 1, a.rounds, a.warm + r * a.objects))
            phase(a, aio, bench, "m%d/" % r if r else "m/")


def phase(a, aio, bench, prefix):
    pid = aio.proc.pid
    t0, s0 = threads(pid)
    p0, m0 = proc_cpu(pid), machine_cpu()
    rec = None
    if a.perf:
        os.makedirs(a.perf, exist_ok=True)
        rec = subprocess.Popen(["perf", "record", "-g", "-F", "999", "-p", str(pid), "-o",
                                os.path.join(a.perf, "perf.data")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    elif a.stat:
        statf = os.path.join(aio.dir, "perf-stat.csv")
        rec = subprocess.Popen(["perf", "stat", "-x,", "-o", statf, "-e",
                                "context-switches,page-faults,raw_syscalls:sys_enter",
                                "-p", str(pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    load = benchlib.uptime()
    w0 = time.monotonic()
    p = put(bench, aio, a.objects, a.size, a.concurrency, prefix)
    wall = time.monotonic() - w0
    if rec:
        rec.send_signal(signal.SIGINT)
        rec.wait()
    stat = {}
    if a.stat and not a.perf:
        for line in open(statf):
            f = line.strip().split(",")
            if len(f) > 2 and not line.startswith("#") and f[0].replace(".", "").isdigit():
                stat[f[2]] = float(f[0])
    t1, s1 = threads(pid)
    p1, m1 = proc_cpu(pid), machine_cpu()
    n = a.objects
    d = [y - x for x, y in zip(m0, m1)]
    busy = (sum(d) - d[3] - d[4] - d[7]) / max(1, sum(d))
    ms = (p1 - p0) * 1e3 / n
    lat = p["latency_us"]
    print("PUT %s x %d at %d in flight: %.1f MiB/s, p50 %.1f p99 %.1f max %.1f ms; "
          "aio CPU %.2f ms/PUT; %.0f context switches/PUT; machine busy %.0f %% over %.1f s; "
          "load %s -> %s" % (a.size, n, a.concurrency, p["mib_per_s"], lat["p50"] / 1e3,
                             lat["p99"] / 1e3, lat.get("max", 0) / 1e3, ms,
                             (sum(s1.values()) - sum(s0.values())) / n, 100 * busy, wall, load,
                             benchlib.uptime()))
    if stat:
        print("perf stat per PUT: " + ", ".join("%s %.1f" % (k, v / n) for k, v in stat.items()))
    print("\n| thread | ms per PUT | share | switches per PUT |\n|---|---:|---:|---:|")
    tot = sum(t1.values()) - sum(t0.values())
    for k in sorted(t1, key=lambda k: -(t1[k] - t0.get(k, 0))):
        dv = t1[k] - t0.get(k, 0)
        if dv > 0:
            print("| %s | %.2f | %.1f %% | %.1f |" % (k, dv * 1e3 / n, 100 * dv / max(tot, 1e-9),
                                                     (s1[k] - s0.get(k, 0)) / n))
    if a.perf:
        buckets(os.path.join(a.perf, "perf.data"), ms)


if __name__ == "__main__":
    main()
