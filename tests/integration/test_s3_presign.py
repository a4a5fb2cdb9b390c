#!/usr/bin/env python3
"""test_s3_presign.py — SigV4 presigned URLs (query auth) on iolake-aio:
boto3 generate_presigned_url (signature_version='s3v4') for PutObject,
GetObject, HeadObject and DeleteObject, each used with plain curl; the
object's bytes round-trip (inline and erasure-coded sizes). Refusals, each
changing nothing: a URL past its X-Amz-Expires (boto3, ExpiresIn=3, then
waiting) and one signed with a date in the past (signed here) -> 403
AccessDenied "Request has expired"; a date too far ahead -> AccessDenied;
X-Amz-Expires=0 -> 403 AccessDenied "Request has expired"; X-Amz-Expires
above 7 days -> AuthorizationQueryParametersError; a URL
used for another method or key, or with a spoiled signature ->
SignatureDoesNotMatch; a URL of an unknown access key ->
InvalidAccessKeyId."""
import datetime, os, random, subprocess, sys, tempfile, time

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402
import s3sign  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
BUCKET = "pre"


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got)


def curl(method, url, upload=None, out=None):
    """(status, body bytes) of one curl request."""
    with tempfile.NamedTemporaryFile(dir="/dev/shm") as body:
        cmd = ["curl", "-sS", "-o", out or body.name, "-w", "%{http_code}", "-X", method, url]
        if method == "HEAD":
            cmd[cmd.index("-X"):cmd.index("-X") + 2] = ["-I"]
        if upload:
            cmd += ["-T", upload]  # -T sends the file as is (no form encoding)
        r = subprocess.run(cmd, check=True, capture_output=True, text=True)
        data = open(out or body.name, "rb").read()
        return int(r.stdout.strip()), data


def absent(s3, key):
    try:
        s3.head_object(Bucket=BUCKET, Key=key)
    except ClientError as e:
        return e.response["Error"]["Code"] in ("404", "NoSuchKey")
    return False


def main():
    aio = Aio()
    aio.start()
    tmp = tempfile.mkdtemp(dir="/dev/shm", prefix="presign.")
    try:
        s3 = aio.client(signature_version="s3v4")
        s3.create_bucket(Bucket=BUCKET)

        def url(op, key, expires=300):
            return s3.generate_presigned_url(op, Params={"Bucket": BUCKET, "Key": key},
                                             ExpiresIn=expires)

        for size in (1000, 3 << 20):
            key = "dir/obj %d+x" % size  # a space and a '+' in the key
            data = rnd.randbytes(size)
            src = os.path.join(tmp, "src")
            open(src, "wb").write(data)
            st, b = curl("PUT", url("put_object", key), upload=src)
            expect(st, 200, "presigned PUT of %d bytes with curl" % size)
            assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == data
            dst = os.path.join(tmp, "dst")
            st, _ = curl("GET", url("get_object", key), out=dst)
            expect((st, open(dst, "rb").read() == data), (200, True),
                   "presigned GET of %d bytes with curl" % size)
            st, _ = curl("HEAD", url("head_object", key))
            expect(st, 200, "presigned HEAD with curl")
            # A GET URL is not a DELETE URL.
            st, b = curl("DELETE", url("get_object", key))
            expect((st, s3sign.error_code(b)), (403, "SignatureDoesNotMatch"),
                   "GET URL used for DELETE")
            assert not absent(s3, key)
            st, _ = curl("DELETE", url("delete_object", key))
            expect(st, 204, "presigned DELETE with curl")
            assert absent(s3, key)

        data = rnd.randbytes(5000)
        s3.put_object(Bucket=BUCKET, Key="keep", Body=data)
        # Another key than the one signed; a spoiled signature.
        u = url("get_object", "keep")
        st, b = curl("GET", u.replace("/keep?", "/keep2?"))
        expect((st, s3sign.error_code(b)), (403, "SignatureDoesNotMatch"), "URL for another key")
        st, b = curl("GET", u[:-1] + ("0" if u[-1] != "0" else "1"))
        expect((st, s3sign.error_code(b)), (403, "SignatureDoesNotMatch"), "spoiled signature")

        # Expiry: ExpiresIn=3; the GET URL works at once, then every URL
        # is refused once 3 s have passed.
        get1, put1 = url("get_object", "keep", 3), url("put_object", "late", 3)
        del1 = url("delete_object", "keep", 3)
        t0 = time.time()
        st, b = curl("GET", get1)
        if time.time() - t0 < 2:
            expect((st, b == data), (200, True), "presigned GET before it expires")
        else:  # a machine this slow may have let it expire already
            print("note: the first GET took over 2 s; its result is not checked")
        time.sleep(max(0, 4.2 - (time.time() - t0)))
        for what, method, u in (("GET", "GET", get1), ("PUT", "PUT", put1),
                                ("DELETE", "DELETE", del1)):
            st, b = curl(method, u, upload=src if method == "PUT" else None)
            expect((st, s3sign.error_code(b), b"Request has expired" in b),
                   (403, "AccessDenied", True), "expired presigned " + what)
        assert absent(s3, "late")
        assert s3.get_object(Bucket=BUCKET, Key="keep")["Body"].read() == data

        # Signed here: a date in the past, one in the future, > 7 days.
        sg = s3sign.Signer(AK, SK)
        host = "127.0.0.1:%d" % aio.port
        now = datetime.datetime.now(datetime.timezone.utc)
        past = sg.presign("GET", host, "/%s/keep" % BUCKET, 3600, when=now - datetime.timedelta(hours=2))
        st, b = curl("GET", aio.ep + past)
        expect((st, s3sign.error_code(b), b"Request has expired" in b), (403, "AccessDenied", True),
               "URL signed 2 h ago for 1 h")
        ok = sg.presign("GET", host, "/%s/keep" % BUCKET, 3 * 3600, when=now - datetime.timedelta(hours=2))
        st, b = curl("GET", aio.ep + ok)
        expect((st, b == data), (200, True), "URL signed 2 h ago for 3 h (own signer)")
        future = sg.presign("GET", host, "/%s/keep" % BUCKET, 60, when=now + datetime.timedelta(hours=1))
        st, b = curl("GET", aio.ep + future)
        expect((st, s3sign.error_code(b)), (403, "AccessDenied"), "URL dated 1 h ahead")
        week = sg.presign("GET", host, "/%s/keep" % BUCKET, 604801)
        st, b = curl("GET", aio.ep + week)
        expect((st, s3sign.error_code(b)), (400, "AuthorizationQueryParametersError"),
               "X-Amz-Expires of 7 days + 1 s")
        zero = sg.presign("GET", host, "/%s/keep" % BUCKET, 0)
        st, b = curl("GET", aio.ep + zero)
        expect((st, s3sign.error_code(b), b"Request has expired" in b), (403, "AccessDenied", True),
               "X-Amz-Expires=0")
        week = sg.presign("GET", host, "/%s/keep" % BUCKET, 604800)
        st, b = curl("GET", aio.ep + week)
        expect((st, b == data), (200, True), "X-Amz-Expires of exactly 7 days")
        stranger = s3sign.Signer("AKIAUNKNOWN000000000", SK).presign("GET", host, "/%s/keep" % BUCKET, 60)
        st, b = curl("GET", aio.ep + stranger)
        expect((st, s3sign.error_code(b)), (403, "InvalidAccessKeyId"), "unknown access key")
        assert s3.get_object(Bucket=BUCKET, Key="keep")["Body"].read() == data
        print("PASS")
    finally:
        aio.close()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
