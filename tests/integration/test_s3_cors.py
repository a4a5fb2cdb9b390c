#!/usr/bin/env python3
"""test_s3_cors.py — CORS on iolake-aio, with Debian's boto3 and raw
HTTP (as a browser sends it):

- Put/Get/DeleteBucketCors: the rules round-trip (IDs, wildcards, exposed
  headers, MaxAgeSeconds); GetBucketCors without a configuration is 404
  NoSuchCORSConfiguration; refusals as S3 (MalformedXML: no rule, a rule
  without AllowedMethod, MaxAgeSeconds not an integer; InvalidRequest: an
  unsupported method, two wildcards in an origin); only the bucket owner
  (and an admin) may read or change it (alice: AccessDenied).
- Preflight OPTIONS (unauthenticated, presigned query ignored): 200 with
  Access-Control-Allow-Origin / -Methods / -Headers / -Expose-Headers /
  -Max-Age / Vary for a matching rule, '*' for a '*' origin; 403
  AccessForbidden for an origin, method or header no rule admits and for
  a bucket without CORS; 400 without Origin or
  Access-Control-Request-Method.
- CORS headers on ordinary responses (GET, PUT, HEAD; an error answer
  too), none without Origin or for an origin no rule admits; a
  DeleteBucketCors takes effect on the next request."""
import base64, hashlib, http.client, json, os, subprocess, sys

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, Aio  # noqa: E402

B = "corsb"
FAILS = []


def expect(got, want, what):
    if got != want:
        FAILS.append(what)
        print("FAIL: %s: got %r want %r" % (what, got, want))
    else:
        print("ok:", what, "->", got)


