#!/usr/bin/env python3
"""test_s3_misc.py — iolake-aio driven by boto3 and by raw SigV4-signed
requests (botocore's signer) for what boto3 cannot express:

- DeleteObjects: verbose and quiet, missing keys count as Deleted, a
  too-long key is a per-key Error, 1,001 keys / malformed XML / DOCTYPE /
  too deep / oversize bodies are refused and delete nothing, Content-MD5
  is required and verified; the deleted objects' space comes back on the
  OSDs (iolake_osd_used_bytes).
- Conditionals: If-Match, If-None-Match, If-Modified-Since,
  If-Unmodified-Since on GET and HEAD, alone and in S3's precedence pairs;
  a 304 carries ETag and Last-Modified and no body; PUT If-None-Match: *
  and If-Match (refused PUTs leave the object and the OSDs' space as they
  were).
- Tagging: object tags (PutObject x-amz-tagging, Put/Get/Delete
  ObjectTagging, x-amz-tagging-count), their limits (InvalidTag), tags
  survive nothing but themselves (the data is still readable after a tag
  change, an overwrite clears them); bucket tags and NoSuchTagSet.
- A race of tag changes against overwrites of an erasure-coded object:
  the survivor reads back whole (no tag change deleted shards it needs)
  and, once deleted, the OSDs hold nothing (no version leaked).
- Ranges: bytes=a-b, a-, -n, past the end (416), multiple ranges (S3
  answers the whole object, 200).
- If-Range (raw requests: boto3 has no parameter for it) on an
  erasure-coded and an inline object: a matching strong ETag or exact
  Last-Modified serves the Range (206), a stale ETag, another date, a weak
  ETag or garbage the whole object (200, no Content-Range); ignored
  without Range; If-Match / If-None-Match are decided before it.
- Storage classes: STANDARD (the store's one) is accepted on PutObject,
  CreateMultipartUpload and CopyObject and listed; GLACIER, STANDARD_IA,
  REDUCED_REDUNDANCY or garbage are InvalidStorageClass there and store
  nothing; a copy onto itself naming STANDARD is allowed, one naming
  STANDARD_IA (rclone's settier) is InvalidStorageClass, not the
  copy-onto-itself error.
Prints the time of one 1,000-key DeleteObjects (a figure, not asserted)."""
import base64, concurrent.futures, datetime, hashlib, http.client, os, re, sys, threading, time, urllib.request

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402

B = "misc"


def put_cond(s3, **kw):
    """put_object with If-None-Match / If-Match, which Debian's botocore
    (1.29) does not model: sent as headers through a one-shot hook (added
    before signing, so they are signed like boto3 >= 1.35 signs them)."""
    extra = {}
    for arg, name in (("IfNoneMatch", "If-None-Match"), ("IfMatch", "If-Match")):
        if arg in kw:
            extra[name] = kw.pop(arg)

    def hook(params, **_):
        params["headers"].update(extra)
    s3.meta.events.register("before-call.s3.PutObject", hook)
    try:
        return s3.put_object(**kw)
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", hook)


def code(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got)


class Raw:
    """Requests signed with botocore's SigV4 signer, sent with http.client."""

    def __init__(self, aio):
        self.aio = aio
        self.signer = S3SigV4Auth(Credentials(AK, SK), "s3", "us-east-1")

    def __call__(self, method, path, body=b"", headers=None, md5=True):
        url = self.aio.ep + path
        req = AWSRequest(method=method, url=url, data=body, headers=dict(headers or {}))
        if md5 and body:
            req.headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
        req.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
        self.signer.add_auth(req)
        p = req.prepare()
        conn = http.client.HTTPConnection("127.0.0.1", self.aio.port, timeout=30)
        conn.request(method, p.url[len(self.aio.ep):], body=body, headers=dict(p.headers))
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def err_code(data):
    m = re.search(rb"<Code>([^<]*)</Code>", data)
    return m.group(1).decode() if m else None


