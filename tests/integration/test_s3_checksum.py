#!/usr/bin/env python3
"""test_s3_checksum.py — S3 additional checksums and streaming uploads on
iolake-aio, with boto3 and with requests built and signed here (s3sign.py):

- x-amz-checksum-{crc32,crc32c,sha1,sha256,crc64nvme} headers on plain
  PUTs, small (inline) and erasure-coded: stored, echoed, returned by
  GET/HEAD with x-amz-checksum-mode: ENABLED (not on a range) and by
  GetObjectAttributes; a wrong value -> BadDigest and no object (a
  replaced object keeps its old body); bad Content-MD5 likewise, and a
  wrong x-amz-content-sha256 -> XAmzContentSHA256Mismatch;
  malformed or doubled checksum headers -> InvalidRequest.
- STREAMING-AWS4-HMAC-SHA256-PAYLOAD: a good upload is stored; a bad
  chunk signature in the middle (after earlier chunks were accepted) ->
  SignatureDoesNotMatch, object absent.
- STREAMING-UNSIGNED-PAYLOAD-TRAILER and
  STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER with each trailing checksum:
  right -> stored and returned; wrong -> BadDigest, object absent; a
  spoiled trailer signature -> SignatureDoesNotMatch.
- Space: failed streaming uploads of several MiB (bad chunk signature,
  wrong trailing checksum) leave the sum of iolake_osd_used_bytes over
  the OSDs (gateway /metrics) where it was; a good one of the same size
  does raise it (so the metric sees such uploads)."""
import base64, hashlib, os, random, re, sys, time, urllib.request

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402
import s3sign  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
ALGOS = ["crc32", "crc32c", "sha1", "sha256", "crc64nvme"]
BUCKET = "cks"


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got)


def absent(s3, key):
    try:
        s3.head_object(Bucket=BUCKET, Key=key)
    except ClientError as e:
        return e.response["Error"]["Code"] in ("404", "NoSuchKey")
    return False


class Raw:
    """Hand-built requests against the aio."""

    def __init__(self, aio):
        self.port = aio.port
        self.host = "127.0.0.1:%d" % aio.port
        self.sg = s3sign.Signer(AK, SK)

    def put(self, key, data, headers=None, payload="UNSIGNED-PAYLOAD"):
        path = "/%s/%s" % (BUCKET, key)
        h = {"host": self.host}
        h.update(headers or {})
        h, _, _ = self.sg.sign_headers("PUT", path, h, payload)
        h["content-length"] = str(len(data))
        return s3sign.request(self.port, "PUT", path, h, data)

    def get(self, key, headers=None, method="GET", query=None):
        path = "/%s/%s" % (BUCKET, key)
        h = {"host": self.host}
        h.update(headers or {})
        h, _, _ = self.sg.sign_headers(method, path, h, s3sign.EMPTY_SHA, query=query)
        if query:
            path += "?" + "&".join(k + ("=" + v if v else "") for k, v in query.items())
        return s3sign.request(self.port, method, path, h)

    def stream(self, key, data, **kw):
        path = "/%s/%s" % (BUCKET, key)
        h, b = s3sign.streaming_put(self.sg, self.host, path, data, **kw)
        return s3sign.request(self.port, "PUT", path, h, b)


def check_stored(raw, s3, key, data, algo):
    """GET/HEAD with checksum mode return the value; GetObjectAttributes
    too; the bytes are the ones sent."""
    want = s3sign.checksum(algo, data)
    st, h, b = raw.get(key, {"x-amz-checksum-mode": "ENABLED"})
    assert st == 200 and b == data, (st, len(b), len(data))
    assert h.get("x-amz-checksum-" + algo) == want, (algo, h)
    assert h.get("x-amz-checksum-type") == "FULL_OBJECT", h
    st, h, _ = raw.get(key, {"x-amz-checksum-mode": "ENABLED"}, method="HEAD")
    assert st == 200 and h.get("x-amz-checksum-" + algo) == want, (st, h)
    # Without the mode: no checksum header.
    st, h, _ = raw.get(key)
    assert st == 200 and "x-amz-checksum-" + algo not in h, h
    # A range never carries the object's checksum.
    if len(data) > 10:
        st, h, b = raw.get(key, {"x-amz-checksum-mode": "ENABLED", "range": "bytes=1-9"})
        assert st == 206 and b == data[1:10] and not any(k.startswith("x-amz-checksum-crc")
                                                         or k.startswith("x-amz-checksum-sha")
                                                         for k in h), h
    # GetObjectAttributes over the wire (Debian's botocore 1.29 models
    # neither CRC64NVME nor every field, so the XML is read here).
    st, h, b = raw.get(key, {"x-amz-object-attributes":
                             "ETag,Checksum,ObjectSize,StorageClass,ObjectParts"},
                       query={"attributes": ""})
    assert st == 200, (st, b)
    x = b.decode()
    assert "<ObjectSize>%d</ObjectSize>" % len(data) in x, x
    assert "<StorageClass>STANDARD</StorageClass>" in x, x
    assert "<ObjectParts>" not in x, x
    name = "Checksum" + algo.upper()
    assert "<%s>%s</%s>" % (name, want, name) in x, (x, want)
    if algo != "crc64nvme":  # botocore parses the rest of the shape
        at = s3.get_object_attributes(Bucket=BUCKET, Key=key,
                                      ObjectAttributes=["ETag", "Checksum", "ObjectSize",
                                                        "StorageClass"])
        assert at["ObjectSize"] == len(data) and at["Checksum"][name] == want, (at, want)


