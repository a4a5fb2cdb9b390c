#!/usr/bin/env python3
"""test_expect_osds.py — a cluster of iolake-meta places its first PG table
in rank order once the OSDs it was told of are in (`iolake-meta
--expect-osds N`), not in the order they join, and an operator changes
that count while it waits (`iolake-admin osd expect N`). Real binaries on
loopback: three iolake-meta members (Raft between them), iolake-osd,
iolake-gw, boto3.

  - three members started with --expect-osds 4 --ec 2+1, three OSDs in:
    `osd ls` says the PGs are not placed and waits for 4 (--json
    expect_osds 4), every slot of `pg ls --json` is empty, the gateway's
    /health/ready answers 503, its admin API's GET /api/v1/osds has
    expect_osds 4, and the console's OSD page (headless Chromium,
    tests/browser/console_expect.js) shows the notice that the PGs wait
    for 4; through the notice's field and Set (and its confirm) the
    console makes it 5, and the notice says 5 (screenshots kept in
    $IOLAKE_BUILD/console-shots-expect/); the admin API's PUT
    /api/v1/osds/expect {"osds": 4} sets it back (a body of the wrong
    type: 400);
  - the fourth OSD: the table is placed at once (expect_osds 0) with every
    OSD in data slots (256 x 2 / 4 = 128 on average; the same four joining
    one by one without the flag held 200, 196, 0 and 116: the third OSD
    in no PG's data), the gateway gets ready and a boto3 PUT / GET of
    200 KiB (shards on the OSDs) reads back;
  - `osd expect 1` now: exit 1, "placed already"; `osd expect x`: exit 2;
    the admin API's PUT: 409 Conflict;
  - a second cluster (one member, --expect-osds 5, EC 1+1) with two OSDs
    in: `osd expect 3` keeps it waiting (3); the console's "Place now"
    places it at once on the two (both in data slots).
"""
import json, os, shutil, subprocess, sys, urllib.error, urllib.request

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser_py  # noqa: E402
from aio_py import BUILD, free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-expect.")
TMP = P.tmp
start = P.start


def admin_rc(meta, *args):
    r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta] + list(args),
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def start_osd(meta, i):
    d = os.path.join(TMP, "osd%d" % i)
    os.makedirs(d)
    start("osd%d" % i, ["iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                        "--size", "128M", "--format", "--meta-dir", os.path.join(d, "idx"),
                        "--listen", "127.0.0.1:%d" % free_port(), "--meta", meta,
                        "--host", "h%d" % i])


def osds_in(meta):
    return sum(1 for o in admin(meta, "osd", "ls")["osds"] if o["up"] and o["in"])


def data_slots(meta, k):
    """OSD id -> data slots held, and the empty slots, from pg ls --json."""
    slots, empty = {}, 0
    for p in admin(meta, "pg", "ls")["pgs"]:
        for j, o in enumerate(p["osds"]):
            if o < 0:
                empty += 1
            elif j < k:
                slots[o] = slots.get(o, 0) + 1
    return slots, empty


def api(aport, key, method, path, body=None):
    """(HTTP status, JSON document) of an admin API call signed with key."""
    cmd = ["curl", "-s", "-w", "\n%{http_code}", "-X", method, "--aws-sigv4",
           "aws:amz:us-east-1:s3", "--user", "%s:%s" % (key["access_key"], key["secret_key"]),
           "http://127.0.0.1:%d/api/v1/%s" % (aport, path)]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", body]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    text, _, code = out.rpartition("\n")
    return int(code), json.loads(text) if text.strip() else None


def ready(ep):
    try:
        return urllib.request.urlopen(ep + "/health/ready", timeout=2).status == 200
    except urllib.error.HTTPError as e:
        return e.code == 200