def code(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def raw(aio, method, path, headers=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", aio.port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, data


def put_cors_raw(s3, doc):
    """PutBucketCors with a document boto3 would refuse to build."""
    def hook(request, **_):
        request.data = doc.encode()
        request.headers["Content-Length"] = str(len(request.data))
        if "Content-MD5" in request.headers:
            del request.headers["Content-MD5"]
        request.headers["Content-MD5"] = base64.b64encode(hashlib.md5(request.data).digest()).decode()
    s3.meta.events.register("before-sign.s3.PutBucketCors", hook)
    try:
        return code(s3.put_bucket_cors, Bucket=B, CORSConfiguration={
            "CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]})
    finally:
        s3.meta.events.unregister("before-sign.s3.PutBucketCors", hook)


RULES = [
    {"ID": "page", "AllowedOrigins": ["http://127.0.0.1:8000", "http://*.example.org"],
     "AllowedMethods": ["GET", "PUT", "POST", "HEAD"],
     "AllowedHeaders": ["x-amz-*", "Content-Type"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]


def run(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket=B)
    s3.put_object(Bucket=B, Key="k", Body=b"hello")

    # ------------------------------------------------ configuration
    expect(code(s3.get_bucket_cors, Bucket=B), "NoSuchCORSConfiguration", "GetBucketCors without one")
    st, h, body = raw(aio, "OPTIONS", "/%s/k" % B, {"Origin": "http://127.0.0.1:8000",
                                                   "Access-Control-Request-Method": "GET"})
    expect((st, b"<Code>AccessForbidden</Code>" in body,
            b"CORS is not enabled for this bucket" in body), (403, True, True),
           "preflight on a bucket without CORS: 403 AccessForbidden")
    s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": RULES})
    got = s3.get_bucket_cors(Bucket=B)["CORSRules"]
    expect(got, RULES, "GetBucketCors returns the rules put")

    bad = {
        "<CORSConfiguration></CORSConfiguration>": "MalformedXML",
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule>"
        "</CORSConfiguration>": "MalformedXML",
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET"
        "</AllowedMethod><MaxAgeSeconds>soon</MaxAgeSeconds></CORSRule></CORSConfiguration>": "MalformedXML",
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH"
        "</AllowedMethod></CORSRule></CORSConfiguration>": "InvalidRequest",
        "<CORSConfiguration><CORSRule><AllowedOrigin>http://*.*.org</AllowedOrigin><AllowedMethod>GET"
        "</AllowedMethod></CORSRule></CORSConfiguration>": "InvalidRequest",
        "<CORSConfiguration><CORSRule>": "MalformedXML",
    }
    for doc, want in bad.items():
        expect(put_cors_raw(s3, doc), want, "PutBucketCors refuses %s..." % doc[19:90])
    many = "<CORSConfiguration>" + "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET" \
        "</AllowedMethod></CORSRule>" * 101 + "</CORSConfiguration>"
    expect(put_cors_raw(s3, many), "MalformedXML", "PutBucketCors refuses 101 rules")
    expect(s3.get_bucket_cors(Bucket=B)["CORSRules"], RULES, "refused documents changed nothing")

    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
    out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json", "user",
                          "add", "alice"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    alice = aio.client(ak=j["access_key"], sk=j["secret_key"])
    expect(code(alice.get_bucket_cors, Bucket=B), "AccessDenied", "alice may not read root's CORS")
    expect(code(alice.put_bucket_cors, Bucket=B, CORSConfiguration={"CORSRules": RULES[1:]}),
           "AccessDenied", "alice may not put root's CORS")
    expect(code(alice.delete_bucket_cors, Bucket=B), "AccessDenied", "alice may not delete root's CORS")

    # ------------------------------------------------ preflight
    o = "http://127.0.0.1:8000"
    st, h, _ = raw(aio, "OPTIONS", "/%s/k" % B, {
        "Origin": o, "Access-Control-Request-Method": "PUT",
        "Access-Control-Request-Headers": "content-type, x-amz-date"})
    expect((st, h.get("access-control-allow-origin"), h.get("access-control-allow-methods"),
            h.get("access-control-allow-headers"), h.get("access-control-expose-headers"),
            h.get("access-control-max-age"), h.get("access-control-allow-credentials"),
            h.get("vary")),
           (200, o, "GET, PUT, POST, HEAD", "content-type, x-amz-date", "ETag, x-amz-request-id",
            "600", "true",
            "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"),
           "preflight PUT from the page's origin")
    st, h, _ = raw(aio, "OPTIONS", "/%s/k?X-Amz-Signature=junk&X-Amz-Credential=x" % B, {
        "Origin": "http://a.example.org", "Access-Control-Request-Method": "POST"})
    expect((st, h.get("access-control-allow-origin")), (200, "http://a.example.org"),
           "preflight with a wildcard origin; a presigned query is not verified")
    st, h, _ = raw(aio, "OPTIONS", "/%s" % B, {"Origin": "http://elsewhere.test",
                                              "Access-Control-Request-Method": "GET"})
    expect((st, h.get("access-control-allow-origin"), "access-control-allow-credentials" in h),
           (200, "*", False), "preflight GET from any origin: '*' (rule 2)")
    for what, hd in (
            ("an origin no rule admits", {"Origin": "http://elsewhere.test",
                                          "Access-Control-Request-Method": "PUT"}),
            ("a method no rule admits", {"Origin": o, "Access-Control-Request-Method": "DELETE"}),
            ("a header no rule admits", {"Origin": o, "Access-Control-Request-Method": "PUT",
                                         "Access-Control-Request-Headers": "authorization"})):
        st, h, body = raw(aio, "OPTIONS", "/%s/k" % B, hd)
        expect((st, b"<Code>AccessForbidden</Code>" in body, b"This CORS request is not allowed" in body,
                "access-control-allow-origin" in h), (403, True, True, False), "preflight with " + what)
    st, _, body = raw(aio, "OPTIONS", "/%s/k" % B, {"Access-Control-Request-Method": "GET"})
    expect((st, b"<Code>BadRequest</Code>" in body), (400, True), "preflight without Origin: 400")
    st, _, body = raw(aio, "OPTIONS", "/%s/k" % B, {"Origin": o})
    expect((st, b"<Code>BadRequest</Code>" in body), (400, True),
           "preflight without Access-Control-Request-Method: 400")
    st, _, body = raw(aio, "OPTIONS", "/nosuchbucket/k", {"Origin": o,
                                                         "Access-Control-Request-Method": "GET"})
    expect(st, 404, "preflight on a missing bucket: NoSuchBucket")

    # ------------------------------------------------ ordinary responses
    url = s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "k"}, ExpiresIn=300)
    path = url[url.index("/", 8):]
    st, h, body = raw(aio, "GET", path, {"Origin": o})
    expect((st, body, h.get("access-control-allow-origin"), h.get("access-control-expose-headers"),
            h.get("vary", "").startswith("Origin")),
           (200, b"hello", o, "ETag, x-amz-request-id", True), "presigned GET with Origin")
    st, h, body = raw(aio, "GET", path, {})
    expect((st, "access-control-allow-origin" in h), (200, False), "GET without Origin: no CORS headers")
    st, h, _ = raw(aio, "GET", "/%s/k" % B, {"Origin": "http://elsewhere.test"})
    expect((st, h.get("access-control-allow-origin"), h.get("vary", "")[:6]), (403, "*", "Origin"),
           "anonymous GET (denied): the error carries the '*' rule's headers")
    st, h, _ = raw(aio, "GET", "/%s/nokey" % B, {"Origin": o})
    expect((st, h.get("access-control-allow-origin")), (403, o), "an error answer carries CORS headers")
    purl = s3.generate_presigned_url("put_object", Params={"Bucket": B, "Key": "p"}, ExpiresIn=300)
    st, h, _ = raw(aio, "PUT", purl[purl.index("/", 8):], {"Origin": o}, body=b"put-data")
    expect((st, h.get("access-control-allow-origin")), (200, o), "presigned PUT with Origin")
    st, h, _ = raw(aio, "DELETE", purl[purl.index("/", 8):], {"Origin": o})
    expect(h.get("access-control-allow-origin"), None, "DELETE is not an allowed method: no headers")

    s3.delete_bucket_cors(Bucket=B)
    expect(code(s3.get_bucket_cors, Bucket=B), "NoSuchCORSConfiguration", "DeleteBucketCors")
    st, h, _ = raw(aio, "GET", path, {"Origin": o})
    expect((st, "access-control-allow-origin" in h, "vary" in h), (200, False, False),
           "after DeleteBucketCors: no CORS headers on the next GET")
    st, _, _ = raw(aio, "OPTIONS", "/%s/k" % B, {"Origin": o, "Access-Control-Request-Method": "GET"})
    expect(st, 403, "after DeleteBucketCors: preflight 403")


def main():
    aio = Aio()
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