def used_bytes(aio):
    text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
    vals = [float(l.split()[-1]) for l in text.splitlines() if l.startswith("iolake_osd_used_bytes{")]
    assert vals, "no iolake_osd_used_bytes in /metrics"
    return sum(vals)


def wait_used(aio, want, what, limit=10.0, above=False):
    """Poll the gauges (the OSDs refresh them on a timer) until the sum is
    want (or above it)."""
    t0 = time.time()
    while True:
        got = used_bytes(aio)
        if (got > want) if above else (got == want):
            print("ok: %s: OSD used bytes %d" % (what, got))
            return
        if time.time() - t0 > limit:
            raise AssertionError("%s: OSD used bytes %d, want %s%d" % (what, got, "> " if above else "", want))
        time.sleep(0.1)


def keys_of(s3):
    r = s3.list_objects_v2(Bucket=B)
    return sorted(c["Key"] for c in r.get("Contents", []))


def delete_xml(keys, quiet=False):
    x = "<Delete>" + ("<Quiet>true</Quiet>" if quiet else "")
    x += "".join("<Object><Key>%s</Key></Object>" % k for k in keys)
    return (x + "</Delete>").encode()


def test_delete_objects(aio, s3, raw):
    base = used_bytes(aio)
    names = ["d/%03d" % i for i in range(40)]
    for i, k in enumerate(names):  # half inline, half in the OSDs' data areas (shards > 64 KiB)
        s3.put_object(Bucket=B, Key=k, Body=os.urandom(100 if i % 2 else 300000))
    wait_used(aio, base, "after the PUTs", above=True)
    # Verbose: 20 present + 2 missing, all Deleted.
    r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in names[:20] + ["d/x", "d/y"]]})
    expect(sorted(d["Key"] for d in r["Deleted"]), sorted(names[:20] + ["d/x", "d/y"]), "verbose Deleted")
    expect(r.get("Errors", []), [], "verbose Errors")
    expect([k for k in keys_of(s3) if k.startswith("d/")], names[20:], "listing after delete")
    # Quiet: only errors are reported; a 1,025-byte key is one.
    long_key = "L" * 1025
    r = s3.delete_objects(Bucket=B, Delete={"Quiet": True, "Objects": [{"Key": k} for k in names[20:30] + [long_key]]})
    expect(r.get("Deleted", []), [], "quiet reports no Deleted")
    expect([(len(e["Key"]), e["Code"]) for e in r.get("Errors", [])], [(1025, "KeyTooLongError")], "quiet Errors")
    expect([k for k in keys_of(s3) if k.startswith("d/")], names[30:], "listing after quiet delete")

    # Refused requests delete nothing.
    left = names[30:]
    before = keys_of(s3)
    expect(code(s3.delete_objects, Bucket=B, Delete={"Objects": [{"Key": "k%d" % i} for i in range(1001)]}),
           "MalformedXML", "1,001 keys")
    expect(code(s3.delete_objects, Bucket="nobucket", Delete={"Objects": [{"Key": "a"}]}),
           "NoSuchBucket", "DeleteObjects on a missing bucket")
    body = delete_xml(left)
    st, _, data = raw("POST", "/%s?delete" % B, body, md5=False)
    expect((st, err_code(data)), (400, "InvalidRequest"), "DeleteObjects without Content-MD5")
    bad_md5 = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    st, _, data = raw("POST", "/%s?delete" % B, body, {"Content-MD5": bad_md5}, md5=False)
    expect((st, err_code(data)), (400, "BadDigest"), "DeleteObjects with a wrong Content-MD5")
    hostile = {
        "not well-formed": b"<Delete><Object><Key>" + left[0].encode() + b"</Key></Object>",
        "wrong root": b"<Remove><Object><Key>" + left[0].encode() + b"</Key></Object></Remove>",
        "no keys": b"<Delete><Quiet>true</Quiet></Delete>",
        "Object without Key": b"<Delete><Object></Object></Delete>",
        "empty body": b"",
        "too deep": b"<Delete>" + b"<a>" * 20 + b"</a>" * 20 + b"</Delete>",
        "DOCTYPE entity": b'<?xml version="1.0"?><!DOCTYPE Delete [<!ENTITY k "' + left[0].encode() +
                          b'">]><Delete><Object><Key>&k;</Key></Object></Delete>',
        "billion laughs": b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                          b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
                          b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
                          b'<Delete><Object><Key>&lol3;</Key></Object></Delete>',
        "external entity": b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                           b'<Delete><Object><Key>&x;</Key></Object></Delete>',
    }
    for what, x in hostile.items():
        st, _, data = raw("POST", "/%s?delete" % B, x, md5=bool(x), headers={} if x else
                          {"Content-MD5": base64.b64encode(hashlib.md5(b"").digest()).decode()})
        expect((st, err_code(data)), (400, "MalformedXML"), "DeleteObjects, " + what)
    huge = delete_xml(["k" * 1000] * 2200)  # > 2 MiB
    st, _, data = raw("POST", "/%s?delete" % B, huge)
    expect((st, err_code(data)), (400, "MaxMessageLengthExceeded"), "DeleteObjects body over 2 MiB")
    expect(keys_of(s3), before, "nothing deleted by the refused requests")

    # 1,000 keys in one request, every 4th present (timed, for the
    # record; creating all 1,000 costs boto3 more than the test budget).
    many = ["m/%04d" % i for i in range(1000)]
    clients = threading.local()

    def put_one(k):
        if not hasattr(clients, "s3"):
            clients.s3 = aio.client()
        clients.s3.put_object(Bucket=B, Key=k, Body=b"x")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(put_one, many[::4]))
    t0 = time.time()
    r = s3.delete_objects(Bucket=B, Delete={"Quiet": True, "Objects": [{"Key": k} for k in many]})
    took = time.time() - t0
    expect((r.get("Deleted", []), r.get("Errors", [])), ([], []), "quiet delete of 1,000 keys")
    expect([k for k in keys_of(s3) if k.startswith("m/")], [], "1,000 keys gone")
    print("figure: DeleteObjects of 1,000 keys (250 present, inline): %.3f s (%.0f keys/s)" % (took, 1000 / took))

    # The rest, then the space is back on every OSD.
    r = s3.delete_objects(Bucket=B, Delete={"Objects": [{"Key": k} for k in left]})
    expect(len(r["Deleted"]), len(left), "last DeleteObjects")
    wait_used(aio, base, "after DeleteObjects")


