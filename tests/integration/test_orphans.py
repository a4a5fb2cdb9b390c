#!/usr/bin/env python3
"""test_orphans.py — the OSD orphan sweep (osd/sweep.c, meta CheckShards)
end to end with the real binaries: one iolake-meta, six iolake-osd (256 MiB
each under /dev/shm, each its own host, so every 4+2 PG spans all six,
--orphan-grace 5s --orphan-scan-interval 1s), iolake-gw on loopback, boto3.

  1. A few 1 MiB objects are written and read back; a multipart object of
     two 5 MiB parts is completed and another upload is left open with
     one 5 MiB part (named only by its part record).
  2. 32 threads PUT 1 MiB objects (body a function of the seed and the
     key) as fast as they can; once 40 more are acknowledged, meta is
     paused (SIGSTOP) for a second, so the PUTs in flight store their six
     shards and wait for their commit, and the gateway is SIGKILLed; meta
     resumes (SIGCONT). The PUTs in flight leave shards no record names
     (some of their commits, already sent, may still land: the listing
     tells).
  3. A new gateway. The live objects are the bucket's listing (it holds
     every acknowledged key, plus any whose commit landed but whose answer
     was lost). Each is 1 MiB = one segment = six 256 KiB shards, one per
     OSD (a record is committed only once all six shard writes answered,
     and every OSD is up), so what the live objects need is exactly
     6 x 256 KiB of extents per 1 MiB segment (the 1 MiB objects, the
     multipart object's ten segments, the open part's five) and no inline
     bytes.
  4. Bounded wait: the OSDs' used bytes (iolake-admin osd df: each OSD's
     own Status) come back to exactly that, with no candidate left; the
     OSDs counted deleted orphan shards (orphans did exist) and held more
     than the live objects needed right after the kill. Every live object
     reads back byte for byte (a deleted live shard would also show as
     used bytes below the need). The open upload still lists its part;
     aborting it frees exactly that part's shards.

Prints its seed (IOLAKE_TEST_SEED replays the bodies; the kill point is
timing). Every PID is killed and the temp dir removed on exit.
"""
import os, random, re, signal, sys, threading, time
import urllib.request

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-orphans.")
TMP = P.tmp
start = P.start
MIB = 1 << 20
SHARD = MIB // 4          # 4+2, one 1 MiB segment: 256 KiB a shard (64 blocks)
SEED = int(os.environ.get("IOLAKE_TEST_SEED", str(random.randrange(1 << 32))))


def body(key):
    return random.Random("%d/%s" % (SEED, key)).randbytes(MIB)


def part_body(key, n):
    return random.Random("%d/%s/%d" % (SEED, key, n)).randbytes(5 * MIB)


