#!/usr/bin/env python3
"""test_rpc_fault_aio.py — the RPC fault layer (common/rpc_fault.h) in a
whole iolake-aio: its gateway, OSDs and meta call each other through the
wrapped channels.

  --debug-fault 'partition,peer=local:osd-2;fail=DATA_LOSS,peer=local:osd-5,method=GetShard'

OSD 2 is cut off (every call to it fails at once, UNAVAILABLE) and every
shard read from OSD 5 fails (as a bad shard would). With 4+2 on six OSDs:
  - every PUT is acknowledged (k+1 = 5 shards land: OSD 2's does not);
  - every object reads back byte for byte, decoded from the four OSDs
    left for the objects whose shards sit on both (whole GETs and a Range);
  - the gateway counted the failed reads: some GET's slow-request line has
    osd_failed > 0;
  - aio logs that faults are injected, and a bad spec is refused at start
    (exit 2, naming the flag).

Then a second aio where shard writes to two OSDs fail (k+1 = 5 of 6
cannot land) and the cleanup of what landed is slow (DeleteShard held
4 s), so the body ends while the failed PUT still cleans up: the PUT and
an UploadPart of several segments are answered 503 ServiceUnavailable,
which clients retry (they were answered 400 IncompleteBody, as if the
client had sent too few bytes, before 2026-12-05), and store nothing.
"""
import hashlib, os, re, subprocess, sys

import botocore.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, Aio  # noqa: E402

FAULT = "partition,peer=local:osd-2;fail=DATA_LOSS,peer=local:osd-5,method=GetShard"
NO_QUORUM = ("partition,peer=local:osd-2,method=PutShard;partition,peer=local:osd-3,method=PutShard;"
             "delay=4000,method=DeleteShard")
N_OBJECTS = 12
SIZE = 2 * 1024 * 1024 + 12345   # three segments of 1 MiB, the last partial
LINE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  ", what)


def main():
    r = subprocess.run([os.path.join(BUILD, "iolake-aio"), "--data-dir", "/dev/shm/unused",
                        "--debug-fault", "partition,drop"], capture_output=True, text=True)
    check(r.returncode == 2 and "--debug-fault" in r.stderr,
          "a bad spec is refused at start (exit %d: %s)" % (r.returncode, r.stderr.strip()))

    aio = Aio(args=["--slow-request-ms", "0", "--debug-fault", FAULT])
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="fault")
        bodies = {}
        for i in range(N_OBJECTS):
            body = os.urandom(SIZE)
            s3.put_object(Bucket="fault", Key="k%d" % i, Body=body)
            bodies["k%d" % i] = hashlib.md5(body).hexdigest()
        check(True, "%d PUTs of %d bytes acknowledged with OSD 2 partitioned" % (N_OBJECTS, SIZE))
        for key, md5 in bodies.items():
            got = s3.get_object(Bucket="fault", Key=key)["Body"].read()
            check(hashlib.md5(got).hexdigest() == md5, "GET %s: the bytes put" % key)
        rng = s3.get_object(Bucket="fault", Key="k0", Range="bytes=1048000-1049999")["Body"].read()
        check(len(rng) == 2000, "a Range across a segment boundary reads 2000 bytes")
        aio.log.flush()
        with open(aio.log.name, errors="replace") as f:
            lines = f.read().splitlines()
        check(any("RPC fault injection on" in ln for ln in lines), "aio logged that faults are injected")
        gets = [dict((k, v.strip('"')) for k, v in LINE.findall(ln)) for ln in lines
                if 'msg="slow request"' in ln and "op=GetObject" in ln]
        failed = [g for g in gets if int(g.get("osd_failed", "0")) > 0]
        check(failed, "%d of %d GETs decoded around failed shard reads (osd_failed > 0)" %
              (len(failed), len(gets)))
    finally:
        aio.close()
    no_quorum()
    print("PASS test_rpc_fault_aio")


def refused(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
    return 200, "acknowledged"


def no_quorum():
    aio = Aio(args=["--debug-fault", NO_QUORUM])
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="noquorum")
        body = os.urandom(3 * 1024 * 1024)   # three segments
        got = refused(lambda: s3.put_object(Bucket="noquorum", Key="k", Body=body))
        check(got == (503, "ServiceUnavailable"),
              "PUT of 3 MiB, two OSDs refusing shards: %d %s" % got)
        up = s3.create_multipart_upload(Bucket="noquorum", Key="m")["UploadId"]
        got = refused(lambda: s3.upload_part(Bucket="noquorum", Key="m", UploadId=up,
                                             PartNumber=1, Body=body))
        check(got == (503, "ServiceUnavailable"), "UploadPart of 3 MiB, same: %d %s" % got)
        check(refused(lambda: s3.head_object(Bucket="noquorum", Key="k"))[0] == 404,
              "the failed PUT stored nothing")
        parts = s3.list_parts(Bucket="noquorum", Key="m", UploadId=up).get("Parts", [])
        check(parts == [], "the failed UploadPart stored no part")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
