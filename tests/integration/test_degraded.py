#!/usr/bin/env python3
"""test_degraded.py — degraded reads end to end with the real binaries
(issue 5, must-show 2): one iolake-meta, six iolake-osd (a 256 MiB file
each under a temp dir in /dev/shm, each registering with meta as its own
host osdN, so every 4+2 PG spans all six), one iolake-gw, on loopback. The
root user comes from `iolake-admin user add`; boto3 drives the gateway.

  - objects of 0 B, 1 B, 4 KiB, 64 KiB, 1 MiB and 10 MiB round-trip (md5);
  - two OSDs SIGKILLed: every object reads back byte for byte (whole, and
    a Range across a segment boundary of the 10 MiB one);
  - a third SIGKILLed: a GET of each erasure-coded object fails with 503
    ServiceUnavailable, never a body (and never wrong bytes); objects kept
    inline in their meta record still read back.

Every PID is killed and the temp dir removed on exit, pass or fail.
"""
import hashlib, os, signal, sys, urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-degraded.")
TMP = P.tmp
start = P.start


def main():
    mport = free_pair()
    meta = "127.0.0.1:%d" % mport
    start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                   "--listen", meta, "--peers", "1@" + meta,
                   "--osd-down-after", "3s", "--osd-out-after", "10m"])
    osds = {}
    for i in range(1, 7):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        osds[i] = start("osd%d" % i, [
            "iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"), "--size", "256M",
            "--format", "--meta-dir", os.path.join(d, "idx"),
            "--listen", "127.0.0.1:%d" % free_port(), "--meta", meta, "--host", "osd%d" % i])

    def all_up():
        r = admin(meta, "osd", "ls")
        lst = r["osds"] if isinstance(r, dict) else r
        return len(lst) == 6 and all(o.get("up") for o in lst)
    wait_for("six OSDs registered and up", all_up)
    print("ok: six OSDs registered with meta")

    key = admin(meta, "user", "add", "root")
    ak, sk = key["access_key"], key["secret_key"]

    gport = free_port()
    ep = "http://127.0.0.1:%d" % gport
    start("gw", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % gport, "--meta", meta])
    wait_for("gateway ready",
             lambda: urllib.request.urlopen(ep + "/health/ready", timeout=1).status == 200)

    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                      region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                    read_timeout=60))
    s3.create_bucket(Bucket="deg")
    sizes = [0, 1, 4096, 65536, 1 << 20, 10 << 20]
    bodies = {}
    for n in sizes:
        b = os.urandom(n)
        bodies["obj-%d" % n] = b
        r = s3.put_object(Bucket="deg", Key="obj-%d" % n, Body=b)
        expect(r["ETag"] == '"%s"' % hashlib.md5(b).hexdigest(), "PUT %d bytes" % n)

    def read_all(label):
        for k, b in bodies.items():
            got = s3.get_object(Bucket="deg", Key=k)["Body"].read()
            expect(hashlib.md5(got).digest() == hashlib.md5(b).digest() and len(got) == len(b),
                   "%s: %s reads back byte for byte" % (label, k))
    read_all("all up")

    for i in (2, 5):
        osds[i].send_signal(signal.SIGKILL)
        osds[i].wait()
    print("killed osd2 and osd5")
    read_all("two OSDs down")
    big = bodies["obj-%d" % (10 << 20)]
    lo, hi = (1 << 20) - 100, (3 << 20) + 100
    got = s3.get_object(Bucket="deg", Key="obj-%d" % (10 << 20),
                        Range="bytes=%d-%d" % (lo, hi))["Body"].read()
    expect(got == big[lo:hi + 1], "two OSDs down: a Range across segments reads back")

    osds[3].send_signal(signal.SIGKILL)
    osds[3].wait()
    print("killed osd3")
    for n in sizes:
        k = "obj-%d" % n
        if n <= 4096:
            got = s3.get_object(Bucket="deg", Key=k)["Body"].read()
            expect(got == bodies[k], "three OSDs down: inline %s still reads back" % k)
            continue
        try:
            got = s3.get_object(Bucket="deg", Key=k)["Body"].read()
        except ClientError as e:
            code = e.response["Error"]["Code"]
            status = e.response["ResponseMetadata"]["HTTPStatusCode"]
            expect(status == 503 and code == "ServiceUnavailable",
                   "three OSDs down: GET %s -> %d %s" % (k, status, code))
            continue
        raise AssertionError("three OSDs down: GET %s answered %d bytes%s" % (
            k, len(got), " (WRONG BYTES)" if got != bodies[k] else ""))
    print("PASS test_degraded")


if __name__ == "__main__":
    P.run(main)
