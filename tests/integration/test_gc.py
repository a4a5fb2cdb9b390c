#!/usr/bin/env python3
"""test_gc.py — the shard GC worker (gateway/gw_gc.c) end to end with the
real binaries: one iolake-meta (single voter), six iolake-osd (a 256 MiB
file each under a temp dir in /dev/shm, each its own host, so every 4+2 PG
spans all six), gateways on loopback, boto3 as the client.

  1. Gateway A runs with --gc-interval 0 (no worker) and serves S3
     throughout. Objects larger than the inline size (one multipart) are
     written; osd3 is SIGKILLed; three are overwritten and three deleted
     (S3 answers OK: k+1 write quorum; the old shards on osd3 cannot be
     deleted now). meta's queue holds six entries.
  2. Gateway B (--gc-interval 300ms) starts while osd3 is still down: its
     rounds fail every entry (each names an osd3 shard), the queue stays
     at six and B logs the failure once per round. B stops (SIGTERM, clean).
  3. Control: osd3 restarted, only A (no worker) running: after 2 s the
     queue still holds six entries. Without a worker nothing sweeps it.
  4. B again: polled (bounded) until meta's queue is 0; B's metrics count
     six entries freed. Every live object reads back byte for byte.
  5. Every object deleted: the queue drains to 0 and every OSD's used and
     inline bytes (iolake-admin osd df: the OSD's own Status) are back to
     what they were before the first object: no shard leaked, including
     the old ones osd3 held while it was down.

Every PID is killed and the temp dir removed on exit, pass or fail.
"""
import os, re, signal, sys, time
import urllib.request

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-gc.")
TMP = P.tmp
start = P.start
MIB = 1 << 20


