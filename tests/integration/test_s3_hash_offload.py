#!/usr/bin/env python3
"""test_s3_hash_offload.py — PUT digests with the ETag's MD5 on hash
threads (iolake-aio --hash-threads 2; 1 MiB segments, so a large PUT
hashes several segments on a worker while others are encoded and sent).

Many large PUTs run at once through hand-signed requests (s3sign.py):
good ones (signed payload with Content-MD5, unsigned, aws-chunked) mixed
with bad ones whose body is refused at its end, after segments went out
and while their hash jobs may still be queued: a wrong Content-MD5
(BadDigest), a wrong x-amz-content-sha256 (XAmzContentSHA256Mismatch), a
spoiled chunk signature late in an aws-chunked body
(SignatureDoesNotMatch). Every answer is checked; every good object reads
back byte for byte with ETag = its MD5; no bad key exists (one that
replaced an older object leaves the older one whole). Then the same on
--hash-threads 0 (hashing on the loop) for the small set, and a
multipart upload whose part ETags are the parts' MD5s."""
import base64, concurrent.futures, hashlib, os, random, sys

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402
import s3sign  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
BUCKET = "hoff"
MiB = 1 << 20


class Raw:
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

    def stream(self, key, data, **kw):
        path = "/%s/%s" % (BUCKET, key)
        h, b = s3sign.streaming_put(self.sg, self.host, path, data, **kw)
        return s3sign.request(self.port, "PUT", path, h, b)


def b64md5(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def one(raw, kind, key, data):
    """Send one PUT of this kind; (status, error code, etag)."""
    sha = hashlib.sha256(data).hexdigest()
    if kind == "good-signed":
        st, h, b = raw.put(key, data, {"content-md5": b64md5(data)}, payload=sha)
    elif kind == "good-unsigned":
        st, h, b = raw.put(key, data)
    elif kind == "good-chunked":
        st, h, b = raw.stream(key, data, chunk=256 * 1024)
    elif kind == "bad-md5":
        st, h, b = raw.put(key, data, {"content-md5": b64md5(data + b"!")})
    elif kind == "bad-sha":
        st, h, b = raw.put(key, data, payload=hashlib.sha256(data + b"!").hexdigest())
    elif kind == "bad-chunk":
        n = (len(data) + 256 * 1024 - 1) // (256 * 1024)
        st, h, b = raw.stream(key, data, chunk=256 * 1024, tamper_chunk=n - 1)
    else:
        raise AssertionError(kind)
    return st, (s3sign.error_code(b) if st != 200 else ""), h.get("etag", "")


WANT = {"good-signed": (200, ""), "good-unsigned": (200, ""), "good-chunked": (200, ""),
        "bad-md5": (400, "BadDigest"), "bad-sha": (400, "XAmzContentSHA256Mismatch"),
        "bad-chunk": (403, "SignatureDoesNotMatch")}


def round_of(aio, tag, n, sizes, workers):
    s3 = aio.client()
    raw = Raw(aio)
    # Older objects under some bad keys: a refused PUT must leave them.
    olds = {}
    jobs = []
    kinds = sorted(WANT)
    for i in range(n):
        kind = kinds[i % len(kinds)]
        key = "%s/%s-%03d" % (tag, kind, i)
        data = rnd.randbytes(rnd.choice(sizes))
        if kind.startswith("bad") and i % 4 == 1:
            old = rnd.randbytes(2 * MiB + 3)
            st, _, _ = raw.put(key, old)
            assert st == 200, st
            olds[key] = old
        jobs.append((kind, key, data))
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        res = list(ex.map(lambda j: one(raw, *j), jobs))
    for (kind, key, data), (st, code, etag) in zip(jobs, res):
        assert (st, code) == WANT[kind], (key, len(data), st, code)
        if kind.startswith("good"):
            assert etag == '"%s"' % hashlib.md5(data).hexdigest(), (key, etag)
    print("ok: %s: %d PUTs answered as expected (%s)" % (tag, len(jobs), ", ".join(
        "%s %d" % (k, sum(1 for j in jobs if j[0] == k)) for k in kinds)))
    for kind, key, data in jobs:
        if kind.startswith("good"):
            g = s3.get_object(Bucket=BUCKET, Key=key)
            body = g["Body"].read()
            assert body == data, (key, len(body), len(data))
            assert g["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(), (key, g["ETag"])
        elif key in olds:
            body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
            assert body == olds[key], key
        else:
            try:
                s3.head_object(Bucket=BUCKET, Key=key)
                raise AssertionError(key + " stored after a refused PUT")
            except ClientError as e:
                assert e.response["Error"]["Code"] in ("404", "NoSuchKey"), e.response
    print("ok: %s: every good object byte for byte, every refused key absent or its "
          "old object whole (%d kept)" % (tag, len(olds)))


def multipart(aio):
    s3 = aio.client()
    key = "mpu"
    up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    parts, blobs = [], []
    for n in (1, 2, 3):
        data = rnd.randbytes(5 * MiB + n * 1000 if n < 3 else 700 * 1024)
        r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=n, Body=data)
        assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest(), r["ETag"]
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
        blobs.append(data)
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": parts})
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert body == b"".join(blobs)
    print("ok: multipart: part ETags are the parts' MD5s, the object reads back whole")


def run(args, tag, n, sizes, workers, mpu=False):
    aio = Aio(osd_size="512M", args=args)
    try:
        aio.start()
        # The flag took effect: that many hash threads in the process.
        comms = [open("/proc/%d/task/%s/comm" % (aio.proc.pid, t)).read().strip()
                 for t in os.listdir("/proc/%d/task" % aio.proc.pid)]
        want = int(args[args.index("--hash-threads") + 1])
        assert comms.count("iolake-hash") == want, (comms, want)
        aio.client().create_bucket(Bucket=BUCKET)
        round_of(aio, tag, n, sizes, workers)
        if mpu:
            multipart(aio)
        rc, secs = aio.stop()
        assert rc == 0, rc
        print("ok: %s: clean stop in %.1f s" % (tag, secs))
    except Exception:
        sys.stdout.write(open(aio.log.name, errors="replace").read()[-4000:])
        raise
    finally:
        aio.close()


def main():
    sizes = [64 * 1024, 1 * MiB, 3 * MiB + 17, 4 * MiB, 6 * MiB + 5]
    run(["--hash-threads", "2", "--gc-interval", "500ms"], "threads", 48, sizes, 12, mpu=True)
    run(["--hash-threads", "0"], "inline", 12, sizes, 6)
    print("PASS test_s3_hash_offload")


if __name__ == "__main__":
    main()
