#!/usr/bin/env python3
"""test_segment_size.py — iolake-aio's --segment-size (branch seg2m): the
erasure-coded segment size of the objects the gateway writes, and objects
written at one size read at another (each layout records its own).

  1. aio with --segment-size 2MiB: a PUT of 4 MiB + 5 bytes stores 3
     segments x 6 shards = 18 shards (iolake_osd_puts_total over the six
     OSDs; 5 x 6 = 30 at the default 1 MiB), and a multipart upload
     (two 5 MiB parts + 1 byte) and a server-side copy of the object are
     written with it too.
  2. Restarted on the same data at the default (1 MiB): every object
     reads back byte for byte, whole and in Ranges starting and ending
     mid-segment; a new PUT of 4 MiB + 5 bytes stores 30 shards.
  3. Restarted at 2 MiB again: both generations read back.
"""
import hashlib
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aio_py  # noqa: E402

MIB = 1 << 20


def expect(ok, what):
    if not ok:
        raise AssertionError(what)
    print("ok: " + what)


def osd_puts(ep):
    text = urllib.request.urlopen(ep + "/metrics", timeout=10).read().decode()
    return sum(int(float(l.split()[-1])) for l in text.splitlines()
               if l.startswith("iolake_osd_puts_total{"))


def read_all(s3, bodies, label):
    for k, b in bodies.items():
        got = s3.get_object(Bucket="seg", Key=k)["Body"].read()
        expect(got == b, "%s: %s reads back (%d bytes)" % (label, k, len(b)))
        n = len(b)
        for lo, hi in ((MIB - 7, 2 * MIB + 9), (2 * MIB + 3, n - 2), (n - 100, n - 1)):
            if lo < 0 or hi >= n or lo > hi:
                continue
            got = s3.get_object(Bucket="seg", Key=k,
                                Range="bytes=%d-%d" % (lo, hi))["Body"].read()
            expect(got == b[lo:hi + 1], "%s: %s bytes %d-%d" % (label, k, lo, hi))


def main():
    aio = aio_py.Aio(osd_size="512M", args=["--segment-size", "2MiB"])
    bodies = {}
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="seg")
        b = os.urandom(4 * MIB + 5)
        p0 = osd_puts(aio.ep)
        r = s3.put_object(Bucket="seg", Key="two", Body=b)
        expect(r["ETag"] == '"%s"' % hashlib.md5(b).hexdigest(), "PUT at 2 MiB: ETag is the MD5")
        n = osd_puts(aio.ep) - p0
        expect(n == 18, "PUT of 4 MiB + 5 at --segment-size 2MiB stored 18 shards (%d)" % n)
        bodies["two"] = b
        up = s3.create_multipart_upload(Bucket="seg", Key="mpu")["UploadId"]
        parts, body = [], b""
        for i, size in enumerate((5 * MIB, 5 * MIB + 1)):
            pb = os.urandom(size)
            e = s3.upload_part(Bucket="seg", Key="mpu", UploadId=up, PartNumber=i + 1,
                               Body=pb)["ETag"]
            parts.append({"ETag": e, "PartNumber": i + 1})
            body += pb
        s3.complete_multipart_upload(Bucket="seg", Key="mpu", UploadId=up,
                                     MultipartUpload={"Parts": parts})
        bodies["mpu"] = body
        s3.copy_object(Bucket="seg", Key="copy", CopySource={"Bucket": "seg", "Key": "two"})
        bodies["copy"] = b
        read_all(s3, bodies, "2 MiB")
        aio.stop()

        aio.args = [a for a in aio.args if a not in ("--segment-size", "2MiB")]
        aio.start()
        s3 = aio.client()
        read_all(s3, bodies, "restarted at 1 MiB")
        b1 = os.urandom(4 * MIB + 5)
        p0 = osd_puts(aio.ep)
        s3.put_object(Bucket="seg", Key="one", Body=b1)
        n = osd_puts(aio.ep) - p0
        expect(n == 30, "PUT of 4 MiB + 5 at the default 1 MiB stored 30 shards (%d)" % n)
        bodies["one"] = b1
        aio.stop()

        aio.args += ["--segment-size", "2MiB"]
        aio.start()
        read_all(aio.client(), bodies, "restarted at 2 MiB")
        aio.stop()
    finally:
        aio.close()
    print("PASS test_segment_size")


if __name__ == "__main__":
    main()
