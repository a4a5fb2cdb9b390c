#!/usr/bin/env python3
"""test_ranges.py — object records sharded by key range over Raft range
groups (issue 13), end to end: iolake-aio with --range-groups 4, boto3 as
the client, iolake-admin against aio's meta member.

  1. The root leader makes the four range groups; a new bucket has one
     range; `range split` pre-splits it at "d", "m/5" and "t" into four
     ranges spread over the groups (`range ls` shows them).
  2. A few hundred keys across the split points (the split keys
     themselves included, and a common prefix "m/" that spans the "m/5"
     boundary) are PUT; `range ls` counts them per range.
  3. ListObjectsV2 and V1, with and without a delimiter and a prefix, with
     page sizes 1, 3, 7 and 1000, continuation tokens and markers, must
     equal a model (the sorted key list; each common prefix once).
  3b. Ranges holding objects split at "q5" and "b" (their records move to
     other groups), then [m/5, q5) and [q5, t) merge back: after each, the
     counts per range, every listing of 3 and every object byte for byte
     equal the model.
  4. Multipart uploads in three ranges: ListMultipartUploads pages of one,
     complete two, abort one; the completed objects read back.
  5. DeleteBucket of the non-empty bucket answers BucketNotEmpty, and every
     range still takes PUTs and DELETEs afterwards.
  6. aio restarted: everything reads back byte for byte, listing equal.
  7. Overwrites and deletes queue GC entries in the range groups; the
     gateway's worker drains them (root Status gc_queue, which counts
     every group, back to 0); the live objects still read back.
  8. Everything deleted, DeleteBucket succeeds; the bucket and its ranges
     are gone.

aio is stopped and its temp dir removed on exit, pass or fail.
"""
import json, os, random, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

