#!/usr/bin/env python3
"""test_s3_sse.py — server-side encryption on iolake-aio (issue 18,
must-show 3) with boto3 and aws-cli:

- SSE-C: a 20 MiB object whose plaintext repeats a known 64-byte pattern
  (one per 4 KiB, random bytes between) is stored; every file under the
  aio's data dir (OSD devices and indexes, meta's RocksDB and Raft log) is
  searched for the pattern and for the customer key: neither is found,
  while an unencrypted control object's pattern is (so the search can
  fail). GET with the key returns the bytes; ranges (chunk boundaries, a
  4 MiB segment boundary, the last byte, random ones) return the right
  bytes; GET or HEAD without the key is 400 InvalidRequest, with another
  key 403 AccessDenied; a wrong key MD5 is 400 InvalidArgument; the ETag
  is not the plaintext's MD5.
- SSE-C multipart: parts under the upload's key (a part without it is
  refused), Complete without a key, ranged GETs across the part boundary,
  partNumber; UploadPartCopy of an SSE-C source into an SSE-S3 upload.
- Copies SSE-C -> SSE-S3 -> plain, each read back byte for byte with the
  headers of its kind.
- SSE-S3: ETag is the plaintext's MD5, x-amz-server-side-encryption:
  AES256 on PUT/GET/HEAD, readable after a restart (DATA/sse.key), the
  pattern not on disk.
- Bucket default encryption: GetBucketEncryption 404
  ServerSideEncryptionConfigurationNotFoundError, PutBucketEncryption
  AES256 (aws:kms NotImplemented), objects and uploads written without
  headers (PUT, CopyObject, CreateMultipartUpload, browser POST) get
  SSE-S3, DeleteBucketEncryption.
- aws-cli `s3 cp --sse-c AES256 --sse-c-key` for one PUT and GET.
- Every object deleted: the OSDs' used bytes come back to where they
  began (the encrypted layouts' shards are all freed).
"""
import base64, hashlib, mmap, os, random, subprocess, sys

import requests

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402
from test_s3_multipart import osd_used, wait_used  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
MiB = 1 << 20
CHUNK = 65536


def err(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return "OK", 200


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got if not isinstance(got, bytes) else "%d bytes" % len(got))


def patterned(size, pat):
    """size bytes: pat at every 4 KiB, random bytes between."""
    out = bytearray(rnd.randbytes(size))
    for off in range(0, size - len(pat), 4096):
        out[off:off + len(pat)] = pat
    return bytes(out)


def files_holding(root, needle):
    """Every regular file under root holding needle (sparse devices too)."""
    hits = []
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if not os.path.isfile(p) or os.path.islink(p) or os.path.getsize(p) == 0:
                continue
            with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                if m.find(needle) >= 0:
                    hits.append(p)
    return hits


def ssec(key, copy=False):
    pre = "CopySource" if copy else ""
    return {pre + "SSECustomerAlgorithm": "AES256", pre + "SSECustomerKey": key}


def main():
    # A short GC period: a multipart object's parts are part rows (issue
    # 18), freed by the GC worker in two rounds, not by the DELETE itself.
    aio = Aio(osd_size="256M", args=["--gc-interval", "500ms"])
    aio.start()
    try:
        run(aio)
    finally:
        aio.close()


