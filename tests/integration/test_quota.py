#!/usr/bin/env python3
"""test_quota.py — quotas, GC and scrub status (issue 20), against one
iolake-aio, with boto3 as the S3 client and curl --aws-sigv4 for the admin
API (as docs/admin-api.md shows it).

  1. Bucket quota by objects (PUT /api/v1/buckets/B/quota max_objects 3):
     three PUTs pass, the fourth PUT, a CopyObject into B and a
     CompleteMultipartUpload are refused 403 QuotaExceeded; GET .../quota
     says 3 objects and their bytes; after one delete a PUT passes at once
     (the usage is meta's count, read with the bucket record for every
     request: no wait).
  2. Bucket quota by bytes (`iolake-admin quota set --max-bytes 100000`):
     60,000 bytes pass, a PUT of 50,000 and an UploadPart of 50,000 are
     refused; after the delete both pass.
  3. User quota across two buckets (max_objects 2 for carol, her buckets
     c1 and c2): one object in each, the third PUT in either is refused;
     `iolake-admin quota get --user carol` says 2 objects; cleared, the
     PUT passes; a bucket quota cleared lets B grow past 3.
  4. GET /api/v1/gc: aio runs with --gc-interval 0 (no worker) first: after
     N objects above the inline size are deleted, the queue holds exactly
     N entries and their bytes, "worker" is null. Restarted with a 200 ms
     worker: the queue drains to 0 and the worker's freed entries and bytes
     are exactly those.
  Also: a second access key for carol (POST users/carol/keys) works for
     S3 and is refused once deleted (DELETE keys/ID); DELETE osds/3 of an
     up OSD is 409.
  5. GET /api/v1/scrub: six OSDs, each with its scrubber on and a pass
     finished after the writes above (--scrub-interval short:
     last_pass_end_ms past the step's start), and the summary's shards
     checked > 0.
The aio is killed by PID and its temp dir removed, pass or fail.
"""
import json, os, subprocess, sys, time

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, BUILD, Aio, free_port  # noqa: E402

ADMIN = os.path.join(BUILD, "iolake-admin")


def expect(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


class Api:
    def __init__(self, port, ak=AK, sk=SK):
        self.base = "http://127.0.0.1:%d/api/v1/" % port
        self.auth = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "%s:%s" % (ak, sk)]

    def call(self, method, path, body=None):
        cmd = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", method] + self.auth
        if body is not None:
            cmd += ["-H", "content-type: application/json", "-d", json.dumps(body)]
        out = subprocess.run(cmd + [self.base + path], capture_output=True, text=True,
                             timeout=20).stdout
        text, _, code = out.rpartition("\n")
        return int(code), (json.loads(text) if text.strip() else None)


def refused(fn, what):
    try:
        fn()
    except ClientError as e:
        code = e.response["Error"]["Code"]
        status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        expect(code == "QuotaExceeded" and status == 403,
               "%s refused 403 QuotaExceeded (got %s %s)" % (what, status, code))
        return
    raise AssertionError("%s was not refused" % what)


