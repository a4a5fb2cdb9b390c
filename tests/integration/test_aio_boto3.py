#!/usr/bin/env python3
"""test_aio_boto3.py — iolake-aio driven by boto3 (Debian python3-boto3):
buckets and objects, metadata headers round-tripped, ranges, ListObjects
v1/v2 pagination with delimiters compared against a model, error codes;
then a wrong secret key, a tampered signature, an expired date and an
unknown access key each get the right S3 error and change nothing; a
user removed with iolake-admin is refused at once, long before the
gateway's 60 s credential TTL."""
import datetime, hashlib, os, random, re, subprocess, sys, time, urllib.request
from unittest import mock

import botocore.auth
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)


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


def model_list(keys, prefix, delim, after):
    """S3's listing: keys and common prefixes > after, in order."""
    out, seen = [], set()
    for k in sorted(keys):
        if not k.startswith(prefix):
            continue
        rest = k[len(prefix):]
        if delim and delim in rest:
            cp = prefix + rest[:rest.index(delim) + len(delim)]
            if cp not in seen:
                seen.add(cp)
                if cp > after:
                    out.append(("P", cp))
            continue
        if k > after:
            out.append(("K", k))
    return out


def list_all_v2(s3, prefix, delim, page):
    got, tok = [], None
    while True:
        kw = dict(Bucket="lst", Prefix=prefix, MaxKeys=page)
        if delim:
            kw["Delimiter"] = delim
        if tok:
            kw["ContinuationToken"] = tok
        r = s3.list_objects_v2(**kw)
        assert r["KeyCount"] == len(r.get("Contents", [])) + len(r.get("CommonPrefixes", []))
        page_items = [("K", c["Key"]) for c in r.get("Contents", [])] + \
                     [("P", p["Prefix"]) for p in r.get("CommonPrefixes", [])]
        got += sorted(page_items, key=lambda t: t[1])
        if not r["IsTruncated"]:
            return got
        tok = r["NextContinuationToken"]


def list_all_v1(s3, prefix, delim, page):
    got, marker = [], ""
    while True:
        kw = dict(Bucket="lst", Prefix=prefix, MaxKeys=page, Marker=marker)
        if delim:
            kw["Delimiter"] = delim
        r = s3.list_objects(**kw)
        items = [("K", c["Key"]) for c in r.get("Contents", [])] + \
                [("P", p["Prefix"]) for p in r.get("CommonPrefixes", [])]
        items.sort(key=lambda t: t[1])
        got += items
        if not r["IsTruncated"]:
            return got
        marker = r.get("NextMarker") or items[-1][1]