def main():
    mport = free_pair()
    meta = "127.0.0.1:%d" % mport
    start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                   "--listen", meta, "--peers", "1@" + meta,
                   "--osd-down-after", "6s", "--osd-out-after", "10m"])
    osd_args = {}
    osds = {}
    for i in range(1, 7):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        osd_args[i] = ["iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                       "--size", "256M", "--meta-dir", os.path.join(d, "idx"),
                       "--listen", "127.0.0.1:%d" % free_port(), "--meta", meta,
                       "--host", "osd%d" % i]
        osds[i] = start("osd%d" % i, osd_args[i][:5] + ["--format"] + osd_args[i][5:])

    def osd_map():
        r = admin(meta, "osd", "ls")
        return {o["id"]: o for o in (r["osds"] if isinstance(r, dict) else r)}

    def all_up():
        m = osd_map()
        return len(m) == 6 and all(o.get("up") for o in m.values())
    wait_for("six OSDs registered and up", all_up)

    def gc_queue():
        st = admin(meta, "cluster", "status")
        return st["members"][0]["gc_queue"]

    def df():
        return {o["id"]: o for o in admin(meta, "osd", "df")["osds"]}

    key = admin(meta, "user", "add", "root")
    ak, sk = key["access_key"], key["secret_key"]

    def gateway(name, interval):
        port = free_port()
        ep = "http://127.0.0.1:%d" % port
        p = start(name, ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % port, "--meta", meta,
                         "--gc-interval", interval])
        wait_for(name + " ready",
                 lambda: urllib.request.urlopen(ep + "/health/ready", timeout=1).status == 200)
        return p, ep

    def gc_metrics(ep):
        text = urllib.request.urlopen(ep + "/metrics", timeout=2).read().decode()
        got = {}
        for res in ("freed", "failed", "skipped"):
            m = re.search(r'^iolake_gw_gc_entries_total\{result="%s"\} (\d+)' % res, text, re.M)
            got[res] = int(m.group(1)) if m else 0
        return got

    gwa, epa = gateway("gwA", "0")
    s3 = boto3.client("s3", endpoint_url=epa, aws_access_key_id=ak, aws_secret_access_key=sk,
                      region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                    read_timeout=60))
    s3.create_bucket(Bucket="gcb")
    base = df()
    expect(gc_queue() == 0, "empty GC queue at start")

    # Phase 1: objects with shards; osd3 killed; overwrites and deletes.
    sizes = {"o0": 256 << 10, "o1": MIB + 7, "o2": 3 * MIB, "o3": 100 << 10,
             "o4": 2 * MIB, "o5": 64 << 10}
    bodies = {}
    for k, n in sizes.items():
        bodies[k] = os.urandom(n)
        s3.put_object(Bucket="gcb", Key=k, Body=bodies[k])
    mp = os.urandom(6 * MIB)
    s3.upload_fileobj(__import__("io").BytesIO(mp), "gcb", "mp",
                      Config=TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB))
    expect(s3.head_object(Bucket="gcb", Key="mp")["ETag"].endswith('-2"'),
           "multipart object of two parts")
    bodies["mp"] = mp
    expect(gc_queue() == 0, "no queue entries before anything is replaced")

    osds[3].send_signal(signal.SIGKILL)
    osds[3].wait()
    print("killed osd3")
    for k in ("o0", "o1", "o2"):
        bodies[k] = os.urandom(len(bodies[k]) + 4096)
        s3.put_object(Bucket="gcb", Key=k, Body=bodies[k])
    for k in ("o3", "o4", "mp"):
        s3.delete_object(Bucket="gcb", Key=k)
        del bodies[k]
    expect(gc_queue() == 6, "three overwrites and three deletes queued six entries")

    # Phase 2: a worker while osd3 is down frees nothing and acks nothing.
    gwb, epb = gateway("gwB", "300ms")
    wait_for("gateway B's rounds to fail on osd3",
             lambda: gc_metrics(epb)["failed"] >= 6)
    expect(gc_queue() == 6, "osd3 down: every entry stays queued")
    gwb.send_signal(signal.SIGTERM)
    expect(gwb.wait(timeout=15) == 0, "gateway B stops cleanly (worker closed)")
    with open(os.path.join(TMP, "gwB.log"), errors="replace") as fh:
        expect("gc: entries not freed" in fh.read(), "gateway B logged the failed round")

    # Phase 3 (control): osd3 back, no worker: the queue stays.
    osds[3] = start("osd3", osd_args[3])
    wait_for("osd3 up again", lambda: osd_map()[3]["up"] and "used_bytes" in df()[3])
    time.sleep(2)
    expect(gc_queue() == 6, "control: osd3 back, no worker: the queue stays at six")

    # Phase 4: the worker drains it.
    gwb, epb = gateway("gwB2", "300ms")
    wait_for("meta's GC queue to drain", lambda: gc_queue() == 0, timeout=40)
    expect(gc_queue() == 0, "the worker drained the queue")
    expect(gc_metrics(epb)["freed"] >= 6, "gateway B counted the entries it freed")
    for k, b in bodies.items():
        got = s3.get_object(Bucket="gcb", Key=k)["Body"].read()
        expect(got == b, "live object %s reads back byte for byte" % k)

    # Phase 5: nothing leaked.
    for k in list(bodies):
        s3.delete_object(Bucket="gcb", Key=k)
    wait_for("meta's GC queue to drain after deleting everything", lambda: gc_queue() == 0,
             timeout=40)

    def back_to_base():
        now = df()
        return all(now[i]["used_bytes"] == base[i]["used_bytes"] and
                   now[i]["inline_bytes"] == base[i]["inline_bytes"] for i in range(1, 7))
    try:
        wait_for("OSD space back to the empty bucket's", back_to_base, timeout=10)
    except RuntimeError:
        print("base:", base)
        print("now: ", df())
        raise
    expect(True, "every OSD's used and inline bytes are back to where they started")
    gwb.send_signal(signal.SIGTERM)
    expect(gwb.wait(timeout=15) == 0, "gateway B stops cleanly")
    print("PASS test_gc")


if __name__ == "__main__":
    P.run(main)
