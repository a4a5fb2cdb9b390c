#!/usr/bin/env python3
"""test_s3_copy.py — server-side copies on iolake-aio with boto3:
CopyObject within a bucket and across buckets, of inline, sharded,
multipart and empty sources (bytes and ETag checked); the metadata
directive (COPY keeps the source's headers and metadata, REPLACE takes the
request's; copying onto itself needs REPLACE); the four
x-amz-copy-source-if-* conditions (412 PreconditionFailed, with S3's
precedence rules); tags kept or replaced (x-amz-tagging-directive); NoSuchKey / NoSuchBucket / InvalidArgument errors;
UploadPartCopy with and without x-amz-copy-source-range (a range spanning
the parts of a multipart source), completed into an object read back byte
for byte. Afterwards, with everything deleted, every OSD's
iolake_osd_used_bytes is back at its starting value.

A copy racing an overwrite of its source (issue 18): the source (32 MiB)
is overwritten (by 1,000 bytes) while copies of it run, three rounds at
varied delays:
each copy either succeeds with the bytes of one whole version of the
source, or fails cleanly (503 saying the source changed, or the source
gone) with no destination object; never other bytes."""
import datetime, hashlib, os, random, sys, threading, time

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402
from test_s3_multipart import osd_used, wait_used  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
MiB = 1 << 20


def code(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got if not isinstance(got, bytes) else "%d bytes" % len(got))


def md5q(b):
    return '"%s"' % hashlib.md5(b).hexdigest()


def get(s3, b, k):
    return s3.get_object(Bucket=b, Key=k)["Body"].read()