def main():
    print("seed=%d (replay: IOLAKE_TEST_SEED=%d)" % (SEED, SEED))
    t0 = time.time()
    mport = free_pair()
    meta = "127.0.0.1:%d" % mport
    pmeta = start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                   "--listen", meta, "--peers", "1@" + meta])
    # Port 0 for both listeners, the metrics port read back from the log:
    # a port picked here and bound later by the OSD could be taken in
    # between by another process of the test (it once was, by an OSD's RPC
    # listener started a moment before).
    for i in range(1, 7):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        start("osd%d" % i, ["iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                            "--format", "--size", "256M", "--meta-dir", os.path.join(d, "idx"),
                            "--listen", "127.0.0.1:0", "--meta", meta,
                            "--host", "osd%d" % i, "--metrics-listen", "127.0.0.1:0",
                            "--orphan-grace", "5s", "--orphan-scan-interval", "1s"])

    def metrics_port(i):
        with open(os.path.join(TMP, "osd%d.log" % i), errors="replace") as f:
            m = re.search(r'msg="metrics listening" .*port=(\d+)', f.read())
        return int(m.group(1)) if m else None
    mports = {}
    for i in range(1, 7):
        wait_for("osd%d's metrics port in its log" % i, lambda: metrics_port(i) is not None)
        mports[i] = metrics_port(i)

    def all_up():
        r = admin(meta, "osd", "ls")
        m = r["osds"] if isinstance(r, dict) else r
        return len(m) == 6 and all(o.get("up") for o in m)
    wait_for("six OSDs registered and up", all_up)

    def df():
        return {o["id"]: o for o in admin(meta, "osd", "df")["osds"]}

    def used():
        d = df()
        if len(d) != 6 or any("used_bytes" not in o for o in d.values()):
            raise RuntimeError("not every OSD answered osd df: %r" % d)
        return (sum(o["used_bytes"] for o in d.values()),
                sum(o["inline_bytes"] for o in d.values()))

    def sweep_metric(name):
        total = 0
        for i in range(1, 7):
            text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mports[i],
                                          timeout=2).read().decode()
            m = re.search(r'^%s\{osd="%d"\} (\d+)' % (name, i), text, re.M)
            total += int(m.group(1)) if m else 0
        return total

    key = admin(meta, "user", "add", "root")
    ak, sk = key["access_key"], key["secret_key"]

    def gateway(name):
        port = free_port()
        ep = "http://127.0.0.1:%d" % port
        p = start(name, ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % port, "--meta", meta])
        wait_for(name + " ready",
                 lambda: urllib.request.urlopen(ep + "/health/ready", timeout=1).status == 200)
        return p, ep

    def client(ep):
        return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak,
                            aws_secret_access_key=sk, region_name="us-east-1",
                            config=Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1},
                                          connect_timeout=3, read_timeout=20))

    gwa, epa = gateway("gwA")
    s3 = client(epa)
    s3.create_bucket(Bucket="orph")
    base_used, base_inline = used()
    expect(base_used == 0 and base_inline == 0, "empty OSDs at start")

    # 1. A few objects, read back.
    for n in range(6):
        k = "pre/%d" % n
        s3.put_object(Bucket="orph", Key=k, Body=body(k))
    expect(all(s3.get_object(Bucket="orph", Key="pre/%d" % n)["Body"].read() ==
               body("pre/%d" % n) for n in range(6)), "six objects read back")
    expect(used() == (6 * 6 * SHARD, 0), "six objects hold exactly 6 x 6 shards of 256 KiB")
    # A completed multipart object (two 5 MiB parts) and an upload left
    # open with one 5 MiB part: their shards are named by the object's
    # segments and by the part record; the sweep must keep both.
    mp = s3.create_multipart_upload(Bucket="orph", Key="mp/big")["UploadId"]
    etags = []
    for n in (1, 2):
        r = s3.upload_part(Bucket="orph", Key="mp/big", UploadId=mp, PartNumber=n,
                           Body=part_body("mp/big", n))
        etags.append({"PartNumber": n, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket="orph", Key="mp/big", UploadId=mp,
                                 MultipartUpload={"Parts": etags})
    pend = s3.create_multipart_upload(Bucket="orph", Key="mp/pending")["UploadId"]
    s3.upload_part(Bucket="orph", Key="mp/pending", UploadId=pend, PartNumber=1,
                   Body=part_body("mp/pending", 1))
    part_need = 5 * 6 * SHARD   # a 5 MiB part: five 1 MiB segments
    expect(used() == (6 * 6 * SHARD + 3 * part_need, 0),
           "the multipart object and the open upload's part hold 3 x 5 x 6 shards")

    # 2. 32-way PUTs; SIGKILL the gateway in the middle.
    acked, lock, stop = [], threading.Lock(), threading.Event()

    def writer(t):
        c = client(epa)
        n = 0
        while not stop.is_set():
            k = "load/%02d/%d" % (t, n)
            n += 1
            try:
                c.put_object(Bucket="orph", Key=k, Body=body(k))
            except Exception:
                return
            with lock:
                acked.append(k)
    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(32)]
    for th in threads:
        th.start()
    wait_for("40 PUTs acknowledged under 32-way load", lambda: len(acked) >= 40, timeout=40)
    # Meta paused for a second: the PUTs in flight write their six shards
    # and wait for their commit, so the kill leaves orphans every time
    # (and the sweeps' CheckShards calls wait on meta: nothing deleted).
    pmeta.send_signal(signal.SIGSTOP)
    time.sleep(1)
    gwa.send_signal(signal.SIGKILL)
    gwa.wait()
    pmeta.send_signal(signal.SIGCONT)
    stop.set()
    with lock:
        n_acked = len(acked)
    print("killed the gateway (meta paused) after %d acknowledged load PUTs" % n_acked)
    for th in threads:
        th.join(timeout=30)
    time.sleep(1)   # shard writes the OSDs had started land (well within the grace)
    used_kill, inline_kill = used()

    # 3. A new gateway; the live set.
    gwb, epb = gateway("gwB")
    s3 = client(epb)
    live = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="orph"):
        live += [(o["Key"], o["Size"]) for o in page.get("Contents", [])]
    names = {k for k, _ in live}
    expect(all(sz == MIB for k, sz in live if k != "mp/big"),
           "every live object but the multipart one is 1 MiB")
    expect(dict(live).get("mp/big") == 10 * MIB, "the multipart object is listed")
    with lock:
        expect(all(k in names for k in acked), "every acknowledged PUT is listed")
    need = (len(live) - 1) * 6 * SHARD + 3 * part_need
    print("live objects: %d (%d acknowledged under load); need %d bytes; "
          "used right after the kill: %d (+%d inline)" %
          (len(live), n_acked, need, used_kill, inline_kill))

    # 4. The sweep brings used bytes back to exactly the need.
    def clean():
        u = used()
        return u == (need, 0) and sweep_metric("iolake_osd_orphan_candidates") == 0
    try:
        wait_for("OSD used bytes back to what the live objects need", clean, timeout=40)
    except RuntimeError:
        print("need:", need, "used now:", used(),
              "candidates:", sweep_metric("iolake_osd_orphan_candidates"))
        raise
    expect(True, "used bytes == 6 x 256 KiB per live segment, no inline bytes, no candidate")
    deleted = sweep_metric("iolake_osd_orphan_shards_deleted_total")
    freed = sweep_metric("iolake_osd_orphan_bytes_deleted_total")
    print("orphan shards deleted: %d (%d bytes)" % (deleted, freed))
    expect(deleted > 0, "the OSDs found and deleted orphan shards")
    expect(used_kill + inline_kill > need, "the OSDs held more than the live objects needed "
           "after the kill")
    expect(freed == used_kill + inline_kill - need,
           "the bytes the sweep freed are exactly the excess after the kill")
    for k, _ in live:
        got = s3.get_object(Bucket="orph", Key=k)["Body"].read()
        want = part_body(k, 1) + part_body(k, 2) if k == "mp/big" else body(k)
        if got != want:
            raise AssertionError("live object %s does not read back" % k)
    expect(True, "all %d live objects read back byte for byte" % len(live))
    parts = s3.list_parts(Bucket="orph", Key="mp/pending", UploadId=pend)["Parts"]
    expect(len(parts) == 1 and parts[0]["Size"] == 5 * MIB, "the open upload keeps its part")
    # Still exact a few passes later: nothing live is ever a candidate.
    time.sleep(2)
    expect(used() == (need, 0), "used bytes stay at the need")
    s3.abort_multipart_upload(Bucket="orph", Key="mp/pending", UploadId=pend)
    need -= part_need
    wait_for("the aborted part's shards freed", lambda: used() == (need, 0), timeout=20)
    expect(True, "abort frees exactly the part's shards")
    gwb.send_signal(signal.SIGTERM)
    expect(gwb.wait(timeout=15) == 0, "gateway B stops cleanly")
    print("PASS test_orphans (%.1f s)" % (time.time() - t0))


if __name__ == "__main__":
    P.run(main)
