#!/usr/bin/env python3
"""e2e.py — `make bench`: a short end-to-end benchmark of a fresh
iolake-aio, next to the ceilings issue 7 judges it against, measured in
the same run on the same machine. Prints markdown tables.

    bench/e2e.py [--build build] [--workdir TMPFS] [--disk-dir DIR]
                 [--json FILE] [--quick]

1. Cells (data on TMPFS; without --workdir a tmpfs is mounted for the run,
   which needs root): PUT then GET of 4 KiB and 64 KiB objects at 32 in
   flight and of 4 MiB objects at 8 in flight, by iolake-s3-bench. Each
   size runs twice on the same aio, over S3 and then over the native
   protocol (issue 19: iolake-s3-bench --protocol native on aio's
   --native-listen, HTTP/2 + protobuf, the calls multiplexed on one
   connection per gateway loop), printed side by side. A cell that runs
   second meets a fuller store (its GETs of 64 KiB read 30-40 % slower,
   whichever the protocol), so after the GET ceiling both protocols also
   GET the same objects (S3's), alternating S3, native, native, S3:
   that table is the protocols' comparison.
2. GET ceiling: nginx (Debian's, sendfile on, 2 workers) serving files of
   4 KiB, 64 KiB and 4 MiB from --disk-dir, and iolake-aio serving the
   cells' objects through presigned GET URLs, both driven by the same wrk
   (-t2, 32 connections; 8 for 4 MiB; 4 s, three rounds alternating,
   medians): target, IOLake >= 1/2 of nginx (0.6 at 4 MiB), p99 <= 3x.
3. Flush ceiling: fio's single-writer 4 KiB fdatasync rate on --disk-dir
   (default /var/tmp), 5 s before and after, and PUT 4 KiB at 32 in
   flight with the store's data on that disk: a fresh aio's first 4,000
   PUTs (printed), then 5 s on the same aio after a 2-s warm-up (judged):
   target, PUT >= 2x fio. Then the same two cells with the data on TMPFS,
   where a flush is free: what the CPU allows now. Below 2x fio, no
   group commit reaches the target.
4. Hash ceiling: MD5 over 4 MiB buffers on every core (hashlib, OpenSSL):
   target, PUT 4 MiB MiB/s >= 1/2 of it. Beside it, what the medium
   allows: right after S3's PUT 4 MiB, one writer per core writes 512 MiB
   into new files on TMPFS; a PUT stores 1.5 x its body in new pages, so
   that rate / 1.5 is the most a PUT 4 MiB can do here even if MD5, EC,
   CRC32C and the socket copies cost nothing (on a VM that reports free
   pages to its host, a new page costs a host fault).
5. Memory: iolake-aio's resident set under a 32-way mixed load (4 KiB x 8,
   64 KiB x 16, 4 MiB x 8 in flight, PUTs then GETs, three clients at
   once; 6,000 objects of 64 KiB, enough to fill the OSDs' memtables),
   sampled every 100 ms: target, at most 512 MiB. At its highest sample
   the memory is broken down (smaps_rollup; RocksDB memtables and caches,
   the gateway's buffers and malloc's heap from /metrics) and printed.
   `--skip cells,native,ceiling,md5,flush` runs this step alone;
   `--rss-aio-flag=--FLAG=V` gives its aio a flag.

Figures on a shared machine are contended: the load average is printed
with them. Nothing here asserts; exit 0 unless something failed to run.
"""
import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from benchlib import BenchError, fmt_int  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NGINX_LIB = os.path.join(HERE, "..", "tests", "integration", "nginx_dav.sh")
SIZES = {"4KiB": 4096, "64KiB": 65536, "4MiB": 4 << 20}
# The wrk GET cells against nginx: files per size and connections (issue 19:
# 4 KiB and 64 KiB at 32 in flight, 4 MiB at 8 as fio's 8 jobs did), and the
# fraction of nginx's rate each must reach.
GET_CEILING = {"4KiB": (1000, 32), "64KiB": (1000, 32), "4MiB": (100, 8)}
GET_TARGET = {"4KiB": 0.5, "64KiB": 0.5, "4MiB": 0.6}