def admin(aio, *args):
    r = subprocess.run([ADMIN, "--data-dir", aio.data] + list(args), capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def mpu(s3, bucket, key, parts):
    u = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    done = []
    for i, body in enumerate(parts, 1):
        e = s3.upload_part(Bucket=bucket, Key=key, UploadId=u, PartNumber=i, Body=body)["ETag"]
        done.append({"PartNumber": i, "ETag": e})
    return u, done


def main():
    api_port = free_port()
    common = ["--admin-api-listen", "127.0.0.1:%d" % api_port, "--debug-min-part-size", "1024",
              "--scrub-interval", "1s"]
    aio = Aio(args=common + ["--gc-interval", "0"])
    try:
        aio.start()
        s3 = aio.client()
        api = Api(api_port)

        # ---- 1. bucket quota by objects
        s3.create_bucket(Bucket="qobj")
        code, r = api.call("PUT", "buckets/qobj/quota", {"max_objects": 3})
        expect(code == 200 and r["quota"] == {"max_bytes": 0, "max_objects": 3},
               "PUT buckets/qobj/quota max_objects 3: %s %s" % (code, r))
        for i in range(3):
            s3.put_object(Bucket="qobj", Key="k%d" % i, Body=b"x" * 1000)
        refused(lambda: s3.put_object(Bucket="qobj", Key="k3", Body=b"y"), "4th PUT (objects 3/3)")
        # A read's gate asks meta for the bucket without its usage
        # (HeadObject no_usage): reads of a full bucket pass, and the
        # next write is still checked against the usage.
        body = s3.get_object(Bucket="qobj", Key="k1")["Body"].read()
        head = s3.head_object(Bucket="qobj", Key="k2")
        expect(body == b"x" * 1000 and head["ContentLength"] == 1000,
               "GET and HEAD in a full bucket pass")
        refused(lambda: s3.put_object(Bucket="qobj", Key="k3", Body=b"y"),
                "PUT after those reads (objects 3/3)")
        s3.create_bucket(Bucket="src")
        s3.put_object(Bucket="src", Key="s", Body=b"z" * 100)
        refused(lambda: s3.copy_object(Bucket="qobj", Key="copy", CopySource="src/s"),
                "CopyObject into a full bucket")
        u, parts = mpu(s3, "qobj", "big", [b"p" * 2048, b"q" * 100])   # parts: bytes only
        refused(lambda: s3.complete_multipart_upload(Bucket="qobj", Key="big", UploadId=u,
                                                     MultipartUpload={"Parts": parts}),
                "CompleteMultipartUpload into a full bucket")
        code, r = api.call("GET", "buckets/qobj/quota")
        expect(code == 200 and r["usage"] == {"objects": 3, "bytes": 3000} and
               r["owner"] == "root" and r["owner_quota"] is None,
               "GET buckets/qobj/quota: 3 objects, 3000 bytes: %s" % r)
        s3.delete_object(Bucket="qobj", Key="k0")
        code, r = api.call("GET", "buckets/qobj/quota")
        expect(r["usage"] == {"objects": 2, "bytes": 2000}, "after a delete: 2 objects: %s" % r)
        s3.complete_multipart_upload(Bucket="qobj", Key="big", UploadId=u,
                                     MultipartUpload={"Parts": parts})
        expect(True, "after one delete, the Complete refused before passes at once")
        refused(lambda: s3.put_object(Bucket="qobj", Key="k4", Body=b"y"), "PUT with 3/3 again")

        # ---- 2. bucket quota by bytes, set with iolake-admin
        s3.create_bucket(Bucket="qbytes")
        rc, out, err = admin(aio, "quota", "set", "--bucket", "qbytes", "--max-bytes", "100000")
        expect(rc == 0, "iolake-admin quota set --bucket qbytes --max-bytes 100000: %s%s" % (out, err))
        s3.put_object(Bucket="qbytes", Key="a", Body=b"a" * 60000)
        refused(lambda: s3.put_object(Bucket="qbytes", Key="b", Body=b"b" * 50000),
                "PUT of 50,000 bytes over 60,000 of 100,000")
        u2 = s3.create_multipart_upload(Bucket="qbytes", Key="m")["UploadId"]
        refused(lambda: s3.upload_part(Bucket="qbytes", Key="m", UploadId=u2, PartNumber=1,
                                       Body=b"m" * 50000), "UploadPart of 50,000 bytes")
        rc, out, err = admin(aio, "--json", "quota", "get", "--bucket", "qbytes")
        g = json.loads(out)
        expect(rc == 0 and g["quota"]["max_bytes"] == 100000 and
               g["usage"] == {"objects": 1, "bytes": 60000},
               "iolake-admin quota get --bucket qbytes: %s" % out.strip())
        s3.delete_object(Bucket="qbytes", Key="a")
        s3.upload_part(Bucket="qbytes", Key="m", UploadId=u2, PartNumber=1, Body=b"m" * 50000)
        s3.put_object(Bucket="qbytes", Key="b", Body=b"b" * 50000)
        expect(True, "after the delete the UploadPart and the PUT pass")
        s3.abort_multipart_upload(Bucket="qbytes", Key="m", UploadId=u2)

        # ---- 3. user quota across two buckets
        code, r = api.call("POST", "users", {"name": "carol"})
        expect(code == 201, "user carol made")
        carol = aio.client(ak=r["access_key"], sk=r["secret_key"])
        carol.create_bucket(Bucket="carol1")
        carol.create_bucket(Bucket="carol2")
        code, r = api.call("PUT", "users/carol/quota", {"max_objects": 2})
        expect(code == 200, "PUT users/carol/quota max_objects 2")
        carol.put_object(Bucket="carol1", Key="x", Body=b"1" * 10)
        carol.put_object(Bucket="carol2", Key="y", Body=b"2" * 20)
        refused(lambda: carol.put_object(Bucket="carol2", Key="z", Body=b"3"),
                "carol's third object (in c2)")
        refused(lambda: carol.put_object(Bucket="carol1", Key="z", Body=b"3"),
                "carol's third object (in c1)")
        code, r = api.call("GET", "users/carol/quota")
        expect(code == 200 and r["usage"]["objects"] == 2 and r["usage"]["bytes"] == 30 and
               r["usage"]["buckets"] == 2 and r["quota"]["max_objects"] == 2,
               "GET users/carol/quota: 2 objects, 30 bytes, 2 buckets: %s" % r)
        rc, out, err = admin(aio, "--json", "quota", "get", "--user", "carol")
        expect(rc == 0 and json.loads(out)["usage"]["objects"] == 2,
               "iolake-admin quota get --user carol: %s" % out.strip())
        # a second key for carol: works for S3, then deleted, refused
        code, k2 = api.call("POST", "users/carol/keys")
        expect(code == 201 and k2["user"] == "carol" and len(k2["secret_key"]) == 40,
               "POST users/carol/keys: a second key (201)")
        c2 = aio.client(ak=k2["access_key"], sk=k2["secret_key"])
        expect(len(c2.list_objects_v2(Bucket="carol1").get("Contents", [])) == 1,
               "carol's second key lists her bucket")
        code, _ = api.call("POST", "users/nobody/keys")
        expect(code == 404, "a key for a missing user: 404 (%s)" % code)
        code, r = api.call("DELETE", "keys/" + k2["access_key"])
        expect(code == 200 and r["deleted"] == k2["access_key"], "DELETE keys/ID")
        # The S3 side drops its cached secret when the map's creds_epoch
        # (bumped by the delete) reaches it through WatchMap: at once, or
        # a map propagation later.
        t0 = time.time()
        while True:
            try:
                c2.list_objects_v2(Bucket="carol1")
                gone = "accepted"
            except ClientError as e:
                gone = e.response["Error"]["Code"]
            if gone != "accepted" or time.time() - t0 > 5:
                break
            time.sleep(0.1)
        expect(gone == "InvalidAccessKeyId", "the deleted key is refused (after %.1f s): %s" %
               (time.time() - t0, gone))
        code, r = api.call("DELETE", "osds/3")
        expect(code == 409, "DELETE osds/3 of an up+in OSD: 409 (%s %s)" % (code, r))
        code, r = api.call("DELETE", "users/carol/quota")
        expect(code == 200 and r["quota"] is None, "DELETE users/carol/quota")
        carol.put_object(Bucket="carol1", Key="z", Body=b"3")
        expect(True, "carol's third object passes once her quota is cleared")
        rc, out, err = admin(aio, "quota", "clear", "--bucket", "qobj")
        expect(rc == 0, "iolake-admin quota clear --bucket qobj")
        for i in range(5, 8):
            s3.put_object(Bucket="qobj", Key="k%d" % i, Body=b"x")
        expect(True, "qobj grows past 3 objects once its quota is cleared")
        code, r = api.call("PUT", "buckets/nosuch/quota", {"max_bytes": 1})
        expect(code == 404, "a quota on a missing bucket: 404 (%s)" % code)
        code, r = api.call("PUT", "buckets/qobj/quota", {"max_bytes": -1})
        expect(code == 400, "a negative limit: 400 (%s)" % code)

        # ---- 4. GC status: the queue without a worker, then drained
        n, size = 5, 40000       # above the 4 KiB inline size: shards on the OSDs
        s3.create_bucket(Bucket="gcb")
        code, before = api.call("GET", "gc")
        expect(code == 200 and before["worker"] is None,
               "GET gc without a worker: worker null, queue %d" % before["queue"]["entries"])
        for i in range(n):
            s3.put_object(Bucket="gcb", Key="g%d" % i, Body=os.urandom(size))
        for i in range(n):
            s3.delete_object(Bucket="gcb", Key="g%d" % i)
        code, r = api.call("GET", "gc")
        q = r["queue"]
        expect(q["entries"] == before["queue"]["entries"] + n and
               q["bytes_pending"] == before["queue"]["bytes_pending"] + n * size and
               q["complete"] and q["oldest_age_ms"] is not None,
               "GET gc: the queue holds the %d deletes and their %d bytes: %s" %
               (n, n * size, q))
        pending = q["entries"]
        pending_bytes = q["bytes_pending"]
        aio.stop()
        aio.args = common + ["--gc-interval", "200ms"]
        aio.start()
        end = time.time() + 30
        while True:
            code, r = api.call("GET", "gc")
            if code == 200 and r["queue"]["entries"] == 0 and r["worker"]["rounds"] > 0:
                break
            if time.time() > end:
                raise AssertionError("GC queue not drained: %s" % r)
            time.sleep(0.2)
        w = r["worker"]
        # At least what was pending: a part-rows object's entry (issue 18)
        # becomes a second entry with its parts' layouts once the worker
        # frees its rows, so more may be freed than the first look saw.
        expect(w["freed_entries"] + w["skipped_entries"] >= pending and w["failed_entries"] == 0
               and w["freed_bytes"] >= n * size and w["last_round_end_ms"],
               "GET gc: drained to 0, the worker acked at least the %d entries (%d bytes) "
               "pending: %s" % (pending, pending_bytes, w))

        # ---- 5. scrub status: a pass that ended after the writes above
        # on every OSD (a pass over the empty stores at start would count
        # no shard; under load the next one may come seconds later).
        after_ms = (int(time.time()) + 1) * 1000   # last_pass_end_ms has 1-s steps
        end = time.time() + 30
        while True:
            code, r = api.call("GET", "scrub")
            done = code == 200 and all(o["scrub"] and o["scrub"]["last_pass_end_ms"] >= after_ms
                                       for o in r["osds"])
            if done:
                break
            if time.time() > end:
                raise AssertionError("no scrub pass on every OSD: %s" % r)
            time.sleep(0.5)
        expect(len(r["osds"]) == 6 and all(o["scrub"]["enabled"] for o in r["osds"]) and
               r["summary"]["shards_checked"] > 0 and r["summary"]["errors_found"] == 0,
               "GET scrub: 6 OSDs, each with a pass done, %d shards checked, no error" %
               r["summary"]["shards_checked"])
        code, r = api.call("GET", "osds")
        s = r["summary"]
        expect(s["used_bytes"] == s["data_used_bytes"] + s["inline_bytes"] and s["inline_bytes"] > 0,
               "GET osds: used_bytes counts the inline shards (%d inline)" % s["inline_bytes"])
        rc, took = aio.stop()
        expect(rc == 0, "aio stopped cleanly in %.1f s" % took)
    finally:
        aio.close()
    print("PASS test_quota")


if __name__ == "__main__":
    main()