def test_conditionals(aio, s3, raw):
    body = os.urandom(10000)
    etag = s3.put_object(Bucket=B, Key="c", Body=body)["ETag"]
    lm = s3.head_object(Bucket=B, Key="c")["LastModified"]
    past, future = lm - datetime.timedelta(seconds=10), lm + datetime.timedelta(seconds=10)
    G = lambda **kw: code(s3.get_object, Bucket=B, Key="c", **kw)  # noqa: E731
    H = lambda **kw: code(s3.head_object, Bucket=B, Key="c", **kw)  # noqa: E731
    expect(G(IfMatch=etag), "OK", "GET If-Match same")
    expect(G(IfMatch='"0000"'), "PreconditionFailed", "GET If-Match other")
    expect(H(IfMatch='"0000"'), "412", "HEAD If-Match other")
    expect(G(IfNoneMatch=etag), "304", "GET If-None-Match same")
    expect(H(IfNoneMatch=etag), "304", "HEAD If-None-Match same")
    expect(G(IfNoneMatch='"0000"'), "OK", "GET If-None-Match other")
    expect(G(IfModifiedSince=past), "OK", "GET If-Modified-Since past")
    expect(G(IfModifiedSince=lm), "304", "GET If-Modified-Since = Last-Modified")
    expect(G(IfModifiedSince=future), "304", "GET If-Modified-Since future")
    expect(G(IfUnmodifiedSince=future), "OK", "GET If-Unmodified-Since future")
    expect(G(IfUnmodifiedSince=past), "PreconditionFailed", "GET If-Unmodified-Since past")
    expect(H(IfUnmodifiedSince=past), "412", "HEAD If-Unmodified-Since past")
    # S3's documented precedence pairs.
    expect(G(IfMatch=etag, IfUnmodifiedSince=past), "OK", "If-Match true + If-Unmodified-Since false")
    expect(G(IfNoneMatch=etag, IfModifiedSince=past), "304", "If-None-Match false + If-Modified-Since true")
    expect(G(IfNoneMatch='"0000"', IfModifiedSince=future), "OK", "If-None-Match true + If-Modified-Since false")
    g = s3.get_object(Bucket=B, Key="c", IfMatch=etag, IfModifiedSince=past)
    assert g["Body"].read() == body
    # A 304 has the validators and no body.
    st, h, data = raw("GET", "/%s/c" % B, headers={"If-None-Match": etag})
    expect((st, h.get("etag"), data), (304, etag, b""), "304 with ETag, no body")
    assert h.get("last-modified"), h
    # A missing key is still 404, whatever the conditions.
    expect(code(s3.get_object, Bucket=B, Key="nope", IfMatch=etag), "NoSuchKey", "conditional GET of a missing key")

    # PUT If-None-Match: * and If-Match.
    base = used_bytes(aio)
    expect(code(put_cond, s3, Bucket=B, Key="c", Body=os.urandom(400000), IfNoneMatch="*"),
           "PreconditionFailed", "PUT If-None-Match: * over an object")
    expect(code(put_cond, s3, Bucket=B, Key="c", Body=b"x", IfMatch='"0000"'),
           "PreconditionFailed", "PUT If-Match other")
    expect(code(put_cond, s3, Bucket=B, Key="c-new", Body=b"x", IfMatch=etag), "NoSuchKey",
           "PUT If-Match on a missing key")
    expect(s3.get_object(Bucket=B, Key="c")["Body"].read() == body, True, "object unchanged by refused PUTs")
    expect(code(s3.head_object, Bucket=B, Key="c-new"), "404", "no object from a refused PUT")
    time.sleep(1.5)  # past one refresh of the OSDs' gauges (1 s), so a leak would show
    wait_used(aio, base, "after refused conditional PUTs")
    st, _, data = raw("PUT", "/%s/c" % B, b"y", {"If-None-Match": etag})
    expect((st, err_code(data)), (501, "NotImplemented"), "PUT If-None-Match other than *")
    expect(code(put_cond, s3, Bucket=B, Key="c-star", Body=b"1", IfNoneMatch="*"), "OK",
           "PUT If-None-Match: * creates")
    expect(code(put_cond, s3, Bucket=B, Key="c-star", Body=b"2", IfNoneMatch="*"), "PreconditionFailed",
           "PUT If-None-Match: * second time")
    expect(s3.get_object(Bucket=B, Key="c-star")["Body"].read(), b"1", "first create kept")
    new = put_cond(s3, Bucket=B, Key="c", Body=b"replaced", IfMatch=etag)["ETag"]
    expect(new, '"%s"' % hashlib.md5(b"replaced").hexdigest(), "PUT If-Match same replaces")