def setup(s3):
    s3.create_bucket(Bucket="cpa")
    s3.create_bucket(Bucket="cpb")
    src = {"tiny": rnd.randbytes(100), "mid": rnd.randbytes(3 * MiB + 7), "empty": b""}
    for k, v in src.items():
        s3.put_object(Bucket="cpa", Key=k, Body=v, ContentType="text/x-" + k,
                      Metadata={"origin": k})
    parts = [rnd.randbytes(5 * MiB), rnd.randbytes(2 * MiB + 3)]
    uid = s3.create_multipart_upload(Bucket="cpa", Key="multi", ContentType="text/x-multi",
                                     Metadata={"origin": "multi"})["UploadId"]
    tags = [s3.upload_part(Bucket="cpa", Key="multi", UploadId=uid, PartNumber=i + 1,
                           Body=p)["ETag"] for i, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket="cpa", Key="multi", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": t} for i, t in enumerate(tags)]})
    src["multi"] = b"".join(parts)
    return src


def copies(s3, src):
    for k, v in src.items():
        for db in ("cpa", "cpb"):
            dk = "copy-of-" + k
            r = s3.copy_object(Bucket=db, Key=dk, CopySource={"Bucket": "cpa", "Key": k})
            expect((r["CopyObjectResult"]["ETag"], get(s3, db, dk) == v), (md5q(v), True),
                   "CopyObject %s -> %s/%s" % (k, db, dk))
            h = s3.head_object(Bucket=db, Key=dk)
            expect((h["ContentType"], h["Metadata"], h["ETag"]),
                   ("text/x-" + k, {"origin": k}, md5q(v)), "COPY directive keeps headers (%s)" % k)
    r = s3.copy_object(Bucket="cpb", Key="replaced", CopySource="cpa/mid",
                       MetadataDirective="REPLACE", ContentType="application/x-new",
                       Metadata={"fresh": "yes"})
    h = s3.head_object(Bucket="cpb", Key="replaced")
    expect((h["ContentType"], h["Metadata"], get(s3, "cpb", "replaced") == src["mid"]),
           ("application/x-new", {"fresh": "yes"}, True), "REPLACE directive takes the request's")
    # A key that needs escaping in x-amz-copy-source.
    s3.put_object(Bucket="cpa", Key="dir/with space+plus%.bin", Body=b"odd key")
    s3.copy_object(Bucket="cpb", Key="odd", CopySource={"Bucket": "cpa",
                                                        "Key": "dir/with space+plus%.bin"})
    expect(get(s3, "cpb", "odd"), b"odd key", "source key with space, plus and percent")
    # Overwrite a destination by a copy.
    s3.copy_object(Bucket="cpb", Key="copy-of-mid", CopySource={"Bucket": "cpa", "Key": "tiny"})
    expect(get(s3, "cpb", "copy-of-mid"), src["tiny"], "copy overwrites the destination")

    expect(code(s3.copy_object, Bucket="cpa", Key="mid", CopySource="cpa/mid"), "InvalidRequest",
           "copy onto itself with COPY")
    s3.copy_object(Bucket="cpa", Key="mid", CopySource="cpa/mid", MetadataDirective="REPLACE",
                   Metadata={"origin": "mid", "touched": "1"}, ContentType="text/x-mid")
    h = s3.head_object(Bucket="cpa", Key="mid")
    expect((h["Metadata"], get(s3, "cpa", "mid") == src["mid"]),
           ({"origin": "mid", "touched": "1"}, True), "copy onto itself with REPLACE")
    expect(code(s3.copy_object, Bucket="cpb", Key="x", CopySource="cpa/mid",
                MetadataDirective="MERGE"), "InvalidArgument", "unknown metadata directive")
    expect(code(s3.copy_object, Bucket="cpb", Key="x", CopySource="cpa/nokey"), "NoSuchKey",
           "missing source key")
    expect(code(s3.copy_object, Bucket="cpb", Key="x", CopySource="nobucket/k"), "NoSuchBucket",
           "missing source bucket")
    expect(code(s3.copy_object, Bucket="nobucket", Key="x", CopySource="cpa/mid"), "NoSuchBucket",
           "missing destination bucket")
    expect(code(s3.head_object, Bucket="cpb", Key="x"), "404", "failed copies left no object")


def tags(s3):
    """CopyObject keeps the source's tags unless the tagging directive is
    REPLACE (then the request's x-amz-tagging)."""
    def tagset(b, k):
        return sorted((t["Key"], t["Value"]) for t in s3.get_object_tagging(Bucket=b, Key=k)["TagSet"])
    s3.put_object(Bucket="cpa", Key="tagged", Body=b"tagged body", Tagging="team=blue&tier=1")
    s3.copy_object(Bucket="cpb", Key="tagged-copy", CopySource="cpa/tagged")
    expect(tagset("cpb", "tagged-copy"), [("team", "blue"), ("tier", "1")], "copy keeps the tags")
    s3.copy_object(Bucket="cpb", Key="tagged-new", CopySource="cpa/tagged",
                   TaggingDirective="REPLACE", Tagging="team=red")
    expect(tagset("cpb", "tagged-new"), [("team", "red")], "REPLACE takes the request's tags")
    expect(get(s3, "cpb", "tagged-new"), b"tagged body", "tag-replaced copy's bytes")


def conditions(s3, src):
    h = s3.head_object(Bucket="cpa", Key="tiny")
    etag, mtime = h["ETag"], h["LastModified"]
    past = mtime - datetime.timedelta(days=1)
    future = mtime + datetime.timedelta(days=1)
    cs = {"Bucket": "cpa", "Key": "tiny"}

    def cp(**kw):
        return code(s3.copy_object, Bucket="cpb", Key="cond", CopySource=cs, **kw)

    expect(cp(CopySourceIfMatch=etag), "OK", "if-match the ETag")
    expect(cp(CopySourceIfMatch='"%s"' % ("0" * 32)), "PreconditionFailed", "if-match another ETag")
    expect(cp(CopySourceIfNoneMatch=etag), "PreconditionFailed", "if-none-match the ETag")
    expect(cp(CopySourceIfNoneMatch='"%s"' % ("0" * 32)), "OK", "if-none-match another ETag")
    expect(cp(CopySourceIfModifiedSince=past), "OK", "if-modified-since a day before")
    expect(cp(CopySourceIfModifiedSince=future), "PreconditionFailed",
           "if-modified-since a day after")
    expect(cp(CopySourceIfUnmodifiedSince=future), "OK", "if-unmodified-since a day after")
    expect(cp(CopySourceIfUnmodifiedSince=past), "PreconditionFailed",
           "if-unmodified-since a day before")
    expect(cp(CopySourceIfMatch=etag, CopySourceIfUnmodifiedSince=past), "OK",
           "a matching if-match overrides if-unmodified-since")
    expect(cp(CopySourceIfNoneMatch=etag, CopySourceIfModifiedSince=past), "PreconditionFailed",
           "if-none-match fails even when if-modified-since holds")
    s3.delete_object(Bucket="cpb", Key="cond")


def part_copies(s3, src):
    uid = s3.create_multipart_upload(Bucket="cpb", Key="assembled")["UploadId"]
    # Part 1: a 6 MiB range of the multipart source, across its parts.
    a, b = 1 * MiB + 5, 6 * MiB + 4
    r1 = s3.upload_part_copy(Bucket="cpb", Key="assembled", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": "cpa", "Key": "multi"},
                             CopySourceRange="bytes=%d-%d" % (a, b))
    expect(r1["CopyPartResult"]["ETag"], md5q(src["multi"][a:b + 1]),
           "UploadPartCopy of a range spanning the source's parts")
    # Part 2: a whole sharded object; part 3: a whole inline one.
    r2 = s3.upload_part_copy(Bucket="cpb", Key="assembled", UploadId=uid, PartNumber=2,
                             CopySource="cpa/mid")
    expect(r2["CopyPartResult"]["ETag"], md5q(src["mid"]), "UploadPartCopy of a whole object")
    r3 = s3.upload_part_copy(Bucket="cpb", Key="assembled", UploadId=uid, PartNumber=3,
                             CopySource="cpa/tiny")
    expect(code(s3.upload_part_copy, Bucket="cpb", Key="assembled", UploadId=uid, PartNumber=4,
                CopySource="cpa/tiny", CopySourceRange="bytes=50-100"), "InvalidArgument",
           "range past the source's end")
    expect(code(s3.upload_part_copy, Bucket="cpb", Key="assembled", UploadId="0123456789abcdef",
                PartNumber=1, CopySource="cpa/tiny"), "NoSuchUpload", "UploadPartCopy to no upload")
    expect(code(s3.upload_part_copy, Bucket="cpb", Key="assembled", UploadId=uid, PartNumber=4,
                CopySource="cpa/tiny", CopySourceIfMatch='"%s"' % ("0" * 32)),
           "PreconditionFailed", "UploadPartCopy with a failing if-match")
    # Part 2 again, from another source: replaces the first copy.
    r2 = s3.upload_part_copy(Bucket="cpb", Key="assembled", UploadId=uid, PartNumber=2,
                             CopySource="cpa/multi", CopySourceRange="bytes=0-%d" % (5 * MiB))
    s3.complete_multipart_upload(Bucket="cpb", Key="assembled", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]}
                  for n, r in ((1, r1), (2, r2), (3, r3))]})
    want = src["multi"][a:b + 1] + src["multi"][:5 * MiB + 1] + src["tiny"]
    expect(get(s3, "cpb", "assembled") == want, True, "object of copied parts byte for byte")