def main():
    ports = [free_pair() for _ in range(3)]
    members = ["127.0.0.1:%d" % p for p in ports]
    peers = ",".join("%d@%s" % (i + 1, a) for i, a in enumerate(members))
    meta = ",".join(members)
    for i, a in enumerate(members):
        start("meta%d" % (i + 1), ["iolake-meta", "--id", str(i + 1), "--data-dir",
                                   os.path.join(TMP, "meta%d" % (i + 1)), "--listen", a,
                                   "--peers", peers, "--election-timeout", "500ms",
                                   "--ec", "2+1", "--expect-osds", "4"])
    for i in (1, 2, 3):
        start_osd(meta, i)
    wait_for("three OSDs in", lambda: osds_in(meta) == 3)
    m = admin(meta, "osd", "ls")
    expect(m["expect_osds"] == 4, "osd ls --json: expect_osds 4 with three OSDs in")
    rc, out = admin_rc(meta, "osd", "ls")
    expect(rc == 0 and "PGs not placed yet: waiting for 4 OSDs" in out,
           "osd ls says the PGs wait: %s" % out.strip().splitlines()[-1])
    slots, empty = data_slots(meta, 2)
    expect(not slots and empty == 256 * 3, "pg ls --json: every slot empty (%d)" % empty)

    key = admin(meta, "user", "add", "root")
    admin(meta, "user", "admin", "root", "on")   # for the admin API
    gport = free_port()
    ep = "http://127.0.0.1:%d" % gport
    aport = free_port()
    start("gw", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % gport, "--meta", meta,
                 "--ec", "2+1", "--admin-api-listen", "127.0.0.1:%d" % aport])
    wait_for("the gateway answering", lambda: urllib.request.urlopen(
        ep + "/health/live", timeout=2).status == 200)
    expect(not ready(ep), "gateway not ready while the PGs wait")
    code, doc = api(aport, key, "GET", "osds")
    expect(code == 200 and doc.get("expect_osds") == 4,
           "admin API GET /api/v1/osds: expect_osds %s" % doc.get("expect_osds"))
    browser_py.require()
    shots = os.path.join(os.path.abspath(BUILD), "console-shots-expect")
    shutil.rmtree(shots, ignore_errors=True)
    os.makedirs(shots)
    node = browser_py.npm_ci()
    cfg = {"url": "http://127.0.0.1:%d/console/" % aport, "ak": key["access_key"],
           "sk": key["secret_key"], "shots": shots, "timeout_ms": 30000,
           "action": "set", "count": 5}
    seen = browser_py.run_node(node, "console_expect.js", [json.dumps(cfg)])
    expect(not seen["console"] and seen["rows"] == 3 and
           "waits for 4 OSDs to be in (3 now)" in seen["notice"],
           "console OSD page: %r (%s)" % (seen["notice"][:90], seen["shot"]))
    expect("Wait for 5 OSDs?" in seen["confirm"] and "now wait for 5 OSDs" in seen["done"] and
           "waits for 5 OSDs to be in (3 now)" in seen["after"],
           "console: Set 5, confirmed: %r; the notice then: %r (%s)"
           % (seen["done"], seen["after"][:70], seen["shot_after"]))
    expect(admin(meta, "osd", "ls")["expect_osds"] == 5, "osd ls: expect_osds 5")
    code, doc = api(aport, key, "PUT", "osds/expect", '{"osds": 4}')
    expect(code == 200 and doc == {"expect_osds": 4, "placed": False, "epoch": doc["epoch"]},
           "admin API PUT /api/v1/osds/expect {\"osds\": 4}: %d %s" % (code, doc))
    code, doc = api(aport, key, "PUT", "osds/expect", '{"osds": "4"}')
    expect(code == 400 and doc["error"] == "InvalidRequest",
           "PUT with a string count: %d %s" % (code, doc))

    start_osd(meta, 4)
    wait_for("the table placed", lambda: admin(meta, "osd", "ls")["expect_osds"] == 0)
    slots, empty = data_slots(meta, 2)
    print("data slots per OSD once placed: %s" % dict(sorted(slots.items())))
    expect(empty == 0 and sorted(slots) == [1, 2, 3, 4] and
           all(64 <= n <= 192 for n in slots.values()),
           "every OSD in data slots, 64-192 each of 512")
    wait_for("gateway ready", lambda: ready(ep))
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                      aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    s3.create_bucket(Bucket="placed")
    body = os.urandom(200 << 10)
    s3.put_object(Bucket="placed", Key="a", Body=body)
    expect(s3.get_object(Bucket="placed", Key="a")["Body"].read() == body,
           "boto3 PUT / GET of 200 KiB once placed")

    rc, out = admin_rc(meta, "osd", "expect", "1")
    expect(rc == 1 and "placed already" in out, "osd expect after placing: exit 1: %s"
           % out.strip())
    rc, out = admin_rc(meta, "osd", "expect", "x")
    expect(rc == 2 and "not a count of OSDs" in out, "osd expect x: exit 2: %s" % out.strip())
    code, doc = api(aport, key, "PUT", "osds/expect", '{"osds": 1}')
    expect(code == 409 and "placed already" in doc["message"],
           "admin API PUT after placing: %d %s" % (code, doc))

    # A second cluster waits for five; the operator has two.
    mp = free_pair()
    meta2 = "127.0.0.1:%d" % mp
    start("meta-b", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta-b"),
                     "--listen", meta2, "--peers", "1@" + meta2, "--ec", "1+1",
                     "--expect-osds", "5"])
    for i in (11, 12):
        start_osd(meta2, i)
    wait_for("two OSDs in", lambda: osds_in(meta2) == 2)
    rc, out = admin_rc(meta2, "osd", "expect", "3")
    expect(rc == 0 and "PGs wait for 3 OSDs" in out, "osd expect 3: %s" % out.strip())
    expect(admin(meta2, "osd", "ls")["expect_osds"] == 3, "expect_osds 3")
    key2 = admin(meta2, "user", "add", "root")
    admin(meta2, "user", "admin", "root", "on")
    aport2 = free_port()
    start("gw-b", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % free_port(), "--meta", meta2,
                   "--ec", "1+1", "--admin-api-listen", "127.0.0.1:%d" % aport2])
    wait_for("the second admin API", lambda: api(aport2, key2, "GET", "osds")[0] == 200)
    cfg = {"url": "http://127.0.0.1:%d/console/" % aport2, "ak": key2["access_key"],
           "sk": key2["secret_key"], "shots": shots, "timeout_ms": 30000,
           "name": "osds-place-now", "action": "now"}
    seen = browser_py.run_node(node, "console_expect.js", [json.dumps(cfg)])
    expect(not seen["console"] and "waits for 3 OSDs to be in (2 now)" in seen["notice"] and
           "Place the PGs now?" in seen["confirm"] and "are placed" in seen["done"] and
           seen["after"] is None,
           "console: Place now with the 2 in, confirmed: %r; no notice after (%s)"
           % (seen["done"], seen["shot_after"]))
    expect(admin(meta2, "osd", "ls")["expect_osds"] == 0, "osd ls: placed")
    slots, empty = data_slots(meta2, 1)
    print("second cluster, placed from the console: %s" % dict(sorted(slots.items())))
    expect(empty == 0 and sorted(slots) == [11, 12], "both OSDs in data slots")


if __name__ == "__main__":
    P.run(main)
