#!/usr/bin/env python3
"""iolake-s3-bench against a small S3 stand-in that checks every request's
SigV4 signature with its own (Python, independent) verifier, checks
x-amz-content-sha256 against the body with --sign-payload, stores objects
in memory and answers ListObjectsV2 in pages of 7 keys with continuation
tokens that need URL- and XML-escaping. The bench must see 0 errors, list
every key in the right number of pages, and delete them all; a wrong
secret key must come back as counted http_4xx errors and exit 1.

Then the same against a real iolake-aio (its own SigV4 check, its
ListObjectsV2 with 1,000-key pages): 1,050 keys under a prefix that needs
escaping, listed in 2 pages, verified and deleted; a wrong secret key is a
SignatureDoesNotMatch 403.

Needs python3 (and boto3 for aio_py). IOLAKE_BUILD: the build dir."""
import hashlib
import hmac
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

AK, SK, REGION = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1"
PAGE = 7
store = {}
bad_sigs = []
lock = threading.Lock()


def canonical_query(raw):
    if not raw:
        return ""
    items = []
    for part in raw.split("&"):
        k, _, v = part.partition("=")
        k, v = urllib.parse.unquote_plus(k), urllib.parse.unquote_plus(v)
        items.append((urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~")))
    return "&".join(k + "=" + v for k, v in sorted(items))


def verify(h, body):
    auth = h.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no SigV4 Authorization"
    fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    ak, date, region, service, term = fields["Credential"].split("/")
    if ak != AK or region != REGION or service != "s3" or term != "aws4_request":
        return "bad credential scope " + fields["Credential"]
    signed = fields["SignedHeaders"].split(";")
    amz_date = h.headers["x-amz-date"]
    payload = h.headers["x-amz-content-sha256"]
    if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
        return "x-amz-content-sha256 does not match the body"
    path, _, query = h.path.partition("?")
    creq = "\n".join([h.command, path, canonical_query(query)] +
                     [n + ":" + " ".join(h.headers[n].split()) for n in signed] +
                     ["", ";".join(signed), payload])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, "/".join([date, region, service, term]),
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + SK).encode()
    for part in (date, region, service, term):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(want, fields["Signature"]) else "signature mismatch"


class S3(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", ctype="application/xml"):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", ctype)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        err = verify(self, body)
        if err:
            with lock:
                bad_sigs.append((self.command, self.path, err))
            return self.reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        path, _, query = self.path.partition("?")
        parts = path.lstrip("/").split("/", 1)
        bucket, key = parts[0], urllib.parse.unquote(parts[1]) if len(parts) > 1 else ""
        if self.command == "PUT" and not key:
            return self.reply(409, b"<Error><Code>BucketAlreadyOwnedByYou</Code></Error>")
        if self.command == "PUT":
            with lock:
                store[key] = body
            return self.reply(200)
        if self.command == "DELETE":
            with lock:
                store.pop(key, None)
            return self.reply(204)
        if self.command == "GET" and not key:
            q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
            assert q["list-type"] == "2"
            with lock:
                keys = sorted(k for k in store if k.startswith(q.get("prefix", "")))
            start = 0
            if "continuation-token" in q:
                tok = q["continuation-token"]
                assert tok.startswith("a&b+/="), tok
                start = int(tok[len("a&b+/="):])
            page = keys[start:start + min(PAGE, int(q["max-keys"]))]
            more = start + len(page) < len(keys)
            xml = "<ListBucketResult><Name>%s</Name><KeyCount>%d</KeyCount>" % (bucket, len(page))
            xml += "".join("<Contents><Key>%s</Key></Contents>" % escape(k) for k in page)
            xml += "<IsTruncated>%s</IsTruncated>" % ("true" if more else "false")
            if more:
                xml += "<NextContinuationToken>%s</NextContinuationToken>" % escape(
                    "a&b+/=%d" % (start + len(page)))
            return self.reply(200, (xml + "</ListBucketResult>").encode())
        if self.command == "GET":
            with lock:
                b = store.get(key)
            return self.reply(200, b, "application/octet-stream") if b is not None else self.reply(404)
        return self.reply(405)

    do_GET = do_PUT = do_DELETE = do_HEAD = handle_any


def run_bench(port, workdir, name, *extra, ak=AK):
    build = os.environ.get("IOLAKE_BUILD") or os.path.join(os.path.dirname(__file__), "../../build")
    out = os.path.join(workdir, name + ".json")
    cmd = [os.path.join(build, "iolake-s3-bench"), "--endpoint", "http://127.0.0.1:%d" % port,
           "--access-key", ak, "--region", REGION, "--bucket", "bench",
           "--prefix", "s3 bench+/", "--json", out, *extra]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    print(p.stdout)
    return p.returncode, json.load(open(out))


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), S3)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    with tempfile.TemporaryDirectory() as work:
        rc, d = run_bench(port, work, "ok", "--secret-key", SK, "--size", "3000", "--objects", "50",
                          "--concurrency", "4", "--gets", "1", "--verify", "--warmup-ops", "10",
                          "--sign-payload", "--list", "--delete")
        ph = {p["name"]: p for p in d["phases"]}
        assert not bad_sigs, bad_sigs[:3]
        assert rc == 0 and d["errors_total"] == 0, (rc, d["errors_total"])
        assert ph["bucket"]["ops"] == 1 and ph["bucket"]["errors"] == 0  # 409 owned-by-you is fine
        assert ph["put"]["ops"] == 50 and ph["get"]["ops"] == 50
        assert ph["list"]["items"] == 50, ph["list"]
        assert ph["list"]["ops"] == (50 + PAGE - 1) // PAGE, ph["list"]["ops"]
        assert ph["delete"]["ops"] == 50 and not store, len(store)
        print("ok: signatures verified, 50 keys listed in %d pages, all deleted" % ph["list"]["ops"])

        rc, d = run_bench(port, work, "badkey", "--secret-key", "wrong", "--size", "1KiB",
                          "--objects", "5", "--concurrency", "2", "--warmup", "0")
        ph = {p["name"]: p for p in d["phases"]}
        assert rc == 1, rc
        assert ph["bucket"]["errors_by_kind"]["http_4xx"] == 1, ph["bucket"]
        assert "SignatureDoesNotMatch" in ph["bucket"]["first_error"], ph["bucket"]["first_error"]
        assert "put" not in ph  # a bucket that cannot be created stops the run
        print("ok: a wrong secret key is reported as http_4xx and exit 1")
    srv.shutdown()
    against_aio()
    print("PASS")


