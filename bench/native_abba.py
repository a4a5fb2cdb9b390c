#!/usr/bin/env python3
"""native_abba.py — the native protocol beside S3 (issue 19): one fresh
iolake-aio on tmpfs, iolake-s3-bench --protocol s3 and --protocol native
on the same cells (PUT then GET of 4 KiB, 64 KiB, 4 MiB objects), run
alternately s3 native native s3 (then native s3 s3 native ...) so a
machine whose load drifts hurts both alike.

Each cell is two bench runs, a PUT phase and a GET-only phase (--skip-put
over the objects just written), so the gateway's CPU can be charged per
request: the aio process's user+system time (/proc/PID/stat) over each
run divided by its requests (aio runs meta, the OSDs and the gateway, so
this is the whole store's CPU per request), and the bench client's own
CPU (getrusage of children). Prints a markdown row per run and the
medians per protocol. Figures, never assertions.

The gateway loops' own CPU per request (threads gw.0 and gw.1, from
/proc/PID/task/*/stat) is printed beside it: which loops a protocol's
calls ran on.

  bench/native_abba.py [--build build] [--workdir /dev/shm] [--rounds 2]
                       [--cells 4KiB,64KiB,4MiB] [--skip-md5] [--native-conns N]
"""
import argparse, json, os, resource, statistics, subprocess, sys

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

CELLS = (("4KiB", 10000, 3, 32), ("64KiB", 3000, 2, 32), ("4MiB", 120, 2, 8))


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid):
    """CPU seconds of each of pid's threads, summed by thread name (gw.0,
    gw.1, meta, ...: /proc/PID/task/*/comm)."""
    out = {}
    tck = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = out.get(name, 0) + (int(parts[11]) + int(parts[12])) / tck
    return out


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_phase(bench, aio, proto, ep, size, n, gets, conc, prefix, skip_put, skip_md5,
              native_conns):
    j = os.path.join(aio.dir, "cell.json")
    extra = ["--no-create-bucket", "--protocol", proto, "--warmup", "0"]
    if proto == "native" and native_conns > 1:
        extra += ["--native-conns", str(native_conns)]
    if skip_put:
        extra += ["--skip-put"]
    if skip_md5 and proto == "native":
        extra += ["--skip-md5"]
    c0, k0, t0 = cpu_s(aio.proc.pid), child_cpu(), thread_cpu(aio.proc.pid)
    cmd = [bench, "--endpoint", ep, "--access-key", benchlib.AK, "--secret-key", benchlib.SK,
           "--bucket", "bench", "--size", size, "--objects", str(n), "--concurrency", str(conc),
           "--gets", str(gets), "--json", j, "--prefix", prefix] + extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    c1, k1, t1 = cpu_s(aio.proc.pid), child_cpu(), thread_cpu(aio.proc.pid)
    if r.returncode:
        raise benchlib.BenchError("%s: %s" % (" ".join(cmd), r.stdout[-2000:]))
    d = json.load(open(j))
    ph = [p for p in d["phases"] if p["name"] == ("get" if skip_put else "put")][0]
    ops = ph["ops"]
    return {"ops_per_s": ph["ops_per_s"], "mib_per_s": ph["mib_per_s"],
            "p50_ms": ph["latency_us"]["p50"] / 1e3, "p99_ms": ph["latency_us"]["p99"] / 1e3,
            "max_ms": ph["latency_us"].get("max", 0) / 1e3, "errors": ph["errors"],
            "srv_us": (c1 - c0) * 1e6 / ops, "cli_us": (k1 - k0) * 1e6 / ops,
            "gw0_us": (t1.get("gw.0", 0) - t0.get("gw.0", 0)) * 1e6 / ops,
            "gw1_us": (t1.get("gw.1", 0) - t0.get("gw.1", 0)) * 1e6 / ops}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip-md5", action="store_true", help="native PUTs with --skip-md5")
    ap.add_argument("--cells", default="4KiB,64KiB,4MiB")
    ap.add_argument("--native-conns", type=int, default=1,
                    help="native: HTTP/2 connections (iolake-s3-bench --native-conns)")
    a = ap.parse_args()
    bench = benchlib.build_bin(a.build, "iolake-s3-bench")
    print("machine: %s; load %s" % (benchlib.machine(), benchlib.uptime()))
    rows = []
    with benchlib.Aio(a.build, a.workdir, osd_size="8G") as aio:
        info = json.load(open(os.path.join(aio.dir, "data", "aio.json")))
        nep = info["native_endpoint"]
        s3 = boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=benchlib.AK,
                          aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="bench")
        order = []
        for r in range(a.rounds):
            order += ["s3", "native", "native", "s3"] if r % 2 == 0 else ["native", "s3", "s3", "native"]
        print("| # | protocol | size | phase | ops/s | MiB/s | p50 ms | p99 ms | max ms | store CPU µs/op | gw.0 µs/op | gw.1 µs/op | client CPU µs/op | load |")
        print("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        cells = [c for c in CELLS if c[0] in a.cells.split(",")]
        for i, proto in enumerate(order):
            ep = nep if proto == "native" else aio.ep
            for size, n, gets, conc in cells:
                prefix = "r%d-%s-%s/" % (i, proto, size)
                for phase, skip in (("put", False), ("get", True)):
                    x = run_phase(bench, aio, proto, ep, size, n, gets if skip else 0, conc,
                                  prefix, skip, a.skip_md5, a.native_conns)
                    rows.append(dict(x, proto=proto, size=size, phase=phase))
                    print("| %d | %s | %s | %s | %.0f | %.1f | %.2f | %.2f | %.1f | %.0f | %.1f | %.1f | %.0f | %s |" % (
                        i, proto, size, phase, x["ops_per_s"], x["mib_per_s"], x["p50_ms"],
                        x["p99_ms"], x["max_ms"], x["srv_us"], x["gw0_us"], x["gw1_us"],
                        x["cli_us"], benchlib.uptime()),
                        flush=True)
    print()
    print("| size | phase | protocol | median ops/s | median MiB/s | median p50 ms | median p99 ms | worst max ms | store CPU µs/op | gw.0 µs/op | gw.1 µs/op | client CPU µs/op |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, _, _, _ in cells:
        for ph in ("get", "put"):
            for proto in ("s3", "native"):
                sel = [r for r in rows if r["proto"] == proto and r["size"] == size and r["phase"] == ph]
                med = lambda k: statistics.median(r[k] for r in sel)  # noqa: E731
                print("| %s | %s | %s | %.0f | %.1f | %.2f | %.2f | %.1f | %.0f | %.1f | %.1f | %.0f |" % (
                    size, ph, proto, med("ops_per_s"), med("mib_per_s"), med("p50_ms"),
                    med("p99_ms"), max(r["max_ms"] for r in sel), med("srv_us"), med("gw0_us"),
                    med("gw1_us"), med("cli_us")))
    print("load at end %s" % benchlib.uptime())


if __name__ == "__main__":
    main()