def used_bytes(aio):
    text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
    vals = re.findall(r'^iolake_osd_used_bytes\{osd="\d+"\} (\d+)$', text, re.M)
    assert len(vals) >= 6, text[:500]
    return sum(int(v) for v in vals)


REFRESH = 1.2  # the OSDs refresh their gauges every second


def settle(aio, until=None, limit=15.0):
    """Poll the used-bytes sum until until(value) holds, or, with until
    None, until it has not moved for 2.5 s (deletes of earlier uploads are
    asynchronous); returns the last value. Only values read at least one
    gauge refresh after the call count (an older one may predate what the
    caller just did)."""
    time.sleep(REFRESH)
    end = time.time() + limit
    last, since = used_bytes(aio), time.time()
    while time.time() < end:
        if until and until(last):
            return last
        if not until and time.time() - since >= 2.5:
            return last
        time.sleep(0.25)
        cur = used_bytes(aio)
        if cur != last:
            last, since = cur, time.time()
    return last


def back_to(aio, base, what):
    """The sum returns to base and stays there over another refresh."""
    got = settle(aio, lambda v: v == base)
    time.sleep(REFRESH)
    expect((got, used_bytes(aio)), (base, base), what)


def main():
    aio = Aio(osd_size="512M")
    aio.start()
    try:
        s3 = aio.client(signature_version="s3v4")
        s3.create_bucket(Bucket=BUCKET)
        raw = Raw(aio)

        # -- header checksums on plain PUTs, inline and erasure-coded
        for size in (100, 300 * 1024):
            for algo in ALGOS:
                data = rnd.randbytes(size)
                key = "hdr-%s-%d" % (algo, size)
                st, h, b = raw.put(key, data, {"x-amz-checksum-" + algo:
                                               s3sign.checksum(algo, data)})
                assert st == 200, (st, b)
                assert h.get("x-amz-checksum-" + algo) == s3sign.checksum(algo, data), h
                check_stored(raw, s3, key, data, algo)
                # One byte off: BadDigest, no object.
                bad = bytearray(data)
                bad[size // 2] ^= 1
                st, _, b = raw.put(key + "-bad", bytes(bad),
                                   {"x-amz-checksum-" + algo: s3sign.checksum(algo, data)})
                expect((st, s3sign.error_code(b)), (400, "BadDigest"),
                       "header %s mismatch (%d bytes)" % (algo, size))
                assert absent(s3, key + "-bad")
            print("ok: header checksums of %d bytes stored and returned" % size)

        # A mismatch replacing an object leaves the old one as it was.
        data = rnd.randbytes(200 * 1024)
        st, _, _ = raw.put("keep", data, {"x-amz-checksum-sha256": s3sign.checksum("sha256", data)})
        assert st == 200
        st, _, b = raw.put("keep", rnd.randbytes(len(data)),
                           {"x-amz-checksum-sha256": s3sign.checksum("sha256", data)})
        expect(s3sign.error_code(b), "BadDigest", "mismatching replacement")
        check_stored(raw, s3, "keep", data, "sha256")

        # boto3: its own CRC32 on every PUT (validated on GET), an explicit
        # wrong value, and SHA256 asked for by algorithm.
        data = rnd.randbytes(150 * 1024)
        r = s3.put_object(Bucket=BUCKET, Key="b3", Body=data, ChecksumAlgorithm="SHA256")
        expect(r["ChecksumSHA256"], s3sign.checksum("sha256", data), "boto3 SHA256 echoed")
        g = s3.get_object(Bucket=BUCKET, Key="b3", ChecksumMode="ENABLED")
        assert g["Body"].read() == data and g["ChecksumSHA256"] == s3sign.checksum("sha256", data)
        try:
            s3.put_object(Bucket=BUCKET, Key="b3-bad", Body=data, ChecksumCRC32="AAAAAA==")
            raise AssertionError("wrong ChecksumCRC32 accepted")
        except ClientError as e:
            expect(e.response["Error"]["Code"], "BadDigest", "boto3 wrong ChecksumCRC32")
        assert absent(s3, "b3-bad")
        # Empty object: the checksum of nothing.
        st, h, _ = raw.put("empty", b"", {"x-amz-checksum-crc32c": "AAAAAA=="})
        assert st == 200 and h.get("x-amz-checksum-crc32c") == "AAAAAA==", (st, h)
        st, _, b = raw.put("empty-bad", b"", {"x-amz-checksum-crc32": "AAAAAQ=="})
        expect(s3sign.error_code(b), "BadDigest", "empty body, wrong crc32")
        assert absent(s3, "empty-bad")

        # Content-MD5: wrong -> BadDigest, nothing stored.
        st, _, b = raw.put("md5-bad", data, {"content-md5": "1B2M2Y8AsgTpgAmY7PhCfg=="})
        expect(s3sign.error_code(b), "BadDigest", "wrong Content-MD5")
        assert absent(s3, "md5-bad")

        # The signed payload digest of other bytes: XAmzContentSHA256Mismatch.
        st, _, b = raw.put("sha-bad", data, payload=hashlib.sha256(data + b"!").hexdigest())
        expect((st, s3sign.error_code(b)), (400, "XAmzContentSHA256Mismatch"),
               "x-amz-content-sha256 of other bytes")
        assert absent(s3, "sha-bad")
        st, _, b = raw.put("sha-ok", data, payload=hashlib.sha256(data).hexdigest())
        assert st == 200, (st, b)

        # x-amz-sdk-checksum-algorithm alone: computed and stored.
        st, h, _ = raw.put("sdk", data, {"x-amz-sdk-checksum-algorithm": "CRC32C"})
        assert st == 200 and h.get("x-amz-checksum-crc32c") == s3sign.checksum("crc32c", data), h
        check_stored(raw, s3, "sdk", data, "crc32c")
        # Malformed, doubled, or disagreeing: InvalidRequest, no object.
        for what, hdrs in (
                ("malformed value", {"x-amz-checksum-crc32": "nope"}),
                ("value of another size", {"x-amz-checksum-crc32": s3sign.checksum("sha1", data)}),
                ("two algorithms", {"x-amz-checksum-crc32": s3sign.checksum("crc32", data),
                                    "x-amz-checksum-sha1": s3sign.checksum("sha1", data)}),
                ("sdk algorithm disagrees", {"x-amz-checksum-crc32": s3sign.checksum("crc32", data),
                                             "x-amz-sdk-checksum-algorithm": "SHA1"}),
                ("unknown sdk algorithm", {"x-amz-sdk-checksum-algorithm": "MD4"})):
            st, _, b = raw.put("inv", data, hdrs)
            expect((st, s3sign.error_code(b)), (400, "InvalidRequest", ), what)
        assert absent(s3, "inv")

        # GetObjectAttributes: a subset, and its errors.
        at = s3.get_object_attributes(Bucket=BUCKET, Key="sdk", ObjectAttributes=["ObjectSize"])
        assert at["ObjectSize"] == len(data) and "ETag" not in at and "Checksum" not in at, at
        at = s3.get_object_attributes(Bucket=BUCKET, Key="b3", ObjectAttributes=["ETag"])
        expect(at["ETag"], hashlib.md5(s3.get_object(Bucket=BUCKET, Key="b3")["Body"].read()).hexdigest(),
               "GetObjectAttributes ETag (unquoted)")
        for what, key, names, want in (("unknown attribute", "sdk", ["Size"], "InvalidArgument"),
                                       ("missing key", "nope", ["ETag"], "NoSuchKey")):
            try:
                s3.get_object_attributes(Bucket=BUCKET, Key=key, ObjectAttributes=names)
                raise AssertionError(what + " accepted")
            except ClientError as e:
                expect(e.response["Error"]["Code"], want, "GetObjectAttributes, " + what)
        st, _, b = raw.get("sdk", query={"attributes": ""})
        expect((st, s3sign.error_code(b)), (400, "InvalidArgument"),
               "GetObjectAttributes without x-amz-object-attributes")

        # -- STREAMING-AWS4-HMAC-SHA256-PAYLOAD
        data = rnd.randbytes(700 * 1024 + 17)
        st, h, b = raw.stream("s-good", data, chunk=64 * 1024)
        assert st == 200, (st, b)
        g = s3.get_object(Bucket=BUCKET, Key="s-good")
        assert g["Body"].read() == data
        print("ok: signed streaming upload stored")
        st, _, b = raw.stream("s-bad", data, chunk=64 * 1024, tamper_chunk=6)
        expect((st, s3sign.error_code(b)), (403, "SignatureDoesNotMatch"),
               "bad signature on chunk 6 of 12")
        assert absent(s3, "s-bad")
        # Content-MD5 covers the decoded payload of a streaming body.
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        st, _, b = raw.stream("s-md5", data, extra={"content-md5": md5})
        assert st == 200, (st, b)
        st, _, b = raw.stream("s-md5-bad", data, extra={"content-md5": "1B2M2Y8AsgTpgAmY7PhCfg=="})
        expect(s3sign.error_code(b), "BadDigest", "streaming body, wrong Content-MD5")
        assert absent(s3, "s-md5-bad")

        # -- trailing checksums, unsigned and signed
        for signed in (False, True):
            mode = "signed" if signed else "unsigned"
            for algo in ["crc32", "crc32c", "sha1", "sha256"]:
                data = rnd.randbytes(rnd.choice([3000, 400 * 1024 + 5]))
                key = "t-%s-%s" % (mode, algo)
                name = "x-amz-checksum-" + algo
                st, h, b = raw.stream(key, data, signed=signed,
                                      trailer=(name, s3sign.checksum(algo, data)))
                assert st == 200, (key, st, b)
                assert h.get(name) == s3sign.checksum(algo, data), h
                check_stored(raw, s3, key, data, algo)
                wrong = s3sign.checksum(algo, data + b"x")
                st, _, b = raw.stream(key + "-bad", data, signed=signed, trailer=(name, wrong))
                expect((st, s3sign.error_code(b)), (400, "BadDigest"),
                       "%s trailer %s wrong" % (mode, algo))
                assert absent(s3, key + "-bad")
        data = rnd.randbytes(100 * 1024)
        st, _, b = raw.stream("t-sig", data, trailer=("x-amz-checksum-crc32",
                                                      s3sign.checksum("crc32", data)),
                              tamper_trailer_sig=True)
        expect((st, s3sign.error_code(b)), (403, "SignatureDoesNotMatch"), "spoiled trailer signature")
        assert absent(s3, "t-sig")
        # Declared but not sent.
        h, bb = s3sign.streaming_put(raw.sg, raw.host, "/%s/t-miss" % BUCKET, data, signed=False,
                                     trailer=("x-amz-checksum-sha1", "x"))
        bb = bb.replace(b"x-amz-checksum-sha1:x\r\n", b"")
        h["content-length"] = str(len(bb))
        st, _, b = s3sign.request(raw.port, "PUT", "/%s/t-miss" % BUCKET, h, bb)
        expect((st, s3sign.error_code(b)), (400, "InvalidRequest"), "declared trailer missing")
        assert absent(s3, "t-miss")

        # -- failed large streaming uploads free their space on the OSDs
        size = 6 << 20
        data = rnd.randbytes(size)
        base = settle(aio)
        st, _, b = raw.stream("big", data, chunk=1 << 20, trailer=(
            "x-amz-checksum-sha256", s3sign.checksum("sha256", data)))
        assert st == 200, (st, b)
        grown = settle(aio, lambda v: v >= base + size)
        assert grown >= base + size, (base, grown)
        print("ok: a good %d MiB upload raises used bytes %d -> %d" % (size >> 20, base, grown))
        s3.delete_object(Bucket=BUCKET, Key="big")
        back_to(aio, base, "used bytes after deleting it")
        st, _, b = raw.stream("big-bad", data, chunk=1 << 20, trailer=(
            "x-amz-checksum-sha256", s3sign.checksum("sha256", data + b"!")))
        expect(s3sign.error_code(b), "BadDigest", "%d MiB upload, wrong trailing sha256" % (size >> 20))
        assert absent(s3, "big-bad")
        back_to(aio, base, "used bytes after the failed upload")
        st, _, b = raw.stream("big-sig", data, chunk=1 << 20, tamper_chunk=4)
        expect(s3sign.error_code(b), "SignatureDoesNotMatch", "bad signature on chunk 4 of 6")
        assert absent(s3, "big-sig")
        back_to(aio, base, "used bytes after the rejected upload")
        print("PASS")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
