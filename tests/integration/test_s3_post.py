#!/usr/bin/env python3
"""test_s3_post.py — browser POST uploads (PostObject) on iolake-aio, with
the policies Debian's boto3 makes (generate_presigned_post: SigV2 by
default, SigV4 with signature_version='s3v4') sent by python3-requests as
a browser's form:

- uploads of 0 B, 10 B (inline), 100 KB and 20 MiB (streamed through the
  erasure-coded PUT pipeline) read back byte-exact with their
  Content-Type and x-amz-meta-* fields; ${filename} in the key;
- success_action_status 200 / 201 (PostResponse XML) / default 204, and
  success_action_redirect (303 with bucket, key and ETag);
- refusals as AWS, each storing nothing: an expired policy, a condition
  that fails, an extra field, content-length-range (EntityTooLarge,
  EntityTooSmall), a wrong signature, an unknown key, no file, no key,
  a malformed policy; a POST that is not a form (412);
- who: the object's owner is the signer (alice), an acl field is kept
  (public-read: anonymous GET), an anonymous POST without a policy is
  refused on a private bucket and allowed on a public-read-write one;
- the deviation: a field after the file is refused (MalformedPOSTRequest)."""
import hashlib, html, json, os, subprocess, sys

import requests
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, Aio  # noqa: E402

B = "postb"
FAILS = []


def expect(got, want, what):
    if got != want:
        FAILS.append(what)
        print("FAIL: %s: got %r want %r" % (what, got, want))
    else:
        print("ok:", what, "->", got)


def cid(user):
    return hashlib.sha256(("iolake-user:" + user).encode()).hexdigest()


def exists(s3, key):
    try:
        s3.head_object(Bucket=B, Key=key)
        return True
    except ClientError:
        return False


def err(r):
    """(status, Code, Message) of an error answer."""
    import re
    c = re.search(r"<Code>(.*?)</Code>", r.text)
    m = re.search(r"<Message>(.*?)</Message>", r.text)
    return r.status_code, c and c.group(1), m and html.unescape(m.group(1))


def post(p, fields=None, files=None, drop=()):
    data = dict(p["fields"])
    data.update(fields or {})
    for d in drop:
        data.pop(d, None)
    return requests.post(p["url"], data=data, files=files, allow_redirects=False, timeout=60)