def run(aio):
    s3 = aio.client()
    used0 = osd_used(aio)
    s3.create_bucket(Bucket="sse")
    key = rnd.randbytes(32)
    key2 = rnd.randbytes(32)
    pat_plain = b"PLAIN-CONTROL-" + rnd.randbytes(25).hex().encode()[:50]
    pat_c = b"SSE-C-SECRET--" + rnd.randbytes(25).hex().encode()[:50]
    pat_s3 = b"SSE-S3-SECRET-" + rnd.randbytes(25).hex().encode()[:50]
    assert len(pat_plain) == len(pat_c) == len(pat_s3) == 64

    # --- SSE-C, 20 MiB, and the control object
    plain = patterned(1 * MiB, pat_plain)
    s3.put_object(Bucket="sse", Key="control", Body=plain)
    big = patterned(20 * MiB, pat_c)
    r = s3.put_object(Bucket="sse", Key="secret", Body=big, **ssec(key))
    expect(r.get("SSECustomerAlgorithm"), "AES256", "PUT SSE-C answers the algorithm")
    expect(r.get("SSECustomerKeyMD5"), base64.b64encode(hashlib.md5(key).digest()).decode(),
           "PUT SSE-C answers the key MD5")
    expect(r["ETag"] != '"%s"' % hashlib.md5(big).hexdigest(), True,
           "SSE-C ETag is not the plaintext's MD5")
    etag_c = r["ETag"]

    g = s3.get_object(Bucket="sse", Key="secret", **ssec(key))
    expect(g["Body"].read() == big, True, "GET SSE-C with the key: the bytes")
    expect((g.get("SSECustomerAlgorithm"), g["ETag"]), ("AES256", etag_c), "GET SSE-C headers")
    h = s3.head_object(Bucket="sse", Key="secret", **ssec(key))
    expect((h["ContentLength"], h.get("SSECustomerKeyMD5") is not None), (20 * MiB, True),
           "HEAD SSE-C: plaintext length and key MD5")

    n = len(big)
    ranges = [(0, 0), (0, CHUNK - 1), (CHUNK - 1, CHUNK), (CHUNK, 2 * CHUNK - 1),
              (3 * CHUNK - 5, 5 * CHUNK + 5), (4 * MiB - 10, 4 * MiB + 10), (n - 1, n - 1),
              (n - CHUNK - 1, n - 1), (n - 100, n - 1)]
    for _ in range(12):
        a = rnd.randrange(n)
        ranges.append((a, min(n - 1, a + rnd.randrange(3 * MiB))))
    for a, b in ranges:
        got = s3.get_object(Bucket="sse", Key="secret", Range="bytes=%d-%d" % (a, b),
                            **ssec(key))["Body"].read()
        if got != big[a:b + 1]:
            raise AssertionError("range %d-%d: wrong bytes" % (a, b))
    print("ok: %d ranges of the 20 MiB SSE-C object (chunk and segment boundaries, last byte)"
          % len(ranges))
    got = s3.get_object(Bucket="sse", Key="secret", Range="bytes=-1", **ssec(key))["Body"].read()
    expect(got, big[-1:], "suffix range bytes=-1")

    expect(err(s3.get_object, Bucket="sse", Key="secret"), ("InvalidRequest", 400),
           "GET SSE-C without the key")
    expect(err(s3.head_object, Bucket="sse", Key="secret")[1], 400, "HEAD SSE-C without the key")
    expect(err(s3.get_object, Bucket="sse", Key="secret", **ssec(key2)), ("AccessDenied", 403),
           "GET SSE-C with another key")
    expect(err(s3.get_object, Bucket="sse", Key="control", **ssec(key)), ("InvalidRequest", 400),
           "GET of a plain object with a key")
    # (with the MD5 given, botocore sends the key as given: base64 text)
    expect(err(s3.put_object, Bucket="sse", Key="bad", Body=b"x", SSECustomerAlgorithm="AES256",
               SSECustomerKey=base64.b64encode(key).decode(),
               SSECustomerKeyMD5=base64.b64encode(b"0" * 16).decode()),
           ("InvalidArgument", 400), "PUT with a wrong key MD5")
    expect(err(s3.put_object, Bucket="sse", Key="bad", Body=b"x", SSECustomerAlgorithm="AES128",
               SSECustomerKey=key), ("InvalidArgument", 400), "PUT with another algorithm")
    expect(err(s3.put_object, Bucket="sse", Key="bad", Body=b"x", ServerSideEncryption="aws:kms"),
           ("NotImplemented", 501), "PUT with aws:kms")

    # --- SSE-S3
    s3data = patterned(3 * MiB + 1234, pat_s3)
    r = s3.put_object(Bucket="sse", Key="s3obj", Body=s3data, ServerSideEncryption="AES256")
    expect((r["ETag"], r.get("ServerSideEncryption")),
           ('"%s"' % hashlib.md5(s3data).hexdigest(), "AES256"), "PUT SSE-S3: MD5 ETag, header")
    g = s3.get_object(Bucket="sse", Key="s3obj", Range="bytes=65000-70000")
    expect((g["Body"].read() == s3data[65000:70001], g.get("ServerSideEncryption")),
           (True, "AES256"), "ranged GET SSE-S3")
    small = b"tiny secret " * 10
    s3.put_object(Bucket="sse", Key="s3small", Body=small, ServerSideEncryption="AES256")
    expect(s3.get_object(Bucket="sse", Key="s3small")["Body"].read(), small,
           "small SSE-S3 object (not inline)")
    s3.put_object(Bucket="sse", Key="cempty", Body=b"", **ssec(key))
    expect(err(s3.get_object, Bucket="sse", Key="cempty")[0], "InvalidRequest",
           "empty SSE-C object still needs its key")
    expect(s3.get_object(Bucket="sse", Key="cempty", **ssec(key))["Body"].read(), b"",
           "empty SSE-C object with its key")

    # --- multipart SSE-C
    p1, p2 = rnd.randbytes(5 * MiB), rnd.randbytes(3 * MiB + 77)
    up = s3.create_multipart_upload(Bucket="sse", Key="mpu", **ssec(key))
    expect(up.get("SSECustomerAlgorithm"), "AES256", "CreateMultipartUpload SSE-C")
    uid = up["UploadId"]
    expect(err(s3.upload_part, Bucket="sse", Key="mpu", UploadId=uid, PartNumber=1, Body=p1)[0],
           "InvalidRequest", "UploadPart without the upload's key")
    expect(err(s3.upload_part, Bucket="sse", Key="mpu", UploadId=uid, PartNumber=1, Body=p1,
               **ssec(key2))[0], "AccessDenied", "UploadPart with another key")
    e1 = s3.upload_part(Bucket="sse", Key="mpu", UploadId=uid, PartNumber=1, Body=p1, **ssec(key))
    e2 = s3.upload_part(Bucket="sse", Key="mpu", UploadId=uid, PartNumber=2, Body=p2, **ssec(key))
    expect(e1.get("SSECustomerAlgorithm"), "AES256", "UploadPart SSE-C header")
    s3.complete_multipart_upload(Bucket="sse", Key="mpu", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1["ETag"]}, {"PartNumber": 2, "ETag": e2["ETag"]}]})
    whole = p1 + p2
    expect(s3.get_object(Bucket="sse", Key="mpu", **ssec(key))["Body"].read() == whole, True,
           "multipart SSE-C whole")
    for a, b in [(5 * MiB - 3, 5 * MiB + 3), (0, 10), (len(whole) - 1, len(whole) - 1),
                 (5 * MiB - CHUNK - 7, 5 * MiB + CHUNK + 7), (1234567, 7654321)]:
        got = s3.get_object(Bucket="sse", Key="mpu", Range="bytes=%d-%d" % (a, b),
                            **ssec(key))["Body"].read()
        if got != whole[a:b + 1]:
            raise AssertionError("multipart range %d-%d: wrong bytes" % (a, b))
    print("ok: multipart SSE-C ranges across the part boundary")
    expect(s3.get_object(Bucket="sse", Key="mpu", PartNumber=2, **ssec(key))["Body"].read() == p2,
           True, "multipart SSE-C partNumber=2")
    expect(err(s3.get_object, Bucket="sse", Key="mpu")[0], "InvalidRequest",
           "multipart SSE-C without the key")

    # --- what is on disk (before a copy writes big's plaintext unencrypted)
    data = aio.data
    expect(bool(files_holding(data, pat_plain)), True, "the control pattern IS found on disk")
    expect(files_holding(data, pat_c), [], "the SSE-C pattern is not on disk")
    expect(files_holding(data, pat_s3), [], "the SSE-S3 pattern is not on disk")
    for k in (key, key2):
        expect(files_holding(data, k), [], "a customer key is not on disk")
        expect(files_holding(data, base64.b64encode(k)), [], "nor its base64")
    mode = os.stat(os.path.join(data, "sse.key")).st_mode & 0o777
    expect(oct(mode), oct(0o600), "DATA/sse.key mode")

    # --- copies: SSE-C -> SSE-S3 -> plain, and UploadPartCopy
    r = s3.copy_object(Bucket="sse", Key="c2s3", CopySource="sse/secret", ServerSideEncryption="AES256",
                       **ssec(key, copy=True))
    expect(r.get("ServerSideEncryption"), "AES256", "copy SSE-C -> SSE-S3 answers AES256")
    expect(err(s3.copy_object, Bucket="sse", Key="nokey", CopySource="sse/secret")[0],
           "InvalidRequest", "copy of an SSE-C source without its key")
    g = s3.get_object(Bucket="sse", Key="c2s3")
    expect((g["Body"].read() == big, g.get("ServerSideEncryption")), (True, "AES256"),
           "copy SSE-C -> SSE-S3 reads back")
    s3.copy_object(Bucket="sse", Key="c2plain", CopySource="sse/c2s3")
    h = s3.head_object(Bucket="sse", Key="c2plain")
    expect(h.get("ServerSideEncryption"), None, "copy SSE-S3 -> plain has no SSE header")
    got = s3.get_object(Bucket="sse", Key="c2plain", Range="bytes=100-200000")["Body"].read()
    expect(got == big[100:200001], True, "copy SSE-S3 -> plain reads back")
    s3.put_object(Bucket="sse", Key="self", Body=b"to be encrypted in place")
    r = s3.copy_object(Bucket="sse", Key="self", CopySource="sse/self", ServerSideEncryption="AES256")
    expect((r.get("ServerSideEncryption"), s3.get_object(Bucket="sse", Key="self")["Body"].read()),
           ("AES256", b"to be encrypted in place"), "a copy onto itself that adds SSE-S3")
    r = s3.copy_object(Bucket="sse", Key="c2c", CopySource="sse/mpu", **ssec(key, copy=True),
                       **ssec(key2))
    expect(s3.get_object(Bucket="sse", Key="c2c", **ssec(key2))["Body"].read() == whole, True,
           "copy multipart SSE-C -> SSE-C under another key")
    up = s3.create_multipart_upload(Bucket="sse", Key="upc", ServerSideEncryption="AES256")
    uid = up["UploadId"]
    pc = s3.upload_part_copy(Bucket="sse", Key="upc", UploadId=uid, PartNumber=1,
                             CopySource="sse/secret", CopySourceRange="bytes=1000-6292455",
                             **ssec(key, copy=True))
    p2c = s3.upload_part(Bucket="sse", Key="upc", UploadId=uid, PartNumber=2, Body=b"tail")
    r = s3.complete_multipart_upload(Bucket="sse", Key="upc", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": pc["CopyPartResult"]["ETag"]},
                  {"PartNumber": 2, "ETag": p2c["ETag"]}]})
    expect(r.get("ServerSideEncryption"), "AES256", "Complete of an SSE-S3 upload answers AES256")
    expect(s3.get_object(Bucket="sse", Key="upc")["Body"].read() == big[1000:6292456] + b"tail",
           True, "UploadPartCopy SSE-C source into an SSE-S3 upload")

    # --- bucket default encryption
    s3.create_bucket(Bucket="dflt")
    expect(err(s3.get_bucket_encryption, Bucket="dflt"),
           ("ServerSideEncryptionConfigurationNotFoundError", 404), "no default encryption")
    kms = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]}
    expect(err(s3.put_bucket_encryption, Bucket="dflt", ServerSideEncryptionConfiguration=kms)[0],
           "NotImplemented", "PutBucketEncryption aws:kms")
    cfg = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    s3.put_bucket_encryption(Bucket="dflt", ServerSideEncryptionConfiguration=cfg)
    rule = s3.get_bucket_encryption(Bucket="dflt")["ServerSideEncryptionConfiguration"]["Rules"][0]
    expect(rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"], "AES256",
           "GetBucketEncryption")
    r = s3.put_object(Bucket="dflt", Key="d1", Body=s3data)
    expect(r.get("ServerSideEncryption"), "AES256", "PUT under the default gets SSE-S3")
    expect(s3.head_object(Bucket="dflt", Key="d1").get("ServerSideEncryption"), "AES256",
           "HEAD of the default-encrypted object")
    r = s3.put_object(Bucket="dflt", Key="d2", Body=b"abc", **ssec(key))
    expect(r.get("SSECustomerAlgorithm"), "AES256", "SSE-C headers win over the default")
    up = s3.create_multipart_upload(Bucket="dflt", Key="d3")
    expect(up.get("ServerSideEncryption"), "AES256", "CreateMultipartUpload under the default")
    s3.abort_multipart_upload(Bucket="dflt", Key="d3", UploadId=up["UploadId"])
    pp = s3.generate_presigned_post("dflt", "d6")
    r = requests.post(pp["url"], data=pp["fields"], files={"file": ("f", b"posted bytes")},
                      timeout=30)
    expect(r.status_code, 204, "browser POST into the default-encrypted bucket")
    expect((s3.head_object(Bucket="dflt", Key="d6").get("ServerSideEncryption"),
            s3.get_object(Bucket="dflt", Key="d6")["Body"].read()), ("AES256", b"posted bytes"),
           "POST under the default gets SSE-S3")
    s3.copy_object(Bucket="dflt", Key="d4", CopySource="sse/control")
    expect(s3.head_object(Bucket="dflt", Key="d4").get("ServerSideEncryption"), "AES256",
           "CopyObject under the default")
    s3.delete_bucket_encryption(Bucket="dflt")
    expect(err(s3.get_bucket_encryption, Bucket="dflt")[0],
           "ServerSideEncryptionConfigurationNotFoundError", "DeleteBucketEncryption")
    s3.put_object(Bucket="dflt", Key="d5", Body=b"plain again")
    expect(s3.head_object(Bucket="dflt", Key="d5").get("ServerSideEncryption"), None,
           "PUT after the delete is plain")

    # --- aws-cli: s3 cp --sse-c
    kf = os.path.join(aio.tmp, "cli.key")
    ckey = rnd.randbytes(32)
    with open(kf, "wb") as f:
        f.write(ckey)
    src = os.path.join(aio.tmp, "cli.src")
    dst = os.path.join(aio.tmp, "cli.dst")
    cli_data = rnd.randbytes(9 * MiB + 3)
    with open(src, "wb") as f:
        f.write(cli_data)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null",
               AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    base = ["aws", "--endpoint-url", aio.ep, "s3", "cp", "--sse-c", "AES256",
            "--sse-c-key", "fileb://" + kf]
    subprocess.run(base + [src, "s3://sse/cli"], env=env, check=True, stdout=subprocess.DEVNULL)
    expect(err(s3.get_object, Bucket="sse", Key="cli")[0], "InvalidRequest",
           "aws-cli's SSE-C object needs the key")
    subprocess.run(base + ["s3://sse/cli", dst], env=env, check=True, stdout=subprocess.DEVNULL)
    with open(dst, "rb") as f:
        expect(f.read() == cli_data, True, "aws-cli s3 cp --sse-c round trip")
    expect(s3.get_object(Bucket="sse", Key="cli", **ssec(ckey))["Body"].read() == cli_data, True,
           "aws-cli's SSE-C object read by boto3 with the key")

    for k in (ckey,):
        expect(files_holding(aio.data, k), [], "aws-cli's customer key is not on disk")

    # --- SSE-S3 after a restart (the master key is the file's)
    aio.stop()
    aio.start()
    s3 = aio.client()
    expect(s3.get_object(Bucket="sse", Key="s3obj")["Body"].read() == s3data, True,
           "SSE-S3 object after a restart")
    expect(s3.get_object(Bucket="sse", Key="secret", Range="bytes=5-9", **ssec(key))["Body"].read(),
           big[5:10], "SSE-C object after a restart")

    # --- every encrypted layout is freed when its object goes (gw_rec
    # checks a layout against the record's stored length)
    for b in ("sse", "dflt"):
        for o in s3.list_objects_v2(Bucket=b).get("Contents", []):
            s3.delete_object(Bucket=b, Key=o["Key"])
    wait_used(aio, used0, "every object deleted: the OSDs' used bytes back where they began")
    print("PASS test_s3_sse")


if __name__ == "__main__":
    main()