def against_aio():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import aio_py
    aio = aio_py.Aio()
    try:
        aio.start()
        n = 1050
        rc, d = run_bench(aio.port, aio.tmp, "aio", "--secret-key", aio_py.SK, "--size", "2000",
                          "--objects", str(n), "--concurrency", "16", "--gets", "1", "--verify",
                          "--warmup-ops", "10", "--sign-payload", "--list", "--delete",
                          ak=aio_py.AK)
        ph = {p["name"]: p for p in d["phases"]}
        assert rc == 0 and d["errors_total"] == 0, (rc, d["errors_total"])
        assert ph["put"]["ops"] == n and ph["get"]["ops"] == n
        assert ph["list"]["items"] == n and ph["list"]["ops"] == 2, ph["list"]
        assert ph["delete"]["ops"] == n and ph["delete"]["errors"] == 0
        left = aio.client().list_objects_v2(Bucket="bench").get("KeyCount")
        assert left == 0, left
        print("ok: iolake-aio: %d keys verified, listed in 2 pages, all deleted" % n)

        rc, d = run_bench(aio.port, aio.tmp, "aio-badkey", "--secret-key", "wrong", "--size",
                          "1KiB", "--objects", "5", "--concurrency", "2", "--warmup", "0",
                          ak=aio_py.AK)
        ph = {p["name"]: p for p in d["phases"]}
        assert rc == 1, rc
        assert ph["bucket"]["errors_by_kind"]["http_4xx"] == 1, ph["bucket"]
        assert "SignatureDoesNotMatch" in ph["bucket"]["first_error"], ph["bucket"]["first_error"]
        print("ok: iolake-aio rejects a wrong secret key with SignatureDoesNotMatch")
    finally:
        aio.close()


if __name__ == "__main__":
    sys.exit(main())