def tags(s3, key):
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=B, Key=key)["TagSet"]}


def tagset(d):
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def test_tagging(aio, s3, raw):
    big = os.urandom(300000)
    s3.put_object(Bucket=B, Key="t", Body=big, Tagging="project=blue%20sky&team=a+b&empty=")
    expect(tags(s3, "t"), {"project": "blue sky", "team": "a b", "empty": ""}, "x-amz-tagging on PUT")
    h = s3.head_object(Bucket=B, Key="t")
    expect(h["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count"), "3", "HEAD x-amz-tagging-count")
    g = s3.get_object(Bucket=B, Key="t")
    expect(g.get("TagCount"), 3, "GET TagCount")
    assert g["Body"].read() == big
    etag, lm = h["ETag"], h["LastModified"]

    s3.put_object_tagging(Bucket=B, Key="t", Tagging=tagset({"k%d" % i: "v" * 256 for i in range(10)}))
    expect(len(tags(s3, "t")), 10, "ten tags")
    h = s3.head_object(Bucket=B, Key="t")
    expect((h["ETag"], h["LastModified"]), (etag, lm), "tagging keeps ETag and Last-Modified")
    expect(s3.get_object(Bucket=B, Key="t")["Body"].read() == big, True, "data intact after tag change")

    bad = {
        "eleven tags": tagset({"k%d" % i: "v" for i in range(11)}),
        "129-char key": tagset({"k" * 129: "v"}),
        "257-char value": tagset({"k": "v" * 257}),
        "duplicate keys": {"TagSet": [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]},
        "aws: key": tagset({"aws:x": "v"}),
    }
    for what, ts in bad.items():
        expect(code(s3.put_object_tagging, Bucket=B, Key="t", Tagging=ts), "InvalidTag", "PutObjectTagging " + what)
    expect(code(s3.put_object, Bucket=B, Key="t2", Body=b"x",
                Tagging="&".join("k%d=v" % i for i in range(11))), "InvalidTag", "PUT with 11 tags")
    expect(code(s3.head_object, Bucket=B, Key="t2"), "404", "no object from a refused tagged PUT")
    for what, x in {
        "not well-formed": b"<Tagging><TagSet><Tag><Key>a</Key>",
        "Tag without Value": b"<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>",
        "DOCTYPE": b'<!DOCTYPE t [<!ENTITY e "x">]><Tagging><TagSet><Tag><Key>&e;</Key>'
                   b'<Value>v</Value></Tag></TagSet></Tagging>',
        "too deep": b"<Tagging><TagSet>" + b"<a>" * 20 + b"</a>" * 20 + b"</TagSet></Tagging>",
    }.items():
        st, _, data = raw("PUT", "/%s/t?tagging" % B, x)
        expect((st, err_code(data)), (400, "MalformedXML"), "PutObjectTagging " + what)
    st, _, data = raw("PUT", "/%s/t?tagging" % B, b"<Tagging><TagSet>" + b" " * 70000 + b"</TagSet></Tagging>")
    expect((st, err_code(data)), (400, "MaxMessageLengthExceeded"), "PutObjectTagging body over 64 KiB")
    expect(len(tags(s3, "t")), 10, "tags unchanged by refused requests")

    expect(code(s3.get_object_tagging, Bucket=B, Key="nope"), "NoSuchKey", "GetObjectTagging missing key")
    expect(code(s3.put_object_tagging, Bucket=B, Key="nope", Tagging=tagset({"a": "b"})), "NoSuchKey",
           "PutObjectTagging missing key")
    expect(code(s3.get_object_tagging, Bucket="nobucket", Key="t"), "NoSuchBucket",
           "GetObjectTagging missing bucket")
    s3.delete_object_tagging(Bucket=B, Key="t")
    expect(tags(s3, "t"), {}, "DeleteObjectTagging")
    expect("x-amz-tagging-count" in s3.head_object(Bucket=B, Key="t")["ResponseMetadata"]["HTTPHeaders"],
           False, "no x-amz-tagging-count without tags")
    s3.put_object_tagging(Bucket=B, Key="t", Tagging=tagset({"a": "1"}))
    s3.put_object(Bucket=B, Key="t", Body=b"new")
    expect(tags(s3, "t"), {}, "an overwrite clears the tags")

    # Bucket tagging.
    expect(code(s3.get_bucket_tagging, Bucket=B), "NoSuchTagSet", "GetBucketTagging without tags")
    s3.put_bucket_tagging(Bucket=B, Tagging=tagset({"cost": "c1", "env": "test"}))
    got = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=B)["TagSet"]}
    expect(got, {"cost": "c1", "env": "test"}, "GetBucketTagging")
    s3.put_bucket_tagging(Bucket=B, Tagging=tagset({"b%d" % i: "" for i in range(50)}))
    expect(len(s3.get_bucket_tagging(Bucket=B)["TagSet"]), 50, "fifty bucket tags")
    expect(code(s3.put_bucket_tagging, Bucket=B, Tagging=tagset({"b%d" % i: "" for i in range(51)})),
           "InvalidTag", "51 bucket tags")
    expect(code(s3.put_bucket_tagging, Bucket="nobucket", Tagging=tagset({"a": "b"})), "NoSuchBucket",
           "PutBucketTagging missing bucket")
    s3.delete_bucket_tagging(Bucket=B)
    expect(code(s3.get_bucket_tagging, Bucket=B), "NoSuchTagSet", "DeleteBucketTagging")


