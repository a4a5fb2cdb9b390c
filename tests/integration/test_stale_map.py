#!/usr/bin/env python3
"""test_stale_map.py — an OSD refuses a shard placed with a map older than
its own that no longer gives it that slot (PutShardRequest.map_epoch),
with the real binaries on loopback: one iolake-meta (--ec 2+1
--expect-osds 4), four iolake-osd on hosts h1..h4 (each with
--metrics-listen), one iolake-gw whose map lags: its WatchMap answers are
held 15 s (--debug-fault delay-answer), as a gateway cut off from meta
would hold an old map.

  - the placed table is epoch E1; OSD X is taken out (`osd out X`,
    epoch E2): every slot it held moves, and X itself learns E2 at once;
  - tests/tools/osd-shard put to X for a slot it held in E1: placed with
    E1, refused FAILED_PRECONDITION ("misplaced"); with no epoch (0) or
    with E2 (X's map is not newer), stored as before; the slot's new
    holder takes the E1 write (it holds the slot in its own map);
  - through the lagging gateway (one loop), 16 PUTs of 100 KiB, one at a
    time: the first whose PG had X in a slot fails (X refuses the shard;
    2+1 needs all three) and X counts the refusal
    (iolake_osd_errors_total{kind="misplaced"});
  - that refusal makes the gateway fetch the map at once with a GetMap
    (iolake_gw_map_refreshes_total) instead of waiting for its held
    watch: it holds E2 seconds before the 15-s hold ends, and every PUT
    sent once it does is acknowledged;
  - every acknowledged PUT reads back byte for byte, and the refused ones
    succeed when sent again.

Before the check, X stored those shards as strays: nothing read them,
and a PUT whose moved slots outnumbered m was acknowledged with fewer
than k shards where readers look."""
import os, subprocess, sys, time, urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-stale.")
TMP = P.tmp
start = P.start
TOOL = os.path.join(BUILD, "tests", "tools", "osd-shard")
OID = "5e" * 20   # an object id no gateway makes


def tool_put(addr, pg, shard, epoch):
    r = subprocess.run([TOOL, "put", addr, str(pg), OID, str(shard), "4096", str(epoch)],
                       capture_output=True, text=True, timeout=30)
    return r.returncode, (r.stdout + r.stderr).strip()


def metric(port, name, label=None, agg=sum):
    """name's value on /metrics (over its lines with label: their sum, or agg)."""
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    vals = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.split("{")[0].split(" ")[0] == name and (label is None or label in line)]
    return agg(vals) if vals else 0.0


def gw_epoch(port):
    """The oldest map a gateway loop holds."""
    return metric(port, "iolake_gw_map_epoch", agg=min)