def main():
    aio = Aio()
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="bkt")
        expect(code(s3.create_bucket, Bucket="bkt"), "BucketAlreadyOwnedByYou", "create twice")
        expect(code(s3.head_bucket, Bucket="nob"), "404", "head missing bucket")
        expect(code(s3.delete_bucket, Bucket="nob"), "NoSuchBucket", "delete missing bucket")
        expect(code(s3.put_object, Bucket="nob", Key="k", Body=b"x"), "NoSuchBucket", "put to missing bucket")
        expect(code(s3.put_object, Bucket="bkt", Key="k" * 1025, Body=b"x"), "KeyTooLongError", "1025-byte key")

        # Objects and metadata.
        bodies = {}
        for size in (0, 1, 4096, 4097, 65536, 1 << 20, 3 * (1 << 20) + 17):
            b = os.urandom(size)
            k = "obj-%d" % size
            bodies[k] = b
            r = s3.put_object(Bucket="bkt", Key=k, Body=b, ContentType="application/x-iol",
                              ContentEncoding="identity", ContentDisposition='attachment; filename="a b"',
                              CacheControl="no-cache", Expires=datetime.datetime(2030, 1, 2, 3, 4, 5),
                              ContentLanguage="en", Metadata={"alpha": "one", "Beta-Two": "2 two"})
            expect(r["ETag"], '"%s"' % hashlib.md5(b).hexdigest(), "ETag of %d bytes" % size)
        for k, b in bodies.items():
            g = s3.get_object(Bucket="bkt", Key=k)
            assert g["Body"].read() == b, k
            assert g["ContentType"] == "application/x-iol"
            assert g["ContentEncoding"] == "identity"
            assert g["ContentDisposition"] == 'attachment; filename="a b"'
            assert g["CacheControl"] == "no-cache"
            assert g["ContentLanguage"] == "en"
            assert g["Expires"].year == 2030, g.get("Expires")
            assert g["Metadata"] == {"alpha": "one", "beta-two": "2 two"}, g["Metadata"]
            assert g["LastModified"].year >= 2024
            assert g["ResponseMetadata"]["HTTPHeaders"].get("x-amz-request-id")
            h = s3.head_object(Bucket="bkt", Key=k)
            assert h["ContentLength"] == len(b)
        print("ok: bodies, ETags and headers round-trip")

        # The six response-* overrides (signed requests), through boto3
        # and through a presigned URL; Last-Modified as RFC 1123 says.
        over = dict(ResponseContentType="text/x-over", ResponseContentLanguage="fr",
                    ResponseExpires=datetime.datetime(2031, 2, 3, 4, 5, 6),
                    ResponseCacheControl="max-age=7", ResponseContentDisposition="inline",
                    ResponseContentEncoding="gzip")
        for k in ("obj-4096", "obj-65536"):
            g = s3.get_object(Bucket="bkt", Key=k, **over)
            assert g["Body"].read() == bodies[k], k
            assert (g["ContentType"], g["ContentLanguage"], g["CacheControl"],
                    g["ContentDisposition"], g["ContentEncoding"]) == \
                ("text/x-over", "fr", "max-age=7", "inline", "gzip"), g
            assert g["Expires"].year == 2031, g.get("Expires")
            lm = g["ResponseMetadata"]["HTTPHeaders"]["last-modified"]
            assert re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d "
                                r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                                r"\d{4} \d\d:\d\d:\d\d GMT", lm), lm
            when = datetime.datetime.strptime(lm, "%a, %d %b %Y %H:%M:%S GMT")
            now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
            assert abs((now - when).total_seconds()) < 600, (lm, now)
        url = s3.generate_presigned_url("get_object", Params=dict(
            Bucket="bkt", Key="obj-4096", ResponseContentType="text/x-url"))
        with urllib.request.urlopen(url) as r:
            assert r.headers["Content-Type"] == "text/x-url", r.headers
            assert r.headers["Content-Language"] == "en", r.headers   # stored, not overridden
            assert r.read() == bodies["obj-4096"]
        print("ok: response-* overrides and Last-Modified")

        # Ranges.
        big = bodies["obj-%d" % (3 * (1 << 20) + 17)]
        n = len(big)
        for rng, lo, hi in (("bytes=0-0", 0, 0), ("bytes=5-1048580", 5, 1048580),
                            ("bytes=1048576-", 1048576, n - 1), ("bytes=-17", n - 17, n - 1),
                            ("bytes=%d-%d" % (n - 3, n + 100), n - 3, n - 1)):
            g = s3.get_object(Bucket="bkt", Key="obj-%d" % n, Range=rng)
            assert g["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
            assert g["ContentRange"] == "bytes %d-%d/%d" % (lo, hi, n), g["ContentRange"]
            assert g["Body"].read() == big[lo:hi + 1], rng
        g = s3.get_object(Bucket="bkt", Key="obj-4096", Range="bytes=100-199")
        assert g["Body"].read() == bodies["obj-4096"][100:200]
        expect(code(s3.get_object, Bucket="bkt", Key="obj-1", Range="bytes=1-"), "InvalidRange", "range past end")
        expect(code(s3.get_object, Bucket="bkt", Key="obj-0", Range="bytes=0-"), "InvalidRange", "range of empty")
        print("ok: ranges")

        expect(code(s3.get_object, Bucket="bkt", Key="nope"), "NoSuchKey", "get missing key")
        expect(code(s3.delete_bucket, Bucket="bkt"), "BucketNotEmpty", "delete non-empty bucket")
        s3.delete_object(Bucket="bkt", Key="nope")
        s3.delete_object(Bucket="bkt", Key="obj-1")
        expect(code(s3.get_object, Bucket="bkt", Key="obj-1"), "NoSuchKey", "get deleted key")
        s3.put_object(Bucket="bkt", Key="obj-65536", Body=b"overwritten")
        assert s3.get_object(Bucket="bkt", Key="obj-65536")["Body"].read() == b"overwritten"
        print("ok: overwrite and delete")

        # A GET's HeadObject is answered on the gateway's thread (the
        # root's only voter: meta/node_direct.c), right after its PUT.
        def direct_reads():
            text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
            m = re.search(r"^iolake_meta_direct_reads_total(?:\{[^}]*\})? (\d+)", text, re.M)
            assert m, "no iolake_meta_direct_reads_total"
            return int(m.group(1))
        d0 = direct_reads()
        for i in range(20):
            s3.put_object(Bucket="bkt", Key="direct", Body=b"v%d" % i)
            assert s3.get_object(Bucket="bkt", Key="direct")["Body"].read() == b"v%d" % i
        d1 = direct_reads()
        assert d1 - d0 >= 20, (d0, d1)
        print("ok: 20 PUT-then-GET, each GET's record read directly (%d direct reads)" % (d1 - d0))

        # Listings against a model.
        s3.create_bucket(Bucket="lst")
        keys = set()
        for i in range(120):
            parts = [rnd.choice("abc") for _ in range(rnd.randint(1, 3))]
            k = "/".join(parts) + "/k%03d" % i + rnd.choice(["", " sp", "+plus", "%pct", "é"])
            keys.add(k)
        for k in keys:
            s3.put_object(Bucket="lst", Key=k, Body=b"")
        for prefix in ("", "a/", "b/c", "zz"):
            for delim in ("", "/"):
                for page in (1, 7, 1000):
                    want = model_list(keys, prefix, delim, "")
                    got = list_all_v2(s3, prefix, delim, page)
                    assert got == want, ("v2", prefix, delim, page, got[:5], want[:5])
                    got = list_all_v1(s3, prefix, delim, page)
                    assert got == want, ("v1", prefix, delim, page, got[:5], want[:5])
        sa = sorted(keys)[40]
        r = s3.list_objects_v2(Bucket="lst", StartAfter=sa)
        assert [c["Key"] for c in r["Contents"]] == [k for k in sorted(keys) if k > sa]
        r = s3.list_objects_v2(Bucket="lst", EncodingType="url", Prefix="a/")
        # Asked explicitly, boto3 leaves the url-encoded keys as they came.
        from urllib.parse import unquote
        assert sorted(unquote(c["Key"]) for c in r["Contents"]) == sorted(k for k in keys if k.startswith("a/"))
        assert s3.list_objects_v2(Bucket="lst", MaxKeys=0)["KeyCount"] == 0
        # v2 lists owners only when asked (fetch-owner), v1 always.
        r = s3.list_objects_v2(Bucket="lst", MaxKeys=3)
        assert all("Owner" not in c for c in r["Contents"]), r["Contents"]
        r = s3.list_objects_v2(Bucket="lst", MaxKeys=3, FetchOwner=True)
        assert [c["Owner"].get("DisplayName") for c in r["Contents"]] == ["root"] * 3, r["Contents"]
        assert all(len(c["Owner"]["ID"]) == 64 for c in r["Contents"]), r["Contents"]
        r = s3.list_objects(Bucket="lst", MaxKeys=3)
        assert [c["Owner"].get("DisplayName") for c in r["Contents"]] == ["root"] * 3, r["Contents"]
        print("ok: ListObjectsV2 fetch-owner lists each object's owner")
        names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
        assert names == ["bkt", "lst"], names
        print("ok: ListObjects v1/v2 pagination, delimiters, start-after, url encoding match the model")

        # Authentication failures change nothing.
        before = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="bkt")["Contents"])
        bad = aio.client(sk="wrong-secret-key-wrong-secret-key-000")
        expect(code(bad.put_object, Bucket="bkt", Key="evil", Body=b"x"), "SignatureDoesNotMatch", "wrong secret")
        expect(code(bad.delete_object, Bucket="bkt", Key="obj-0"), "SignatureDoesNotMatch", "wrong secret delete")
        unknown = aio.client(ak="AKIAUNKNOWNUNKNOWN00")
        expect(code(unknown.put_object, Bucket="bkt", Key="evil", Body=b"x"), "InvalidAccessKeyId", "unknown key")
        tamper = aio.client()

        def flip(request, **kw):
            a = request.headers["Authorization"]
            if isinstance(a, bytes):
                a = a.decode()
            sig = a[a.rindex("=") + 1:]
            request.headers["Authorization"] = (a[:a.rindex("=") + 1] +
                                           ("0" if sig[0] != "0" else "1") + sig[1:])
        tamper.meta.events.register_last("before-send.s3", flip)
        expect(code(tamper.put_object, Bucket="bkt", Key="evil", Body=b"x"), "SignatureDoesNotMatch", "tampered signature")
        expect(code(tamper.delete_bucket, Bucket="lst"), "SignatureDoesNotMatch", "tampered signature delete")
        late = datetime.datetime.utcnow() - datetime.timedelta(minutes=20)

        class Skewed(datetime.datetime):
            @classmethod
            def utcnow(cls):
                return late
        old = aio.client()
        # Sign with a clock 20 minutes slow (botocore >= 1.33 reads it
        # through get_current_datetime, older ones through utcnow).
        if hasattr(botocore.auth, "get_current_datetime"):
            patch = mock.patch.object(botocore.auth, "get_current_datetime", lambda *a, **k: late)
        else:
            patch = mock.patch.object(botocore.auth.datetime, "datetime", Skewed)
        with patch:
            got = code(old.put_object, Bucket="bkt", Key="evil", Body=b"x")
        expect(got, "RequestTimeTooSkewed", "date 20 minutes off")
        after = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="bkt")["Contents"])
        assert before == after, (before, after)
        assert code(s3.head_object, Bucket="bkt", Key="evil") == "404"
        assert s3.head_bucket(Bucket="lst")
        print("ok: bad credentials and signatures rejected, listing unchanged")

        # Revocation: a user added and removed through meta (iolake-admin
        # against aio's meta member). Its key works, is then cached by the
        # gateway, and must stop working at once after `user rm`.
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        admin = [os.path.join(os.environ["IOLAKE_BUILD"], "iolake-admin"), "--meta", meta]
        out = subprocess.run(admin + ["user", "add", "revokee"], check=True,
                             capture_output=True, text=True).stdout
        kv = dict(l.split(":", 1) for l in out.splitlines() if ":" in l)
        rk = aio.client(ak=kv["access key"].strip(), sk=kv["secret key"].strip())
        expect(code(rk.list_buckets), "OK", "new user's key works")
        expect(code(rk.list_buckets), "OK", "new user's key works (cached)")
        subprocess.run(admin + ["user", "rm", "revokee"], check=True, capture_output=True)
        t0 = time.time()
        got = "OK"
        while got == "OK" and time.time() - t0 < 5:
            got = code(rk.list_buckets)
        expect(got, "InvalidAccessKeyId", "removed user's key")
        print("ok: revoked in %.2fs (credential TTL is 60 s)" % (time.time() - t0))

        rc, took = aio.stop()
        assert rc == 0 and took < 5, (rc, took)
        print("ok: SIGTERM exit %d in %.2fs" % (rc, took))
        print("PASS")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