def test_tag_race(aio, s3):
    """Tag changes racing overwrites: a SetObjectTags conditioned on the
    generation it read never lands on a newer version, and never frees
    shards; every replaced version's shards are freed by its replacer."""
    time.sleep(1.5)  # the gauges settle after the tagging test's overwrites
    base = used_bytes(aio)
    s3.put_object(Bucket=B, Key="race", Body=os.urandom(300000))
    stop = threading.Event()
    errors = []

    def tagger():
        s3t = aio.client()
        i = 0
        while not stop.is_set():
            try:
                s3t.put_object_tagging(Bucket=B, Key="race", Tagging=tagset({"n": str(i)}))
            except ClientError as e:
                errors.append(e.response["Error"]["Code"])
            i += 1

    th = threading.Thread(target=tagger)
    th.start()
    try:
        for _ in range(15):
            s3.put_object(Bucket=B, Key="race", Body=os.urandom(300000))
    finally:
        stop.set()
        th.join()
    expect(errors, [], "tag changes racing overwrites all succeed")
    g = s3.get_object(Bucket=B, Key="race")
    data = g["Body"].read()
    expect('"%s"' % hashlib.md5(data).hexdigest(), g["ETag"], "survivor reads back whole")
    s3.delete_object(Bucket=B, Key="race")
    time.sleep(1.5)  # past one refresh of the OSDs' gauges
    wait_used(aio, base, "after the race and the delete")