def main():
    mp = free_pair()
    meta = "127.0.0.1:%d" % mp
    start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                   "--listen", meta, "--peers", "1@" + meta, "--ec", "2+1",
                   "--expect-osds", "4", "--osd-out-after", "1h"])
    osd_addr, osd_metrics = {}, {}
    for i in (1, 2, 3, 4):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        osd_addr[i] = "127.0.0.1:%d" % free_port()
        osd_metrics[i] = free_port()
        start("osd%d" % i, ["iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                            "--size", "256M", "--format", "--meta-dir", os.path.join(d, "idx"),
                            "--listen", osd_addr[i], "--meta", meta, "--host", "h%d" % i,
                            "--metrics-listen", "127.0.0.1:%d" % osd_metrics[i]])
    wait_for("the table placed", lambda: admin(meta, "osd", "ls")["expect_osds"] == 0 and
             len(admin(meta, "osd", "ls")["osds"]) == 4)

    key = admin(meta, "user", "add", "root")
    gport = free_port()
    ep = "http://127.0.0.1:%d" % gport
    start("gw", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % gport, "--meta", meta,
                 "--ec", "2+1", "--gw-loops", "1",
                 "--debug-fault", "delay-answer=15000,method=WatchMap"])
    wait_for("gateway ready", lambda: urllib.request.urlopen(
        ep + "/health/ready", timeout=2).status == 200)
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                      aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"total_max_attempts": 1}, read_timeout=30))
    s3.create_bucket(Bucket="stale")
    # E1: the map meta and the gateway agree on (epochs move while the
    # OSDs report their capacity; the gateway follows 15 s late).
    wait_for("the gateway at meta's epoch",
             lambda: gw_epoch(gport) == admin(meta, "osd", "ls")["epoch"], timeout=60)
    e1 = admin(meta, "osd", "ls")["epoch"]
    t1 = admin(meta, "pg", "ls")
    expect(gw_epoch(gport) == e1 and t1["epoch"] == e1, "the gateway holds epoch %d" % e1)

    # X: the OSD in the most slots of E1 (any would do).
    held = {}
    for p in t1["pgs"]:
        for o in p["osds"]:
            held[o] = held.get(o, 0) + 1
    x = max(sorted(held), key=lambda o: held[o])
    t_out = time.time()
    r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "osd", "out",
                        str(x)], capture_output=True, text=True, timeout=30)
    expect(r.returncode == 0, "osd out %d: %s" % (x, (r.stdout + r.stderr).strip()))
    e2 = admin(meta, "osd", "ls")["epoch"]
    t2 = {p["pg"]: p["osds"] for p in admin(meta, "pg", "ls")["pgs"]}
    moved = [(p["pg"], s) for p in t1["pgs"] for s, o in enumerate(p["osds"])
             if o == x and t2[p["pg"]][s] != x]
    expect(len(moved) == held[x], "epoch %d -> %d: all %d slots of osd %d moved"
           % (e1, e2, len(moved), x))
    pg, slot = moved[0]
    wait_for("osd %d refuses a put placed with epoch %d" % (x, e1),
             lambda: tool_put(osd_addr[x], pg, slot, e1)[0] == 1, timeout=10)
    rc, out = tool_put(osd_addr[x], pg, slot, e1)
    expect(rc == 1 and "FAILED_PRECONDITION" in out and "misplaced" in out and
           "OSD %d's" % t2[pg][slot] in out,
           "PG %d slot %d placed with epoch %d on osd %d: refused: %s" % (pg, slot, e1, x, out))
    rc, out = tool_put(osd_addr[x], pg, slot, 0)
    expect(rc == 0, "the same put with no epoch: stored (%s)" % out)
    rc, out = tool_put(osd_addr[x], pg, slot, e2)
    expect(rc == 0, "the same put with epoch %d (not older than osd %d's): stored" % (e2, x))
    rc, out = tool_put(osd_addr[t2[pg][slot]], pg, slot, e1)
    expect(rc == 0, "placed with epoch %d on the slot's new holder, osd %d: stored"
           % (e1, t2[pg][slot]))

    # The lagging gateway: PUTs while it still places with E1, until an
    # OSD's refusal makes it fetch E2 (its watch's answer is held 15 s).
    refused0 = metric(osd_metrics[x], "iolake_osd_errors_total", 'kind="misplaced"')
    expect(gw_epoch(gport) == e1, "the gateway still holds epoch %d" % e1)
    bodies, acked, failed, sent_at = {}, [], [], {}
    for i in range(16):
        k = "obj-%02d" % i
        bodies[k] = os.urandom(100 << 10)
        sent_at[k] = gw_epoch(gport)
        try:
            s3.put_object(Bucket="stale", Key=k, Body=bodies[k])
            acked.append(k)
        except ClientError as e:
            failed.append((k, e.response["Error"]["Code"]))
    refused = metric(osd_metrics[x], "iolake_osd_errors_total", 'kind="misplaced"') - refused0
    refreshes = metric(gport, "iolake_gw_map_refreshes_total")
    print("16 PUTs: %d acknowledged, %d failed (%s); osd %d refused %d shards; the gateway "
          "refreshed its map %d times; epoch when each was sent: %s"
          % (len(acked), len(failed), sorted({c for _, c in failed}), x, refused,
             refreshes, [int(sent_at[k]) for k in sorted(sent_at)]))
    expect(failed and refused >= len(failed),
           "a PUT whose PG had osd %d in a slot failed, osd %d counted the refusals" % (x, x))
    expect(refreshes >= 1, "the refusal made the gateway fetch the map at once")
    since_out = time.time() - t_out
    expect(gw_epoch(gport) == e2 and since_out < 12,
           "the gateway holds epoch %d %.1f s after the osd out, before its watch's 15-s "
           "hold ended" % (e2, since_out))
    late = [k for k in sorted(sent_at) if sent_at[k] == e2 and k not in acked]
    expect(not late, "every PUT sent once the gateway held epoch %d was acknowledged (%s)"
           % (e2, late))

    wait_for("the gateway at epoch %d" % e2,
             lambda: gw_epoch(gport) >= e2, timeout=30)
    bad = [k for k in acked if s3.get_object(Bucket="stale", Key=k)["Body"].read() != bodies[k]]
    expect(not bad, "all %d acknowledged PUTs read back byte for byte (%s)" % (len(acked), bad))
    for k, _ in failed:
        s3.put_object(Bucket="stale", Key=k, Body=bodies[k])
    bad = [k for k, _ in failed
           if s3.get_object(Bucket="stale", Key=k)["Body"].read() != bodies[k]]
    expect(not bad, "the %d refused, sent again at epoch %d, read back (%s)"
           % (len(failed), e2, bad))

    # Back in: slots move again (E3), the gateway's watch is still held.
    # An SDK that retries a 503, as they do by default, sees no error:
    # the refusal's refresh comes before its retry.
    sdk = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                       aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                       config=Config(s3={"addressing_style": "path"},
                                     retries={"mode": "standard", "total_max_attempts": 3}))
    all_refused0 = sum(metric(osd_metrics[i], "iolake_osd_errors_total", 'kind="misplaced"')
                       for i in osd_metrics)
    refreshes0 = metric(gport, "iolake_gw_map_refreshes_total")
    r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "osd", "in",
                        str(x)], capture_output=True, text=True, timeout=30)
    expect(r.returncode == 0, "osd in %d: %s" % (x, (r.stdout + r.stderr).strip()))
    e3 = admin(meta, "osd", "ls")["epoch"]
    t3 = {p["pg"]: p["osds"] for p in admin(meta, "pg", "ls")["pgs"]}
    moved3 = sum(1 for p in t2 for s_, o in enumerate(t2[p]) if t3[p][s_] != o)
    expect(e3 > e2 and moved3 > 0 and gw_epoch(gport) == e2,
           "osd in %d: epoch %d -> %d, %d slots moved, the gateway still at %d"
           % (x, e2, e3, moved3, e2))
    # Each OSD learns E3 from its own watch: wait until all do, or a
    # slot's old holder could still take a stale write.
    def osd_has(i, e):
        with open(os.path.join(TMP, "osd%d.log" % i)) as f:
            return ('msg="cluster map" who=osd.%d epoch=%d ' % (i, e)) in f.read()
    wait_for("every OSD at epoch %d" % e3, lambda: all(osd_has(i, e3) for i in osd_metrics),
             timeout=10)
    again = {}
    for i in range(16):
        k = "in-%02d" % i
        again[k] = os.urandom(100 << 10)
        sdk.put_object(Bucket="stale", Key=k, Body=again[k])
    refused3 = sum(metric(osd_metrics[i], "iolake_osd_errors_total", 'kind="misplaced"')
                   for i in osd_metrics) - all_refused0
    refreshes3 = metric(gport, "iolake_gw_map_refreshes_total") - refreshes0
    expect(refused3 >= 1 and refreshes3 >= 1 and gw_epoch(gport) == e3,
           "16 PUTs through an SDK that retries: all acknowledged; %d shards refused as "
           "misplaced, %d map refreshes, the gateway at epoch %d"
           % (refused3, refreshes3, e3))
    bad = [k for k in again if sdk.get_object(Bucket="stale", Key=k)["Body"].read() != again[k]]
    expect(not bad, "all 16 read back byte for byte (%s)" % bad)

if __name__ == "__main__":
    P.run(main)