def aio_json(aio):
    try:
        with open(os.path.join(aio.dir, "data", "aio.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def native_endpoint(aio):
    """aio's native protocol listener (aio.json's native_endpoint), or None."""
    return aio_json(aio).get("native_endpoint")


def native_conns(aio):
    """The native cells' HTTP/2 connections: one per gateway loop (aio.json's
    gw_loops). A connection is served by one loop, so fewer leave loops
    idle; more only split each loop's calls into smaller batches (more
    writes and wake-ups on both sides for the same calls: 2 connections
    on 2 loops made 76,838 GET 4 KiB/s, 4 made 66,547, 8 made 62,757)."""
    return int(aio_json(aio).get("gw_loops", 4))


def cells(bench, aio, quick, native, out, fresh_dir=None):
    """The six cells, each size over S3 then (native) over the native
    protocol on the same aio; S3's objects stay for the GET ceiling
    (prefix c<size>/), native's are n<size>/. With fresh_dir, the medium's
    new-page write rate is measured there right after S3's PUT 4 MiB."""
    plan = [("4KiB", 1000 if quick else 5000, 32, 4), ("64KiB", 500 if quick else 2000, 32, 4),
            ("4MiB", 24 if quick else 100, 8, 3)]
    nep = native_endpoint(aio) if native else None
    if native and not nep:
        raise BenchError("iolake-aio wrote no native_endpoint in aio.json")
    for size, n, conc, gets in plan:
        j = os.path.join(aio.dir, "cell.json")
        r = benchlib.s3bench(bench, aio.ep, size, n, conc, gets, j, prefix="c%s/" % size,
                             warmup_ops=min(200, n))
        out["cells"][size] = dict(r, objects=n, concurrency=conc, gets=gets,
                                  load=benchlib.uptime())
        if size == "4MiB" and fresh_dir:
            out["fresh_pages"] = fresh_pages(fresh_dir, quick)
        if nep:
            # The bucket is S3's (the native protocol makes none).
            # Calls multiplexed on native_conns() HTTP/2 connections (S3's
            # engine opens one per request in flight).
            r = benchlib.s3bench(bench, nep, size, n, conc, gets, j, prefix="n%s/" % size,
                                 warmup_ops=min(200, n),
                                 extra=("--protocol", "native", "--no-create-bucket",
                                        "--native-conns", str(min(native_conns(aio), conc))))
            out["native"][size] = dict(r, objects=n, concurrency=conc, gets=gets,
                                       load=benchlib.uptime())
        print("  cell %s done (load %s)" % (size, benchlib.uptime()), file=sys.stderr, flush=True)


# GET-only over the same objects, per size: GETs of each object per run.
SAME_GETS = {"4KiB": 6, "64KiB": 4, "4MiB": 3}


def native_same_objects(bench, aio, quick, out):
    """Both protocols GET S3's cell objects (c<size>/), GET-only, in the
    order S3, native, native, S3; the medians go to out["native_same"]."""
    nep = native_endpoint(aio)
    for size in SIZES:
        c = out["cells"].get(size)
        if not c or not nep:
            continue
        n, conc = c["objects"], c["concurrency"]
        runs = {"s3": [], "native": []}
        for who in ("s3", "native", "native", "s3"):
            extra = ("--no-create-bucket", "--skip-put")
            if who == "native":
                extra += ("--protocol", "native", "--native-conns", str(min(native_conns(aio), conc)))
            r = benchlib.s3bench(bench, nep if who == "native" else aio.ep, size, n, conc,
                                 1 if quick else SAME_GETS[size],
                                 os.path.join(aio.dir, "same.json"), prefix="c%s/" % size,
                                 extra=extra)
            runs[who].append(r["get"])
        out["native_same"][size] = {
            who: {k: statistics.median(r[k] for r in rs) for k in ("ops_per_s", "p50_ms", "p99_ms")}
            for who, rs in runs.items()}
        out["native_same"][size]["concurrency"] = conc
    print("  native GET-only comparison done (load %s)" % benchlib.uptime(), file=sys.stderr,
          flush=True)


WRK_LUA = """-- GET the paths listed in $WRK_PATHS, in turn
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do paths[#paths + 1] = line end
local i = 0
request = function()
	i = i + 1
	return wrk.format("GET", paths[(i % #paths) + 1])
end
"""


def wrk(url, paths, secs, work, conns=32):
    pf = os.path.join(work, "paths.txt")
    with open(pf, "w") as f:
        f.write("\n".join(paths) + "\n")
    lua = os.path.join(work, "paths.lua")
    with open(lua, "w") as f:
        f.write(WRK_LUA)
    r = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "--latency", "-s", lua, url],
                       capture_output=True, text=True, env=dict(os.environ, WRK_PATHS=pf))
    t = r.stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", t)
    if r.returncode or not m:
        raise BenchError("wrk against %s failed:\n%s%s" % (url, t, r.stderr))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if bad:
        raise BenchError("wrk against %s: %s non-2xx responses" % (url, bad.group(1)))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", t)
    return {"ops_per_s": float(m.group(1)),
            "p99_ms": float(p99.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[p99.group(2)]}


def presigned_cells(build, workdir, port, sizes, objects, flags=(), tmp="cells."):
    """A fresh aio on port with, per size, `objects` objects PUT by
    iolake-s3-bench under cSIZE/ in bucket "bench": yields (aio, work, size,
    presigned GET paths) per size; the aio and the work dir go at the end."""
    bench = benchlib.build_bin(build, "iolake-s3-bench")
    aio = benchlib.Aio(build, workdir, flags=flags)
    aio.port = port
    aio.ep = "http://127.0.0.1:%d" % port
    work = tempfile.mkdtemp(prefix=tmp, dir=workdir)
    try:
        aio.start()
        for i, size in enumerate(sizes):
            benchlib.s3bench(bench, aio.ep, size, objects, 32, 1, os.path.join(work, "p.json"),
                             prefix="c%s/" % size, extra=[] if i == 0 else ["--no-create-bucket"])
            yield aio, work, size, presigned_paths(aio.ep, "bench", "c%s/" % size, objects)
    finally:
        aio.close()
        shutil.rmtree(work, ignore_errors=True)


def presigned_paths(ep, bucket, prefix, n):
    import boto3
    from botocore.config import Config
    c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=benchlib.AK,
                     aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                     config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
    out = []
    for i in range(n):
        u = c.generate_presigned_url("get_object", Params={"Bucket": bucket,
                                                           "Key": "%s%08d" % (prefix, i)},
                                     ExpiresIn=3600)
        out.append(u[len(ep):])
    return out


def nginx_start(d):
    r = subprocess.run(["sh", "-c", '. "$0"; nginx_dav_start "$1" && echo $NGINX_PORT',
                        NGINX_LIB, d], capture_output=True, text=True)
    if r.returncode:
        raise BenchError("nginx did not start: %s" % r.stderr)
    return int(r.stdout.split()[-1])


def nginx_stop(d):
    subprocess.run(["sh", "-c", '. "$0"; nginx_dav_stop "$1"', NGINX_LIB, d])


def get_ceiling(aio, disk_dir, quick, out):
    secs, rounds = (3, 1) if quick else (4, 3)
    work = tempfile.mkdtemp(prefix="iolake-nginx.", dir=disk_dir)
    try:
        for size, (n, _) in GET_CEILING.items():
            os.makedirs(os.path.join(work, "root", "f", size))
            blob = os.urandom(SIZES[size])
            for i in range(n):
                with open(os.path.join(work, "root", "f", size, "%08d" % i), "wb") as f:
                    f.write(blob)
        port = nginx_start(work)
        try:
            for size, (n, conns) in GET_CEILING.items():
                k = min(n, out["cells"][size]["objects"])
                urls = {"nginx": ("http://127.0.0.1:%d" % port,
                                  ["/f/%s/%08d" % (size, i) for i in range(n)]),
                        "iolake": (aio.ep, presigned_paths(aio.ep, "bench", "c%s/" % size, k))}
                # Alternate (nginx, iolake, iolake, nginx, ...) and keep the
                # medians: a busy neighbour then hits both sides alike.
                runs = {"nginx": [], "iolake": []}
                order = ["nginx", "iolake"]
                for _ in range(rounds):
                    for who in order:
                        runs[who].append(wrk(urls[who][0], urls[who][1], secs, work, conns))
                    order.reverse()
                g = {"load": benchlib.uptime(), "conns": conns}
                for who, rs in runs.items():
                    g[who] = {"ops_per_s": statistics.median(r["ops_per_s"] for r in rs),
                              "p99_ms": statistics.median(r["p99_ms"] for r in rs),
                              "runs": rs}
                g["ratio"] = g["iolake"]["ops_per_s"] / g["nginx"]["ops_per_s"]
                out["get_ceiling"][size] = g
                print("  GET ceiling %s done (load %s)" % (size, g["load"]), file=sys.stderr,
                      flush=True)
        finally:
            nginx_stop(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fio_fdatasync(d, secs):
    r = subprocess.run(["fio", "--name=fdatasync", "--directory=" + d, "--rw=write", "--bs=4k",
                        "--size=16m", "--fdatasync=1", "--ioengine=sync", "--time_based",
                        "--runtime=%d" % secs, "--output-format=json", "--unlink=1"],
                       capture_output=True, text=True)
    if r.returncode:
        raise BenchError("fio failed: %s" % r.stderr)
    return json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["write"]["iops"]


def disk_cell(a, bench, d, n, secs):
    """PUT 4 KiB at 32 on a fresh aio with its data in d: its first n
    PUTs, then `secs` of PUTs after a time warm-up. Returns both results."""
    with benchlib.Aio(a.build, d) as aio:
        # The first PUTs of a fresh process, printed as they are: on a
        # paravirtualised VM its first-touch page faults cost ~14 us
        # each (build/bench-fault; docs/performance.md, "Issue 19: the
        # disk cell, steady").
        fresh = benchlib.s3bench(bench, aio.ep, "4KiB", n, 32, 1,
                                 os.path.join(aio.dir, "c.json"), prefix="d/", warmup_ops=200)
        # The judged cell: as long as fio's run, on the same aio after
        # s3bench's usual time warm-up, so that it pays the memtable
        # flushes, compactions and snapshots a sustained load pays.
        r = benchlib.s3bench(bench, aio.ep, "4KiB", 200000, 32, 0,
                             os.path.join(aio.dir, "s.json"), prefix="s/",
                             duration_s=secs, warmup_s=1 if a.quick else 2)
    return fresh["put"], r["put"]


def flush_ceiling(a, bench, out):
    if not shutil.which("fio"):
        raise BenchError("fio not installed: run scripts/deps.sh")
    d = tempfile.mkdtemp(prefix="iolake-disk.", dir=a.disk_dir)
    try:
        fs = benchlib.fs_type(d)
        secs = 3 if a.quick else 5
        iops = fio_fdatasync(d, secs)
        n = 1000 if a.quick else 4000
        fresh, r = disk_cell(a, bench, d, n, secs)
        iops2 = fio_fdatasync(d, secs)
        # The same two cells with the store on the tmpfs, where a flush
        # costs nothing: the rate the software allows on this machine
        # now. When it is below 2 x fio, the target is out of reach of
        # any group commit; the miss is CPU per PUT.
        _, shm = disk_cell(a, bench, a.workdir, n, secs)
        fio = (iops + iops2) / 2
        out["flush"] = {"dir": a.disk_dir, "fs": fs, "fio_fdatasync_iops": [iops, iops2],
                        "put_4k": r, "put_4k_fresh": fresh, "put_4k_tmpfs": shm, "secs": secs,
                        "load": benchlib.uptime(), "ratio": r["ops_per_s"] / fio,
                        "ratio_fresh": fresh["ops_per_s"] / fio,
                        "ratio_tmpfs": shm["ops_per_s"] / fio}
        print("  flush ceiling done (load %s)" % out["flush"]["load"], file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _md5_worker(secs):
    import hashlib
    buf = os.urandom(4 << 20)
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        hashlib.md5(buf).digest()
        n += 1
    return n * len(buf)


def _fresh_worker(path, mib):
    buf = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        t0 = time.monotonic()
        for _ in range(mib):
            os.write(fd, buf)
        return time.monotonic() - t0
    finally:
        os.close(fd)


def fresh_pages(d, quick):
    """MiB/s that one writer per core gets writing new files on the
    cells' tmpfs (1 MiB writes): the rate at which this medium takes bytes
    into pages it never held. A PUT 4 MiB stores 1.5 x its body (4+2) in
    such pages. On a VM whose balloon reports free pages to the host, a
    new page costs a host fault and this rate swings with what the guest
    freed in the last seconds. The files stay until the caller removes d:
    deleting them here would hand their pages to the cells after it."""
    mib = 128 if quick else 512
    ncpu = os.cpu_count() or 1
    with multiprocessing.Pool(ncpu) as p:
        # Each writer times its own writes (not the pool's start-up); the
        # slowest bounds the total.
        secs = max(p.starmap(_fresh_worker,
                             [(os.path.join(d, "fresh.%d" % i), mib) for i in range(ncpu)]))
    return {"writers": ncpu, "mib": mib * ncpu, "mib_per_s": mib * ncpu / secs,
            "load": benchlib.uptime()}


def md5_ceiling(quick, out):
    secs = 1 if quick else 2
    ncpu = os.cpu_count() or 1
    with multiprocessing.Pool(ncpu) as p:
        total = sum(p.map(_md5_worker, [secs] * ncpu))
    out["md5"] = {"cores": ncpu, "mib_per_s": total / secs / 2**20, "load": benchlib.uptime()}
    c = out["cells"]["4MiB"]["put"]
    out["md5"]["ratio"] = c["mib_per_s"] / out["md5"]["mib_per_s"]
    fp = out.get("fresh_pages")
    if fp:
        # A PUT stores 1.5 MiB per MiB of body in new pages: the most
        # this medium allows with no CPU spent on anything else (MD5, EC,
        # CRC32C and the socket copies share the same cores).
        ceil = fp["mib_per_s"] / 1.5
        out["md5"]["put_ceiling_mib_per_s"] = ceil
        out["md5"]["put_ceiling_ratio"] = ceil / out["md5"]["mib_per_s"]


# What /metrics says about aio's memory, summed over its series (MiB):
# RocksDB's memtables (the OSDs' indexes, meta's state), the caches, and
# glibc malloc's heap. Read at each new RSS peak of the mixed load.
MEM_GAUGES = {
    "osd_memtables": "iolake_osd_kv_memtable_bytes",
    "osd_imm_memtables": "iolake_osd_kv_immutable_memtables",
    "osd_table_readers": "iolake_osd_kv_table_readers_bytes",
    "osd_block_cache": "iolake_osd_block_cache_usage_bytes",
    "meta_memtables": "iolake_meta_rocksdb_memtable_bytes",
    "meta_block_cache": "iolake_meta_rocksdb_block_cache_bytes",
    "gw_buffered": "iolake_gw_data_buffered_bytes",
    "gw_pool_idle": "iolake_gw_data_pool_idle_bytes",
    "malloc_inuse": "iolake_process_malloc_inuse_bytes",
    "malloc_free": "iolake_process_malloc_free_bytes",
    "malloc_heap": "iolake_process_malloc_heap_bytes",
    "malloc_mmap": "iolake_process_malloc_mmap_bytes",
}
SMAPS_FIELDS = ("Rss", "Anonymous", "Shared_Clean", "Private_Clean", "Shared_Dirty",
                "Private_Dirty")


def mem_breakdown(aio):
    """smaps_rollup (MiB) and MEM_GAUGES (MiB, counts as they are) now."""
    b = {}
    with open("/proc/%d/smaps_rollup" % aio.proc.pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in SMAPS_FIELDS:
                b["smaps_" + k.lower()] = int(v.split()[0]) / 1024
    try:
        text = urllib.request.urlopen(aio.ep + "/metrics", timeout=2).read().decode()
    except OSError:
        return b
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        for k, g in MEM_GAUGES.items():
            if name == g:
                v = float(line.rsplit(" ", 1)[1])
                b[k] = b.get(k, 0) + (v if k == "osd_imm_memtables" else v / 2**20)
    return b


def mixed_rss(a, bench, out):
    """Fresh aio, three clients at once (32 in flight), RSS sampled, and
    its memory broken down (mem_breakdown) at the highest sample."""
    # Enough 64 KiB objects (16 KiB shards, kept inline in the OSDs'
    # RocksDB) to fill each OSD's 64 MiB memtable: RSS grows with them.
    mix = [("4KiB", 1000 if a.quick else 4000, 8), ("64KiB", 500 if a.quick else 6000, 16),
           ("4MiB", 24 if a.quick else 200, 8)]
    with benchlib.Aio(a.build, a.workdir, flags=a.aio_flags) as aio:
        peak = [0]
        at_peak = [{}]
        stop = threading.Event()

        def sample():
            # A breakdown costs a /metrics render: taken only when the
            # peak grew by 2 MiB since the last one.
            broken_at = 0
            while not stop.wait(0.1):
                try:
                    rss = aio.rss_kib()[0]
                    peak[0] = max(peak[0], rss)
                    if rss > broken_at + 2048:
                        at_peak[0] = dict(mem_breakdown(aio), rss_mib=rss / 1024,
                                          t_s=time.time() - t0)
                        broken_at = rss
                except OSError:
                    return

        t0 = time.time()
        t = threading.Thread(target=sample)
        t.start()
        procs = []
        for size, n, conc in mix:
            cmd = [bench, "--endpoint", aio.ep, "--access-key", benchlib.AK, "--secret-key",
                   benchlib.SK, "--bucket", "mix" + size.lower(), "--size", size, "--objects",
                   str(n), "--concurrency", str(conc), "--gets", "2", "--warmup-ops", "0"]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        rcs = [p.wait() for p in procs]
        stop.set()
        t.join()
        cur, hwm = aio.rss_kib()
        end = mem_breakdown(aio)
    if any(rcs):
        raise BenchError("mixed load: a client failed (exit codes %s)" % rcs)
    out["rss"] = {"peak_sampled_mib": peak[0] / 1024, "vmhwm_mib": hwm / 1024,
                  "after_mib": cur / 1024, "load": benchlib.uptime(), "secs": time.time() - t0,
                  "at_peak": at_peak[0], "at_end": end}


def print_rss(out):
    r = out.get("rss")
    if not r or not r.get("at_peak"):
        return
    print("\nMixed load's memory (MiB; memtables and caches from /metrics, summed):\n")
    print("| when | RSS | anon | memtables OSD (imm) | meta memtable | block cache OSD / meta "
          "| gw buffers out / idle | malloc in use / free / mmapped |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for when, b in (("peak (%.0f s)" % r["at_peak"].get("t_s", 0), r["at_peak"]),
                    ("end", r["at_end"])):
        print("| %s | %.0f | %.0f | %.0f (%d) | %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f / %.0f |" % (
            when, b.get("smaps_rss", 0), b.get("smaps_anonymous", 0), b.get("osd_memtables", 0),
            b.get("osd_imm_memtables", 0), b.get("meta_memtables", 0),
            b.get("osd_block_cache", 0), b.get("meta_block_cache", 0),
            b.get("gw_buffered", 0), b.get("gw_pool_idle", 0), b.get("malloc_inuse", 0), b.get("malloc_free", 0),
            b.get("malloc_mmap", 0)))


def print_native(out):
    """The native protocol's cells beside S3's of the same run (issue 19)."""
    if not out.get("native"):
        return
    print("\nNative protocol (HTTP/2 + protobuf, iolake-s3-bench --protocol native) beside S3, "
          "same aio, same run (each native cell after S3's of its size, on a fuller store):\n")
    print("| cell | in flight | S3 ops/s | native ops/s | native ÷ S3 | S3 p50 ms | native p50 ms "
          "| S3 p99 ms | native p99 ms | S3 max ms | native max ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in SIZES:
        c, n = out["cells"].get(size), out["native"].get(size)
        if not c or not n:
            continue
        for op in ("get", "put"):
            s, v = c[op], n[op]
            print("| %s %s | %d | %s | %s | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f |" % (
                op.upper(), size, n["concurrency"], fmt_int(s["ops_per_s"]),
                fmt_int(v["ops_per_s"]), v["ops_per_s"] / s["ops_per_s"], s["p50_ms"],
                v["p50_ms"], s["p99_ms"], v["p99_ms"], s["max_ms"], v["max_ms"]))
    if not out.get("native_same"):
        return
    print("\nGET-only over the same objects (S3's cell objects), alternating S3, native, "
          "native, S3; medians of 2:\n")
    print("| GET size | in flight | S3 ops/s | native ops/s | native ÷ S3 | S3 p50 ms "
          "| native p50 ms | S3 p99 ms | native p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, g in out["native_same"].items():
        s, v = g["s3"], g["native"]
        print("| %s | %d | %s | %s | %.2f | %.2f | %.2f | %.1f | %.1f |" % (
            size, g["concurrency"], fmt_int(s["ops_per_s"]), fmt_int(v["ops_per_s"]),
            v["ops_per_s"] / s["ops_per_s"], s["p50_ms"], v["p50_ms"], s["p99_ms"], v["p99_ms"]))


def print_tables(out):
    m = out["machine"]
    print("\n%s, %d vCPUs (%s), %.0f GiB, kernel %s; load average at start %s, at end %s\n" % (
        out["date"], m["cpus"], m["cpu"], m["mem_gib"], m["kernel"], out["load_before"],
        out["load_after"]))
    print("| cell | in flight | ops/s | MiB/s | p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for size in SIZES:
        c = out["cells"].get(size)
        for op in ("put", "get"):
            if c:
                p = c[op]
                print("| %s %s | %d | %s | %.1f | %.1f | %.1f |" % (
                    op.upper(), size, c["concurrency"], fmt_int(p["ops_per_s"]), p["mib_per_s"],
                    p["p50_ms"], p["p99_ms"]))
    print_native(out)
    print_rss(out)
    t = []
    if out["get_ceiling"]:
        print("\nGET under wrk -t2 (the same client for both; medians of %d "
              "alternating runs):\n" % len(next(iter(out["get_ceiling"].values()))["nginx"]["runs"]))
        print("| GET size | in flight | nginx ops/s | nginx p99 ms | IOLake (presigned) ops/s | IOLake p99 ms "
              "| IOLake ÷ nginx |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for size, g in out["get_ceiling"].items():
            print("| %s | %d | %s | %.1f | %s | %.1f | %.2f |" % (
                size, g.get("conns", 32), fmt_int(g["nginx"]["ops_per_s"]), g["nginx"]["p99_ms"],
                fmt_int(g["iolake"]["ops_per_s"]), g["iolake"]["p99_ms"], g["ratio"]))
            want = GET_TARGET.get(size, 0.5)
            t.append(("GET %s ≥ %.1f × nginx, p99 ≤ 3 × nginx's" % (size, want),
                      "%.2f ×, p99 %.1f vs %.1f ms" % (g["ratio"], g["iolake"]["p99_ms"],
                                                       g["nginx"]["p99_ms"]),
                      g["ratio"] >= want and g["iolake"]["p99_ms"] <= 3 * g["nginx"]["p99_ms"]))
    f = out.get("flush")
    if f:
        p, q = f["put_4k"], f["put_4k_fresh"]
        fio = fmt_int(sum(f["fio_fdatasync_iops"]) / 2)
        print("\nPUT 4 KiB at 32 in flight on %s (%s) against fio's single-writer 4 KiB "
              "fdatasync rate there (%s/s, %d s before and after):\n" % (
                  f["dir"], f["fs"], fio, f["secs"]))
        print("| PUT 4 KiB on disk | PUTs | ops/s | p50 ms | p99 ms | max ms | ÷ fio |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        print("| a fresh aio's first %s (after 200) | %d | %s | %.2f | %.2f | %.1f | %.2f |" % (
            fmt_int(q["ops"]), q["ops"], fmt_int(q["ops_per_s"]), q["p50_ms"], q["p99_ms"], q["max_ms"],
            f["ratio_fresh"]))
        print("| then %d s (after a time warm-up) | %d | %s | %.2f | %.2f | %.1f | %.2f |" % (
            f["secs"], p["ops"], fmt_int(p["ops_per_s"]), p["p50_ms"], p["p99_ms"], p["max_ms"],
            f["ratio"]))
        m = f.get("put_4k_tmpfs")
        if m:
            print("| the same %d s with the data on tmpfs (no flush) | %d | %s | %.2f | %.2f | "
                  "%.1f | %.2f |" % (f["secs"], m["ops"], fmt_int(m["ops_per_s"]), m["p50_ms"],
                                     m["p99_ms"], m["max_ms"], f["ratio_tmpfs"]))
        v = "%s/s vs %s/s (%s on %s) = %.2f × (fresh first %s: %.2f ×" % (
            fmt_int(p["ops_per_s"]), fio, f["fs"], f["dir"], f["ratio"], fmt_int(q["ops"]),
            f["ratio_fresh"])
        if m:
            v += "; with no flush at all, on tmpfs: %s/s = %.2f ×" % (fmt_int(m["ops_per_s"]),
                                                                     f["ratio_tmpfs"])
        t.append(("PUT 4 KiB on disk ≥ 2 × fdatasync/s (%d s each)" % f["secs"], v + ")",
                  f["ratio"] >= 2))
    md = out.get("md5")
    if md:
        v = "%.0f vs %.0f MiB/s = %.2f ×" % (out["cells"]["4MiB"]["put"]["mib_per_s"],
                                               md["mib_per_s"], md["ratio"])
        fp = out.get("fresh_pages")
        if fp and "put_ceiling_mib_per_s" in md:
            v += (" (the medium's ceiling: %.0f MiB/s = %.2f × MD5, 1.5 × the body into new "
                  "tmpfs pages at %.0f MiB/s, %d writers)" % (
                      md["put_ceiling_mib_per_s"], md["put_ceiling_ratio"], fp["mib_per_s"],
                      fp["writers"]))
        t.append(("PUT 4 MiB ≥ 0.5 × MD5 on %d cores" % md["cores"], v, md["ratio"] >= 0.5))
    r = out.get("rss")
    if r:
        t.append(("RSS under 32-way mixed load ≤ 512 MiB", "%.0f MiB (VmHWM %.0f)" % (
            r["peak_sampled_mib"], r["vmhwm_mib"]), r["vmhwm_mib"] <= 512))
    if t:
        print("\nIssue 7 targets (figures, not tests):\n")
        print("| target | measured | met |")
        print("|---|---|---|")
        for name, v, ok in t:
            print("| %s | %s | %s |" % (name, v, "yes" if ok else "**no**"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--workdir", help="a tmpfs outside /dev (default: mount one under /tmp)")
    ap.add_argument("--disk-dir", default="/var/tmp", help="a dir on the disk to measure")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--quick", action="store_true", help="fewer objects, shorter wrk runs")
    ap.add_argument("--skip", default="", help="comma list of: cells (and so ceiling), native,ceiling,flush,md5,rss")
    ap.add_argument("--rss-aio-flag", dest="aio_flags", action="append", default=[],
                    metavar="FLAG", help="a flag for the RSS step's aio (repeat; e.g. "
                    "--rss-aio-flag=--osd-cache=64MiB), to measure a knob")
    a = ap.parse_args(argv)
    skip = set(filter(None, a.skip.split(",")))
    out = {"tool": "bench/e2e.py", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "machine": benchlib.machine(), "load_before": benchlib.uptime(), "cells": {},
           "native": {}, "native_same": {}, "get_ceiling": {}}
    try:
        bench = benchlib.build_bin(a.build, "iolake-s3-bench")
        if a.workdir:
            a.workdir = benchlib.check_workdir(a.workdir)
            run(a, bench, skip, out)
        else:
            with benchlib.tmpfs_mount() as d:
                a.workdir = d
                run(a, bench, skip, out)
    except BenchError as e:
        print("e2e.py: %s" % e, file=sys.stderr)
        return 2
    out["load_after"] = benchlib.uptime()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print_tables(out)
    return 0


def run(a, bench, skip, out):
    if "cells" not in skip:   # the GET ceiling reads the cells' objects
        fresh_dir = tempfile.mkdtemp(prefix="fresh.", dir=a.workdir)
        try:
            with benchlib.Aio(a.build, a.workdir) as aio:
                cells(bench, aio, a.quick, "native" not in skip, out, fresh_dir)
                if "ceiling" not in skip:
                    get_ceiling(aio, a.disk_dir, a.quick, out)
                if "native" not in skip:
                    native_same_objects(bench, aio, a.quick, out)
        finally:
            shutil.rmtree(fresh_dir, ignore_errors=True)
    if "md5" not in skip:
        md5_ceiling(a.quick, out)
    if "flush" not in skip:
        flush_ceiling(a, bench, out)
    if "rss" not in skip:
        mixed_rss(a, bench, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