def test_ranges(s3, raw):
    body = os.urandom(100000)
    s3.put_object(Bucket=B, Key="r", Body=body)
    n = len(body)
    for rng, lo, hi in (("bytes=0-0", 0, 0), ("bytes=10-99", 10, 99), ("bytes=99990-", 99990, n - 1),
                        ("bytes=-10", n - 10, n - 1), ("bytes=-200000", 0, n - 1),
                        ("bytes=99000-200000", 99000, n - 1)):
        g = s3.get_object(Bucket=B, Key="r", Range=rng)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        expect(g["ContentRange"], "bytes %d-%d/%d" % (lo, hi, n), "Content-Range of " + rng)
        assert g["Body"].read() == body[lo:hi + 1], rng
    expect(code(s3.get_object, Bucket=B, Key="r", Range="bytes=100000-"), "InvalidRange", "range past the end")
    expect(code(s3.get_object, Bucket=B, Key="r", Range="bytes=-0"), "InvalidRange", "empty suffix range")
    st, h, data = raw("GET", "/%s/r" % B, headers={"Range": "bytes=200000-300000"})
    expect((st, err_code(data), h.get("content-range")), (416, "InvalidRange", "bytes */%d" % n),
           "416 names the size")
    # HEAD with a Range: as S3, 206 and the range's length (no body).
    hd = s3.head_object(Bucket=B, Key="r", Range="bytes=10-19")
    hh = hd["ResponseMetadata"]["HTTPHeaders"]  # botocore 1.29 models no ContentRange here
    expect((hd["ResponseMetadata"]["HTTPStatusCode"], hd["ContentLength"], hh.get("content-range")),
           (206, 10, "bytes 10-19/%d" % n), "HEAD with a Range")
    hd = s3.head_object(Bucket=B, Key="r")
    expect((hd["ResponseMetadata"]["HTTPStatusCode"], hd["ContentLength"],
            hd["ResponseMetadata"]["HTTPHeaders"].get("content-range")),
           (200, n, None), "HEAD without a Range")
    # Several ranges, or one S3 cannot parse: the whole object, 200.
    for rng in ("bytes=0-9,20-29", "bytes=5-2", "items=0-9"):
        g = s3.get_object(Bucket=B, Key="r", Range=rng)
        expect((g["ResponseMetadata"]["HTTPStatusCode"], g["Body"].read() == body), (200, True),
               "whole object for " + rng)


