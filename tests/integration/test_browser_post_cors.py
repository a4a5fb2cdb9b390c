#!/usr/bin/env python3
"""test_browser_post_cors.py — a real browser uploads to iolake-aio (issue
18 must-show 2). Headless Chromium (Debian's chromium, driven by
playwright-core from npm: the setup in browser_py.py) loads a page
served by a test HTTP server on another port — another origin — whose
script:

  1. uploads a generated 300,000-byte file with fetch(FormData) to the
     bucket as a browser POST (SigV4 policy computed here with boto3 and
     the root keys, success_action_status 201, x-amz-meta-from);
  2. GETs it back with a CORS GET through a presigned URL, compares the
     bytes and reads the ETag (exposed by the rule's ExposeHeader);
  3. writes "RESULT: PASS ..." into the page.

The test checks the page's text, then with boto3 that the object exists
with those bytes and metadata. Negative case: the same page from an
origin the CORS rules do not name — both fetches fail in the page
(TypeError: the browser withholds the answers) and it says
"RESULT: CORS-BLOCKED". Screenshots of both pages are kept in
$IOLAKE_BUILD/browser-shots/ (their paths are printed).

Chromium runs with --no-sandbox when the test runs as root (Chromium
refuses its sandbox to root). Everything started is stopped: aio, the
two page servers, node and its browser (by process group)."""
import http.server, json, os, socketserver, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser_py  # noqa: E402
from aio_py import BUILD, Aio, free_port  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
B = "browserb"
SIZE = 300000
FAILS = []


def expect(got, want, what):
    if got != want:
        FAILS.append(what)
        print("FAIL: %s: got %r want %r" % (what, got, want))
    else:
        print("ok:", what, "->", got)


def pattern(n):
    return bytes(((i * 31 + (i >> 8) * 7 + 13) & 255) for i in range(n))


class Page(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


PAGE = os.path.join(TOP, "tests/browser/page.html")


def serve():
    """A page server on its own port (its own origin); set .cfg before a
    browser asks for the page."""

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = open(PAGE).read().replace("__CFG__", json.dumps(self.server.cfg)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = Page(("127.0.0.1", free_port()), H)
    srv.cfg = {}
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def drive(node_dir, url, shot):
    r = browser_py.run_node(node_dir, "drive.js", [url, shot, "90000"])
    for line in r["console"]:
        print("  page console:", line)
    return r["text"]


def run(aio, node_dir, shots):
    s3 = aio.client(signature_version="s3v4")
    s3.create_bucket(Bucket=B)
    good, bad = serve(), serve()  # ports first: the rules name the good page's origin
    servers = [good, bad]
    try:
        origin = "http://127.0.0.1:%d" % good.server_address[1]
        s3.put_bucket_cors(Bucket=B, CORSConfiguration={"CORSRules": [{
            "AllowedOrigins": [origin], "AllowedMethods": ["GET", "POST", "HEAD"],
            "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 60}]})

        def cfg(key_prefix, filename):
            post = s3.generate_presigned_post(
                B, key_prefix + "${filename}",
                Fields={"success_action_status": "201", "x-amz-meta-from": "chromium",
                        "Content-Type": "application/octet-stream"},
                Conditions=[["starts-with", "$key", key_prefix], {"success_action_status": "201"},
                            {"x-amz-meta-from": "chromium"}, {"Content-Type": "application/octet-stream"},
                            ["content-length-range", 1, 1 << 20]], ExpiresIn=600)
            key = key_prefix + filename
            return {"endpoint": aio.ep, "bucket": B, "fields": post["fields"], "filename": filename,
                    "key": key, "size": SIZE,
                    "get_url": s3.generate_presigned_url("get_object", Params={"Bucket": B, "Key": key},
                                                         ExpiresIn=600)}

        ok_cfg = good.cfg = dict(cfg("browser/", "upload.bin"), expect="ok")
        shot_ok = os.path.join(shots, "post-cors-ok.png")
        text = drive(node_dir, origin + "/", shot_ok)
        print("screenshot:", shot_ok)
        expect(text.startswith("RESULT: PASS uploaded and read back %d bytes" % SIZE), True,
               "page from the allowed origin: %s" % text)
        expect(text.endswith("(exposed: true)"), True, "the ETag header is exposed to the page")
        o = s3.get_object(Bucket=B, Key="browser/upload.bin")
        expect((o["Body"].read() == pattern(SIZE), o["Metadata"], o["ContentType"]),
               (True, {"from": "chromium"}, "application/octet-stream"),
               "boto3 reads the browser's upload: bytes and metadata")

        bad.cfg = dict(cfg("browser/neg-", "upload.bin"), expect="blocked", get_url=ok_cfg["get_url"])
        shot_bad = os.path.join(shots, "post-cors-blocked.png")
        text = drive(node_dir, "http://127.0.0.1:%d/" % bad.server_address[1], shot_bad)
        print("screenshot:", shot_bad)
        expect(text.startswith("RESULT: CORS-BLOCKED POST TypeError") and "GET TypeError" in text, True,
               "page from an origin the rules do not name: %s" % text)
        # A form POST is a CORS "simple request": the browser sends it
        # without a preflight and only withholds the answer from the page,
        # so the upload itself happened (CORS guards reading, not writing;
        # the policy's signature is what guards writing).
        expect(s3.head_object(Bucket=B, Key="browser/neg-upload.bin")["ContentLength"], SIZE,
               "the blocked page's POST was still stored (a simple request)")
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()
    for shot in (shot_ok, shot_bad):
        expect(os.path.getsize(shot) > 1000, True, "screenshot kept: " + shot)


def main():
    browser_py.require()
    node_dir = browser_py.npm_ci()
    shots = os.path.join(os.path.abspath(BUILD), "browser-shots")
    os.makedirs(shots, exist_ok=True)
    aio = Aio()
    aio.start()
    try:
        run(aio, node_dir, shots)
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