def run(aio):
    s3 = aio.client()
    s3v4 = aio.client(signature_version="s3v4")
    s3.create_bucket(Bucket=B)

    # ------------------------------------------------ uploads, both signatures
    for name, cli in (("SigV2", s3), ("SigV4", s3v4)):
        for size in (0, 10, 100000, 20 << 20):
            data = os.urandom(size)
            p = cli.generate_presigned_post(
                B, "up/${filename}", Fields={"x-amz-meta-note": "hi there", "Content-Type": "text/x-test"},
                Conditions=[["starts-with", "$key", "up/"], {"x-amz-meta-note": "hi there"},
                            ["starts-with", "$Content-Type", "text/"],
                            ["content-length-range", 0, 64 << 20]], ExpiresIn=300)
            fn = "%s-%d.bin" % (name, size)
            r = post(p, files={"file": (fn, data, "application/octet-stream")})
            o = s3.get_object(Bucket=B, Key="up/" + fn)
            expect((r.status_code, o["Body"].read() == data, o["Metadata"], o["ContentType"],
                    r.headers.get("ETag") == o["ETag"]),
                   (204, True, {"note": "hi there"}, "text/x-test", True),
                   "%s POST of %d bytes, read back" % (name, size))
    expect("x-amz-algorithm" in s3v4.generate_presigned_post(B, "k")["fields"], True,
           "the SigV4 policy's fields are x-amz-*")

    # ------------------------------------------------ answers
    p = s3v4.generate_presigned_post(B, "st/${filename}", Fields={"success_action_status": "201"},
                                     Conditions=[{"success_action_status": "201"}])
    r = post(p, files={"file": ("a.txt", b"abc")})
    expect((r.status_code, "<PostResponse>" in r.text, "<Key>st/a.txt</Key>" in r.text,
            "<Bucket>%s</Bucket>" % B in r.text), (201, True, True, True),
           "success_action_status 201: PostResponse")
    p = s3v4.generate_presigned_post(B, "st/b", Fields={"success_action_status": "200"},
                                     Conditions=[{"success_action_status": "200"}])
    r = post(p, files={"file": ("b", b"abc")})
    expect((r.status_code, r.text), (200, ""), "success_action_status 200: empty")
    red = "http://127.0.0.1:9/done?x=1"
    p = s3v4.generate_presigned_post(B, "st/c d", Fields={"success_action_redirect": red},
                                     Conditions=[{"success_action_redirect": red}])
    r = post(p, files={"file": ("c", b"abc")})
    etag = s3.head_object(Bucket=B, Key="st/c d")["ETag"]
    expect((r.status_code, r.headers.get("Location")),
           (303, red + "&bucket=%s&key=st%%2Fc%%20d&etag=%%22%s%%22" % (B, etag.strip('"'))),
           "success_action_redirect: 303 with bucket, key and etag")

    # ------------------------------------------------ refusals
    def refused(what, p, want, key, **kw):
        r = post(p, **kw)
        got = err(r)
        expect(got[:2] + ((want[2] in (got[2] or "")),) if len(want) > 2 else got[:2],
               want[:2] + ((True,) if len(want) > 2 else ()), what)
        expect(exists(s3, key), False, what + ": nothing stored")

    f = {"file": ("x", b"0123456789")}
    p = s3v4.generate_presigned_post(B, "bad/expired", ExpiresIn=-10)
    refused("an expired policy", p, (403, "AccessDenied", "Policy expired"), "bad/expired", files=f)
    p = s3v4.generate_presigned_post(B, "bad/cond", Conditions=[["starts-with", "$key", "ok/"]])
    refused("a failed condition", p, (403, "AccessDenied", "Policy Condition failed"), "bad/cond", files=f)
    p = s3v4.generate_presigned_post(B, "bad/extra")
    refused("an extra field", p, (403, "AccessDenied", "Extra input fields: x-amz-meta-sneaky"),
            "bad/extra", files=f, fields={"x-amz-meta-sneaky": "1"})
    p = s3v4.generate_presigned_post(B, "bad/big", Conditions=[["content-length-range", 1, 5]])
    refused("content-length-range: too large", p, (400, "EntityTooLarge"), "bad/big", files=f)
    p = s3v4.generate_presigned_post(B, "bad/small", Conditions=[["content-length-range", 11, 100]])
    refused("content-length-range: too small", p, (400, "EntityTooSmall"), "bad/small", files=f)
    p = s3v4.generate_presigned_post(B, "bad/sig")
    sig = p["fields"]["x-amz-signature"]
    refused("a wrong SigV4 signature", p, (403, "SignatureDoesNotMatch"), "bad/sig", files=f,
            fields={"x-amz-signature": ("0" if sig[0] != "0" else "1") + sig[1:]})
    p = s3.generate_presigned_post(B, "bad/sig2")
    refused("a wrong SigV2 signature", p, (403, "SignatureDoesNotMatch"), "bad/sig2", files=f,
            fields={"signature": "AAAA" + p["fields"]["signature"][4:]})
    nokey = aio.client(ak="AKIANOSUCHKEY0000000", signature_version="s3v4")
    p = nokey.generate_presigned_post(B, "bad/ak")
    refused("an unknown access key", p, (403, "InvalidAccessKeyId"), "bad/ak", files=f)
    p = s3v4.generate_presigned_post(B, "bad/nofile")
    refused("no file", p, (400, "IncorrectNumberOfFilesInPostRequest"), "bad/nofile",
            files={"other": ("x", b"1")}, fields={})
    p = s3v4.generate_presigned_post(B, "bad/nokey")
    refused("no key field", p, (400, "InvalidArgument", "must contain a field named 'key'"),
            "bad/nokey", files=f, drop=("key",))
    p = s3v4.generate_presigned_post(B, "bad/policy")
    refused("a policy that is not base64 JSON", p, (400, "InvalidPolicyDocument"), "bad/policy",
            files=f, fields={"policy": "bm90IGpzb24="})
    # With CORS on the bucket, a refusal carries its headers (the page can
    # read why), and so does a success.
    s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["http://page.example"], "AllowedMethods": ["POST"]}]})
    p = s3v4.generate_presigned_post(B, "bad/expired2", ExpiresIn=-10)
    r = requests.post(p["url"], data=p["fields"], files=f, headers={"Origin": "http://page.example"},
                      timeout=10)
    expect((err(r)[:2], r.headers.get("Access-Control-Allow-Origin")),
           ((403, "AccessDenied"), "http://page.example"), "a refused POST carries the CORS headers")
    p = s3v4.generate_presigned_post(B, "cors/ok")
    r = requests.post(p["url"], data=p["fields"], files=f, headers={"Origin": "http://page.example"},
                      timeout=10)
    expect((r.status_code, r.headers.get("Access-Control-Allow-Origin")), (204, "http://page.example"),
           "a POST from an allowed origin carries the CORS headers")
    s3.delete_bucket_cors(Bucket=B)
    r = requests.post(aio.ep + "/" + B, data=b"plain", headers={"Content-Type": "text/plain"}, timeout=10)
    expect(err(r)[:2], (412, "PreconditionFailed"), "a bucket POST that is not a form")

    # The deviation: the file must be the last part.
    p = s3v4.generate_presigned_post(B, "bad/after")
    body = b""
    bd = "XyZzY"
    for k, v in p["fields"].items():
        body += ("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (bd, k, v)).encode()
    body += ("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n" % bd).encode()
    body += b"data\r\n" + ("--%s\r\nContent-Disposition: form-data; name=\"late\"\r\n\r\nx\r\n--%s--\r\n" % (bd, bd)).encode()
    r = requests.post(p["url"], data=body, headers={"Content-Type": "multipart/form-data; boundary=" + bd},
                      timeout=10)
    expect(err(r)[:2], (400, "MalformedPOSTRequest"), "a field after the file (deviation: refused)")
    expect(exists(s3, "bad/after"), False, "a field after the file: nothing stored")

    # ------------------------------------------------ who
    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
    out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json", "user", "add",
                          "alice"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    alice = aio.client(ak=j["access_key"], sk=j["secret_key"], signature_version="s3v4")
    alice.create_bucket(Bucket="alicepost", ObjectOwnership="ObjectWriter")
    p = alice.generate_presigned_post("alicepost", "mine", Fields={"acl": "public-read"},
                                      Conditions=[{"acl": "public-read"}])
    r = post(p, files={"file": ("x", b"alice's")})
    owner = s3.get_object_acl(Bucket="alicepost", Key="mine")["Owner"]["ID"]
    anon = requests.get(aio.ep + "/alicepost/mine", timeout=10)
    expect((r.status_code, owner == cid("alice"), anon.status_code, anon.content),
           (204, True, 200, b"alice's"), "the signer owns the object; acl=public-read kept")
    p = alice.generate_presigned_post(B, "alice-into-root")
    refused("alice may not POST into root's private bucket", p, (403, "AccessDenied"),
            "alice-into-root", files=f)
    r = requests.post(aio.ep + "/" + B, data={"key": "anon"}, files=f, timeout=10)
    expect(err(r)[:2], (403, "AccessDenied"), "an anonymous POST into a private bucket")
    s3.create_bucket(Bucket="openpost", ObjectOwnership="ObjectWriter")
    s3.put_bucket_acl(Bucket="openpost", ACL="public-read-write")
    r = requests.post(aio.ep + "/openpost", data={"key": "anon"}, files=f, timeout=10)
    o = s3.get_object(Bucket="openpost", Key="anon")
    expect((r.status_code, o["Body"].read()), (204, b"0123456789"),
           "an anonymous POST into a public-read-write bucket")


def main():
    aio = Aio(osd_size="512M")
    aio.start()
    try:
        run(aio)
        rc, _ = aio.stop(limit=15)
        expect(rc, 0, "iolake-aio exits 0 on SIGTERM")
    finally:
        aio.close()
    if FAILS:
        print("%d failures" % len(FAILS))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