def test_if_range(s3, raw):
    """If-Range (no boto3 parameter: raw signed requests): a matching
    strong ETag or exact Last-Modified serves the Range (206), anything
    else the whole object (200, no Content-Range); the other conditionals
    are decided first."""
    etags = {}
    for key, n in (("ir", 100000), ("ir-inline", 1000)):
        body = os.urandom(n)
        etag = etags[key] = s3.put_object(Bucket=B, Key=key, Body=body)["ETag"]
        st, h, _ = raw("HEAD", "/%s/%s" % (B, key))
        lm = h["last-modified"]
        lm_dt = datetime.datetime.strptime(lm, "%a, %d %b %Y %H:%M:%S GMT")
        http_date = lambda dt: dt.strftime("%a, %d %b %Y %H:%M:%S GMT")  # noqa: E731
        path = "/%s/%s" % (B, key)

        def get(hdrs):
            st, h, data = raw("GET", path, headers=hdrs)
            return st, h.get("content-range"), len(data), hashlib.md5(data).hexdigest()

        md5 = lambda b: hashlib.md5(b).hexdigest()  # noqa: E731
        part = (206, "bytes 10-99/%d" % n, 90, md5(body[10:100]))
        whole = (200, None, n, md5(body))
        rng = {"Range": "bytes=10-99"}
        for what, hdrs, want in (
                ("matching ETag", {"If-Range": etag}, part),
                ("stale ETag", {"If-Range": '"%s"' % ("0" * 32)}, whole),
                ("matching Last-Modified", {"If-Range": lm}, part),
                ("older date", {"If-Range": http_date(lm_dt - datetime.timedelta(seconds=1))}, whole),
                ("later date", {"If-Range": http_date(lm_dt + datetime.timedelta(seconds=1))}, whole),
                ("weak ETag", {"If-Range": "W/" + etag}, whole),
                ("garbage", {"If-Range": "not-a-validator"}, whole)):
            expect(get(dict(rng, **hdrs)), want, "%s If-Range %s" % (key, what))
        expect(get({"If-Range": etag}), whole, key + " If-Range without Range")
        # An unsatisfiable Range: 416 only when If-Range lets it stand.
        st, h, data = raw("GET", path, headers={"Range": "bytes=%d-" % (n + 10), "If-Range": etag})
        expect((st, err_code(data)), (416, "InvalidRange"), key + " matching If-Range, range past the end")
        expect(get({"Range": "bytes=%d-" % (n + 10), "If-Range": '"%s"' % ("0" * 32)}), whole,
               key + " stale If-Range, range past the end: the whole object")
        # Preconditions come first (RFC 7232 section 6).
        st, _, data = raw("GET", path, headers=dict(rng, **{"If-Range": etag, "If-Match": '"0000"'}))
        expect((st, err_code(data)), (412, "PreconditionFailed"), key + " If-Match false wins over If-Range")
        st, _, data = raw("GET", path, headers=dict(rng, **{"If-Range": '"0000"', "If-None-Match": etag}))
        expect((st, data), (304, b""), key + " If-None-Match false wins over If-Range")
        expect(get(dict(rng, **{"If-Range": etag, "If-Match": etag})), part,
               key + " If-Match true + If-Range match")
    # The resumable-download case: the object changed under the client.
    new = os.urandom(100000)
    s3.put_object(Bucket=B, Key="ir", Body=new)
    st, h, data = raw("GET", "/%s/ir" % B, headers={"Range": "bytes=500-", "If-Range": etags["ir"]})
    expect((st, h.get("content-range"), data == new), (200, None, True),
           "If-Range with the ETag before an overwrite: the new object whole")