def overwrite_mid_copy(s3):
    # the overwrite is small: its commit (which frees the source's
    # shards) lands while the copy still reads
    versions = [rnd.randbytes(32 * MiB), rnd.randbytes(1000)]
    outcomes = []
    for rnd_i, delay in enumerate((0.02, 0.08, 0.2)):
        s3.put_object(Bucket="cpa", Key="racing", Body=versions[0])
        dst = "raced%d" % rnd_i
        res = {}

        def copy():
            try:
                s3.copy_object(Bucket="cpb", Key=dst, CopySource="cpa/racing")
                res["code"] = "OK"
            except ClientError as e:
                res["code"] = e.response["Error"]["Code"]
                res["msg"] = e.response["Error"].get("Message", "")

        t = threading.Thread(target=copy)
        t.start()
        time.sleep(delay)
        s3.put_object(Bucket="cpa", Key="racing", Body=versions[1])
        t.join()
        if res["code"] == "OK":
            got = get(s3, "cpb", dst)
            expect(got in versions, True, "copy %d (overwrite after %.2f s) succeeded with one "
                   "whole version" % (rnd_i, delay))
            outcomes.append("copied v%d" % versions.index(got))
            s3.delete_object(Bucket="cpb", Key=dst)
        else:
            expect((res["code"], "overwritten" in res["msg"]), ("ServiceUnavailable", True),
                   "copy %d (overwrite after %.2f s) failed cleanly: %s" % (rnd_i, delay,
                                                                           res["msg"]))
            expect(code(s3.head_object, Bucket="cpb", Key=dst), "404",
                   "no destination object after the failed copy")
            outcomes.append("failed")
    print("ok: copies racing an overwrite of their source:", ", ".join(outcomes))
    s3.delete_object(Bucket="cpa", Key="racing")


def main():
    # A short GC period: a multipart object's part rows (issue 18) are
    # freed by the GC worker in two rounds, not by the DELETE itself.
    aio = Aio(osd_size="512M", args=["--gc-interval", "500ms"])
    try:
        aio.start()
        s3 = aio.client()
        base = osd_used(aio)
        src = setup(s3)
        copies(s3, src)
        tags(s3)
        conditions(s3, src)
        part_copies(s3, src)
        overwrite_mid_copy(s3)
        for b in ("cpa", "cpb"):
            for o in s3.list_objects_v2(Bucket=b).get("Contents", []):
                s3.delete_object(Bucket=b, Key=o["Key"])
            s3.delete_bucket(Bucket=b)
        wait_used(aio, base, "every copy and part deleted: no space left behind")
        print("PASS test_s3_copy")
    except Exception:
        print("aio log:", aio.log.name)
        os.system("grep -v level=info %s | tail -30" % aio.log.name)
        raise
    finally:
        aio.close()


if __name__ == "__main__":
    main()
