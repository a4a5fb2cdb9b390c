#!/usr/bin/env python3
"""test_gw_ready.py — /health/ready speaks for the whole gateway, not for
the loop that happens to answer it, with the real binaries on loopback:
one iolake-meta (--ec 2+1 --expect-osds 3), three iolake-osd, and one
iolake-gw on two loops whose first GetMap is held
(--debug-fault delay-answer,method=GetMap,count=1): one loop learns the
placed map at once, the other a GetMap attempt (3 s) later.

  - while one loop holds the map and the other none
    (iolake_gw_loops_ready 1 of 2), every /health/ready answers 503,
    whichever loop the acceptor hands the probe to;
  - the first 200 comes once both loops hold it: /metrics read after it
    says 2, and every probe after it answers 200;
  - an S3 request on each of many fresh connections (both loops) right
    after the first 200 succeeds.

Before, a loop answered for itself: a probe on the ready loop got 200 and
the client's next connection, handed to the other loop, got 503. Scripts
that asked once more after a 200 (netns-cluster.sh, test_rpc_mtls.sh)
failed on it now and then."""
import os, re, sys, time, urllib.error, urllib.request

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-gwready.")
TMP = P.tmp
start = P.start


def get(url):
    """(status, body) of a GET on a fresh connection."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def loops_ready(ep):
    m = re.search(r"^iolake_gw_loops_ready (\S+)$", get(ep + "/metrics")[1], re.M)
    return int(float(m.group(1))) if m else None


def main():
    mp = free_pair()
    meta = "127.0.0.1:%d" % mp
    start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                   "--listen", meta, "--peers", "1@" + meta, "--ec", "2+1",
                   "--expect-osds", "3"])
    for i in (1, 2, 3):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        start("osd%d" % i, ["iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                            "--size", "256M", "--format", "--meta-dir", os.path.join(d, "idx"),
                            "--listen", "127.0.0.1:%d" % free_port(), "--meta", meta,
                            "--host", "h%d" % i])
    wait_for("the table placed", lambda: admin(meta, "osd", "ls")["expect_osds"] == 0 and
             sum(o["up"] for o in admin(meta, "osd", "ls")["osds"]) == 3)
    key = admin(meta, "user", "add", "root")

    gport = free_port()
    ep = "http://127.0.0.1:%d" % gport
    gw = start("gw", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % gport, "--meta", meta,
                      "--ec", "2+1", "--gw-loops", "2",
                      "--debug-fault", "delay-answer=20000,method=GetMap,count=1"])
    # Probe on fresh connections, reading the ready count after the
    # answers. The acceptor hands connections to the loops in turn (both
    # idle): two probes and one /metrics a round, so each loop answers a
    # probe every round. Startup only moves forward: once 2, it stays 2.
    seen = {}          # loops_ready -> answers seen with it
    first_200 = None
    end = time.time() + 30
    while time.time() < end and first_200 is None:
        if gw.poll() is not None:
            raise AssertionError("the gateway exited: %d" % gw.returncode)
        try:
            codes = [get(ep + "/health/ready")[0] for _ in range(2)]
            n = loops_ready(ep)
        except OSError:
            time.sleep(0.05)
            continue   # not listening yet
        seen.setdefault(n, []).extend(codes)
        if 200 in codes:
            first_200 = n
            break
        time.sleep(0.05)
    print("answers by iolake_gw_loops_ready:",
          {k: "%d x 503, %d x 200" % (v.count(503), v.count(200)) for k, v in seen.items()})
    expect(first_200 is not None, "/health/ready answered 200 within 30 s")
    expect(first_200 == 2, "after the first 200, /metrics says %s of 2 loops ready" % first_200)
    expect(1 in seen, "one loop held the map while the other had none "
           "(iolake_gw_loops_ready 1 seen): the window this test is about happened")
    expect(all(c == 503 for k, v in seen.items() if k != 2 for c in v),
           "every probe answered while a loop had no map was 503")
    after = [get(ep + "/health/ready")[0] for _ in range(20)]
    expect(after == [200] * 20, "the 20 probes after the first 200: %s" % after)
    print("ok: /health/ready 503 while 1 of 2 loops held the map (%d probes), then 200 "
          "on 21 probes in a row" % len(seen[1]))

    # S3 right after readiness, on fresh connections spread over both loops.
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                      aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 1}))
    s3.create_bucket(Bucket="ready")
    for i in range(8):
        c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                         aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                         config=Config(s3={"addressing_style": "path"},
                                       retries={"max_attempts": 1}))
        body = os.urandom(5000 + i)
        c.put_object(Bucket="ready", Key="k%d" % i, Body=body)
        expect(c.get_object(Bucket="ready", Key="k%d" % i)["Body"].read() == body,
               "object %d reads back" % i)
    conns = re.findall(r'^iolake_gw_loop_connections_total\{loop="(\d)"\} (\S+)$',
                       get(ep + "/metrics")[1], re.M)
    expect(len(conns) == 2 and all(float(v) > 0 for _, v in conns),
           "both loops got connections: %s" % conns)
    print("ok: 8 PUT+GET on fresh clients right after readiness; connections per loop %s"
          % {k: int(float(v)) for k, v in conns})
    print("PASS test_gw_ready")


P.run(main)
