#!/usr/bin/env python3
"""test_deep_scrub.py — deep scrub end to end (issue 12, "scrub repair"):
iolake-aio (six OSDs, 4+2, --rpc loopback so each OSD has a TCP port,
--pg-count 32) and boto3.

  1. With --deep-scrub-interval 0 (off): ~24 objects of 5 KB .. 2.5 MB are
     PUT and kept. tests/tools/osd-shard rewrites one data shard (>= 16 KiB)
     on one OSD through PutShard with other bytes and their own crc32c: the
     crc scrubber and every OSD-side crc check pass it. GETs still read
     back right: the gateway checks each shard's crc32c against the one
     its object's layout recorded at PUT, decodes around the shard and
     flags its PG (iolake_gw_pg_flags_total{reason="read_bad_shard"});
     but the primary's rescan finds nothing missing, and the shard stays
     wrong (checked 3 s later): only a deep scrub can find it without
     the layout.
  2. Restarted on the same dir with --deep-scrub-interval 2s: the shard's
     PG's primary reads all six shards of each stripe, finds the one that
     disagrees and rewrites it. Waited for (bounded) in /metrics:
     iolake_osd_deep_scrub_repaired_total = 1; the shard's crc32c is its
     original one again; every object reads back byte for byte; after
     more passes the counters show repaired 1, inconsistent 0, and every
     PG deep-scrubbed at least once.

Prints its seed (IOLAKE_SEED replays). Bounded waits; the temp dir is
removed and iolake-aio killed on exit.
"""
import json, os, random, re, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, Aio  # noqa: E402
from procs_py import admin, expect, wait_for  # noqa: E402

SEED = int(os.environ.get("IOLAKE_SEED") or random.randrange(1 << 30))
TOOL = os.path.join(BUILD, "tests", "tools", "osd-shard")
PGS = 32


def metric_sum(ep, name, label=""):
    """Sum of the series of a counter in the gateway's /metrics (aio: one
    registry for every service) whose labels contain label."""
    text = urllib.request.urlopen(ep + "/metrics", timeout=5).read().decode()
    return sum(float(m.group(2)) for m in
               re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M)
               if label in (m.group(1) or ""))


def osd_addrs(meta):
    r = admin(meta, "osd", "ls")
    osds = r["osds"] if isinstance(r, dict) else r
    return {o["id"]: o["addr"] for o in osds if o.get("up")}


def tool(*args):
    r = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=30)
    return r.returncode, r.stdout, r.stderr


def read_all(s3, bodies):
    bad = 0
    for key, body in bodies.items():
        got = s3.get_object(Bucket="deep", Key=key)["Body"].read()
        bad += got != body
    return bad


def main():
    print("seed", SEED)
    rnd = random.Random(SEED)
    common = ["--rpc", "loopback", "--pg-count", str(PGS), "--pg-report-interval", "1s"]
    aio = Aio(args=common + ["--deep-scrub-interval", "0"])
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="deep")
        bodies = {}
        for i in range(24):
            size = rnd.choice([5000, 70000, 300000, 1 << 20, 2_500_000])
            bodies["obj-%02d" % i] = rnd.randbytes(size)
            s3.put_object(Bucket="deep", Key="obj-%02d" % i, Body=bodies["obj-%02d" % i])
        expect(read_all(s3, bodies) == 0, "24 objects PUT and read back")
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        addrs = osd_addrs(meta)
        expect(len(addrs) == 6, "six OSDs up: %s" % sorted(addrs))

        victim = hit = None
        for osd_id, addr in sorted(addrs.items()):
            rc, out, err = tool("corrupt", addr, PGS, 16384, 4)
            if rc == 0:
                victim, hit = osd_id, json.loads(out)
                break
            expect(rc == 3, "osd-shard corrupt on osd %d: rc %d %s" % (osd_id, rc, err))
        expect(hit is not None, "a data shard of >= 16 KiB to corrupt")
        print("corrupted consistently: osd %d pg %d shard %d (%d bytes), crc %08x -> %08x" %
              (victim, hit["pg"], hit["shard"], hit["len"], hit["crc_before"], hit["crc_after"]))
        expect(read_all(s3, bodies) == 0, "every object reads back right: the gateway's "
               "layout crc rejects the shard and decodes around it")
        wait_for("the gateway flagged the PG (read_bad_shard)",
                 lambda: metric_sum(aio.ep, "iolake_gw_pg_flags_total",
                                    'reason="read_bad_shard"') >= 1, timeout=10)
        time.sleep(3)
        rc, out, err = tool("crc", addrs[victim], hit["pg"], hit["oid"], hit["shard"])
        expect(rc == 0 and json.loads(out)["crc"] == hit["crc_after"],
               "3 s later the shard is still the corrupted one: a rescan does not see it")
        expect(metric_sum(aio.ep, "iolake_osd_deep_scrub_pgs_total") == 0,
               "no deep scrub with --deep-scrub-interval 0")
        rc, t = aio.stop()
        expect(rc == 0, "iolake-aio stopped cleanly (%.1f s)" % t)

        aio.args = common + ["--deep-scrub-interval", "2s"]
        t0 = time.time()
        aio.start()
        s3 = aio.client()
        wait_for("deep scrub repaired the shard (iolake_osd_deep_scrub_repaired_total >= 1)",
                 lambda: metric_sum(aio.ep, "iolake_osd_deep_scrub_repaired_total") >= 1,
                 timeout=40)
        took = time.time() - t0
        addr = osd_addrs(meta)[victim]
        rc, out, err = tool("crc", addr, hit["pg"], hit["oid"], hit["shard"])
        expect(rc == 0, "read the shard back: %s" % err)
        now = json.loads(out)
        expect(now["crc"] == hit["crc_before"] and now["len"] == hit["len"],
               "the shard holds its original bytes again (crc %08x)" % now["crc"])
        expect(read_all(s3, bodies) == 0, "every object reads back byte for byte")
        pgs0 = metric_sum(aio.ep, "iolake_osd_deep_scrub_pgs_total")
        wait_for("every PG deep-scrubbed again",
                 lambda: metric_sum(aio.ep, "iolake_osd_deep_scrub_pgs_total") >= pgs0 + PGS,
                 timeout=30)
        m = {k: metric_sum(aio.ep, "iolake_osd_deep_scrub_%s_total" % k)
             for k in ("repaired", "inconsistent", "stripes", "bytes", "pgs")}
        expect(m["repaired"] == 1 and m["inconsistent"] == 0,
               "later passes find nothing: repaired %d, inconsistent %d" %
               (m["repaired"], m["inconsistent"]))
        print("ok: repaired in %.1f s after the restart; %d PG scrubs, %d stripes, %.1f MB read"
              % (took, m["pgs"], m["stripes"], m["bytes"] / 1e6))
        st = admin(meta, "osd", "scrub-status")
        deep = {o["id"]: o["deep"] for o in st["osds"]}
        expect(all(d["on"] and d["interval_ms"] == 2000 for d in deep.values()),
               "iolake-admin osd scrub-status: deep scrub on, every 2 s, on every OSD")
        expect(sum(d["repaired"] for d in deep.values()) == 1 and
               sum(d["inconsistent"] for d in deep.values()) == 0 and
               sum(d["pgs"] for d in deep.values()) >= PGS,
               "iolake-admin osd scrub-status shows the repair: %s" %
               {i: (d["pgs"], d["repaired"]) for i, d in sorted(deep.items())})
        rc, t = aio.stop()
        expect(rc == 0, "iolake-aio stopped cleanly (%.1f s)" % t)
        print("PASS test_deep_scrub")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