def test_storage_class(s3):
    expect(code(s3.put_object, Bucket=B, Key="sc", Body=b"x", StorageClass="STANDARD"), "OK",
           "PUT with STANDARD")
    listed = s3.list_objects_v2(Bucket=B, Prefix="sc")["Contents"]
    expect([(o["Key"], o["StorageClass"]) for o in listed], [("sc", "STANDARD")], "listed STANDARD")
    for cls in ("GLACIER", "STANDARD_IA", "REDUCED_REDUNDANCY", "standard", "NOPE"):
        expect(code(s3.put_object, Bucket=B, Key="sc-" + cls, Body=b"x", StorageClass=cls),
               "InvalidStorageClass", "PUT with %s" % cls)
        expect(code(s3.head_object, Bucket=B, Key="sc-" + cls), "404", "nothing stored for %s" % cls)
    expect(code(s3.create_multipart_upload, Bucket=B, Key="sc-mpu", StorageClass="DEEP_ARCHIVE"),
           "InvalidStorageClass", "CreateMultipartUpload with DEEP_ARCHIVE")
    expect(s3.list_multipart_uploads(Bucket=B, Prefix="sc-mpu").get("Uploads", []), [],
           "no upload begun")
    up = s3.create_multipart_upload(Bucket=B, Key="sc-mpu", StorageClass="STANDARD")
    s3.abort_multipart_upload(Bucket=B, Key="sc-mpu", UploadId=up["UploadId"])
    expect(code(s3.copy_object, Bucket=B, Key="sc-copy", CopySource={"Bucket": B, "Key": "sc"},
                StorageClass="ONEZONE_IA"), "InvalidStorageClass", "CopyObject to ONEZONE_IA")
    expect(code(s3.copy_object, Bucket=B, Key="sc", CopySource={"Bucket": B, "Key": "sc"},
                StorageClass="STANDARD_IA"), "InvalidStorageClass",
           "a copy onto itself to STANDARD_IA (rclone settier)")
    expect(code(s3.copy_object, Bucket=B, Key="sc", CopySource={"Bucket": B, "Key": "sc"},
                StorageClass="STANDARD"), "OK", "a copy onto itself naming STANDARD")
    expect(code(s3.copy_object, Bucket=B, Key="sc", CopySource={"Bucket": B, "Key": "sc"}),
           "InvalidRequest", "a copy onto itself changing nothing")
    expect(s3.get_object(Bucket=B, Key="sc")["Body"].read(), b"x", "the object as it was")


def main():
    aio = Aio()
    try:
        aio.start()
        s3 = aio.client()
        raw = Raw(aio)
        s3.create_bucket(Bucket=B)
        for name, fn, args in (("DeleteObjects", test_delete_objects, (aio, s3, raw)),
                               ("conditionals", test_conditionals, (aio, s3, raw)),
                               ("tagging", test_tagging, (aio, s3, raw)),
                               ("tag race", test_tag_race, (aio, s3)),
                               ("ranges", test_ranges, (s3, raw)),
                               ("If-Range", test_if_range, (s3, raw)),
                               ("storage classes", test_storage_class, (s3,))):
            t0 = time.time()
            fn(*args)
            print("section %s: %.1f s" % (name, time.time() - t0))
        print("PASS")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