BUILD = os.environ.get("IOLAKE_BUILD") or os.path.join(os.path.dirname(__file__), "../../build")
B = "rng"
SPLITS = ["d", "m/5", "t"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def wait_for(what, fn, limit=30.0):
    end = time.time() + limit
    while time.time() < end:
        try:
            if fn():
                return
        except Exception:
            pass
        time.sleep(0.2)
    fail("timed out waiting for " + what)


def model(keys, prefix="", delim=""):
    out = []
    for k in sorted(keys):
        if not k.startswith(prefix):
            continue
        if delim and delim in k[len(prefix):]:
            cp = k[:len(prefix) + k[len(prefix):].index(delim) + len(delim)]
            if not out or out[-1] != ("P", cp):
                out.append(("P", cp))
        else:
            out.append(("K", k))
    return out


def list_v2(s3, prefix="", delim="", page=1000):
    got, token, pages = [], None, 0
    while True:
        kw = dict(Bucket=B, Prefix=prefix, MaxKeys=page)
        if delim:
            kw["Delimiter"] = delim
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        ents = [("K", o["Key"]) for o in r.get("Contents", [])] + \
               [("P", p["Prefix"]) for p in r.get("CommonPrefixes", [])]
        expect(len(ents) <= page, "a page of %d holds %d entries" % (page, len(ents)))
        got += sorted(ents, key=lambda e: e[1])
        pages += 1
        expect(pages < 10000, "listing does not end")
        if not r["IsTruncated"]:
            return got
        token = r["NextContinuationToken"]


def list_v1(s3, prefix="", delim="", page=1000):
    got, marker = [], ""
    while True:
        kw = dict(Bucket=B, Prefix=prefix, MaxKeys=page, Marker=marker)
        if delim:
            kw["Delimiter"] = delim
        r = s3.list_objects(**kw)
        ents = [("K", o["Key"]) for o in r.get("Contents", [])] + \
               [("P", p["Prefix"]) for p in r.get("CommonPrefixes", [])]
        ents.sort(key=lambda e: e[1])
        got += ents
        if not r["IsTruncated"]:
            return got
        marker = r.get("NextMarker") or ents[-1][1]


def main():
    aio = Aio(args=["--range-groups", "4", "--gc-interval", "300ms"])
    try:
        run(aio)
    finally:
        if aio.proc and aio.proc.poll() is None:
            aio.stop()
        aio.close()


def run(aio):
    aio.start()
    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()

    def admin(*args, check=True):
        p = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta] + list(args),
                           capture_output=True, text=True)
        if check and p.returncode != 0:
            fail("iolake-admin %s: %s" % (" ".join(args), p.stderr))
        return p

    def ranges(bucket=None):
        a = ["--json", "range", "ls"] + (["--bucket", bucket] if bucket else [])
        return json.loads(admin(*a).stdout)

    wait_for("four range groups", lambda: len(ranges()["groups"]) == 4)
    s3 = aio.client()

    # 1. one range, then four
    s3.create_bucket(Bucket=B)
    r = ranges(B)["ranges"]
    expect(len(r) == 1 and r[0]["start"] == "" and r[0]["end"] == "", "one range: %s" % r)
    for k in SPLITS:
        print(admin("range", "split", B, k).stdout.strip())
    r = ranges(B)["ranges"]
    expect([x["start"] for x in r] == [""] + SPLITS, "four ranges: %s" % r)
    expect([x["end"] for x in r] == SPLITS + [""], "ranges end where the next starts: %s" % r)
    groups = set(x["group"] for x in r)
    expect(len(groups) >= 3, "ranges spread over groups: %s" % r)
    p = admin("range", "split", B, "m/5", check=False)
    expect(p.returncode != 0, "a split at a range's start is refused")
    print("ok: four ranges over groups %s" % sorted(groups))

    # 2. keys across the split points
    rnd = random.Random(13)
    keys = set(SPLITS)
    for p in ["a", "c/", "d", "d/", "k", "m/", "m", "q", "t", "t/x/", "z"]:
        for i in range(27):
            keys.add("%s%d" % (p, i))
    keys.update(["m/5/deep", "m/50", "m/4z", "m/6", "s~", "d\u00e9j\u00e0"])
    body = {}
    for k in sorted(keys):
        body[k] = bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 10, 700, 6000])))
        s3.put_object(Bucket=B, Key=k, Body=body[k])
    r = ranges(B)["ranges"]
    expect(sum(x["objects"] for x in r) == len(keys), "range ls counts every object: %s" % r)
    expect(sum(x["bytes"] for x in r) == sum(len(v) for v in body.values()),
           "range ls sums every object's bytes")
    for x in r:
        inside = [k for k in keys if k >= x["start"] and (not x["end"] or k < x["end"])]
        expect(x["objects"] == len(inside), "range %s holds %d keys, says %d" %
               (x["start"], len(inside), x["objects"]))
    print("ok: %d keys PUT, counted per range" % len(keys))

    # 3. listings against the model
    def check_lists():
        for prefix, delim in [("", ""), ("", "/"), ("m/", ""), ("m/", "/"), ("t/", "/"),
                              ("m", "/"), ("d", "/"), ("nothing", "")]:
            want = model(keys, prefix, delim)
            for page in (1, 3, 7, 1000):
                if page == 1 and len(want) > 120:
                    continue
                got = list_v2(s3, prefix, delim, page)
                expect(got == want, "v2 prefix=%r delim=%r page=%d: %d entries, want %d; "
                       "first diff %s" % (prefix, delim, page, len(got), len(want),
                                          next(((g, w) for g, w in zip(got, want) if g != w),
                                               None)))
            got = list_v1(s3, prefix, delim, 5)
            expect(got == want, "v1 prefix=%r delim=%r: %d entries, want %d" %
                   (prefix, delim, len(got), len(want)))
        # StartAfter inside a range and on a boundary
        for sa in ["c/3", "m/5", "m/", "s", "zzz"]:
            r = s3.list_objects_v2(Bucket=B, StartAfter=sa, MaxKeys=4)
            want = [k for k in sorted(keys) if k > sa][:4]
            expect([o["Key"] for o in r.get("Contents", [])] == want,
                   "StartAfter %r: %s" % (sa, r.get("Contents")))
    check_lists()
    print("ok: listings v1/v2, prefixes, delimiter, pages 1/3/7/1000, markers = model")

    # 3b. split non-empty ranges (their records move to another group),
    # then merge one back: listings, counts and every byte stay right
    def check_counts(what):
        r = ranges(B)["ranges"]
        expect(all(x["state"] == "open" and not x["move"] for x in r), "%s: ranges open, "
               "no move left: %s" % (what, r))
        for x in r:
            inside = [k for k in keys if k >= x["start"] and (not x["end"] or k < x["end"])]
            expect(x["objects"] == len(inside), "%s: range %r holds %d keys, says %d" %
                   (what, x["start"], len(inside), x["objects"]))
        return r

    def get_all(what):
        for k in sorted(keys):
            expect(s3.get_object(Bucket=B, Key=k)["Body"].read() == body[k], what + ": " + k)

    for k in ["q5", "b"]:
        p = admin("range", "split", B, k)
        print(p.stdout.strip())
        expect("records moved" in p.stdout, "split of a range with objects: %s" % p.stdout)
    r = check_counts("after the splits")
    expect([x["start"] for x in r] == ["", "b", "d", "m/5", "q5", "t"], "six ranges: %s" % r)
    check_lists()
    get_all("after the splits")
    print(admin("range", "merge", B, "m/5").stdout.strip())
    r = check_counts("after the merge")
    expect([x["start"] for x in r] == ["", "b", "d", "m/5", "t"], "five ranges: %s" % r)
    check_lists()
    get_all("after the merge")
    print("ok: non-empty ranges split and merged; listings (pages 1/3/7/1000) and every "
          "object byte for byte unchanged")

    # 4. multipart across ranges
    part = bytes(rnd.getrandbits(8) for _ in range(5 << 20))
    ups = {}
    for k in ["b-mp", "n-mp", "x-mp"]:
        ups[k] = s3.create_multipart_upload(Bucket=B, Key=k)["UploadId"]
        e1 = s3.upload_part(Bucket=B, Key=k, UploadId=ups[k], PartNumber=1, Body=part)["ETag"]
        e2 = s3.upload_part(Bucket=B, Key=k, UploadId=ups[k], PartNumber=2, Body=k.encode())["ETag"]
        ups[k] = (ups[k], [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}])
    seen, km, um = [], "", ""
    while True:
        kw = dict(Bucket=B, MaxUploads=1)
        if km:
            kw.update(KeyMarker=km, UploadIdMarker=um)
        r = s3.list_multipart_uploads(**kw)
        seen += [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        if not r["IsTruncated"]:
            break
        km, um = r["NextKeyMarker"], r["NextUploadIdMarker"]
        expect(len(seen) < 10, "upload listing does not end")
    expect(seen == [(k, ups[k][0]) for k in sorted(ups)], "uploads listed in order: %s" % seen)
    r = ranges(B)["ranges"]
    expect(sum(x["uploads"] for x in r) == 3, "range ls counts uploads: %s" % r)
    for k in ["b-mp", "x-mp"]:
        s3.complete_multipart_upload(Bucket=B, Key=k, UploadId=ups[k][0],
                                     MultipartUpload={"Parts": ups[k][1]})
        body[k] = part + k.encode()
        keys.add(k)
    s3.abort_multipart_upload(Bucket=B, Key="n-mp", UploadId=ups["n-mp"][0])
    for k in ["b-mp", "x-mp"]:
        expect(s3.get_object(Bucket=B, Key=k)["Body"].read() == body[k], "multipart " + k)
    expect(not s3.list_multipart_uploads(Bucket=B).get("Uploads"), "no upload left")
    print("ok: multipart uploads in three ranges listed, completed, aborted")

    # 5. DeleteBucket of a non-empty bucket leaves every range usable
    try:
        s3.delete_bucket(Bucket=B)
        fail("DeleteBucket of a non-empty bucket succeeded")
    except s3.exceptions.ClientError as e:
        expect(e.response["Error"]["Code"] == "BucketNotEmpty", "code %s" % e.response["Error"])
    for k in ["0probe", "e-probe", "n-probe", "u-probe"]:
        s3.put_object(Bucket=B, Key=k, Body=b"probe")
        expect(s3.get_object(Bucket=B, Key=k)["Body"].read() == b"probe", "probe " + k)
        s3.delete_object(Bucket=B, Key=k)
    r = ranges(B)["ranges"]
    expect(all(x["state"] == "open" for x in r), "every range open again: %s" % r)
    print("ok: BucketNotEmpty, and every range still takes PUT and DELETE")

    # 6. restart, read everything back
    aio.stop()
    aio.start()
    s3 = aio.client()
    for k in sorted(keys):
        expect(s3.get_object(Bucket=B, Key=k)["Body"].read() == body[k], "after restart: " + k)
    check_lists()
    print("ok: after a restart every object reads back and listings equal the model")

    # 7. GC in range groups: overwrite and delete big objects
    def gc_queue():
        st = json.loads(admin("--json", "cluster", "status").stdout)
        return st["members"][0]["gc_queue"]

    big = [k for k in sorted(keys) if len(body[k]) > 4096]
    expect(len(big) > 10, "objects with shards exist")
    for k in big[:5]:
        body[k] = b"y" * 9000
        s3.put_object(Bucket=B, Key=k, Body=body[k])
    for k in big[5:10]:
        s3.delete_object(Bucket=B, Key=k)
        keys.discard(k)
    wait_for("the GC queues of every group to drain", lambda: gc_queue() == 0, 60)
    for k in sorted(keys):
        expect(s3.get_object(Bucket=B, Key=k)["Body"].read() == body[k], "after GC: " + k)
    print("ok: GC entries queued in range groups drained, live objects intact")

    # 8. delete everything, then the bucket
    for k in sorted(keys):
        s3.delete_object(Bucket=B, Key=k)
    expect(not s3.list_objects_v2(Bucket=B).get("Contents"), "bucket empty")
    wait_for("the GC queues to drain again", lambda: gc_queue() == 0, 60)
    s3.delete_bucket(Bucket=B)
    expect(B not in [b["Name"] for b in s3.list_buckets()["Buckets"]], "bucket gone")
    p = admin("range", "ls", "--bucket", B, check=False)
    expect(p.returncode != 0, "no ranges of a deleted bucket")
    expect(not [x for x in ranges()["ranges"] if x["bucket"] == B], "range rows dropped")
    try:
        s3.put_object(Bucket=B, Key="late", Body=b"x")
        fail("PUT into a deleted bucket succeeded")
    except s3.exceptions.ClientError as e:
        expect(e.response["Error"]["Code"] == "NoSuchBucket", "code %s" % e.response["Error"])
    # the name again: a new bucket, a new range
    s3.create_bucket(Bucket=B)
    s3.put_object(Bucket=B, Key="again", Body=b"1")
    expect([o["Key"] for o in s3.list_objects_v2(Bucket=B)["Contents"]] == ["again"],
           "a bucket made again starts empty")
    print("ok: everything deleted, DeleteBucket, a PUT after it is NoSuchBucket")
    print("PASS test_ranges")


if __name__ == "__main__":
    main()
