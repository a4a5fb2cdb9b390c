#!/usr/bin/env python3
"""test_console.py — the web console (issue 20 must-show 1), served by a
fresh iolake-aio on its admin API port, driven in headless Chromium
(Debian's, through playwright-core: browser_py.py) by
tests/browser/console.js, and checked from outside with curl and boto3.

In the browser: a wrong secret shows an error; login; the overview; 6 OSDs
up on the OSD page; a user created (its secret shown once) and another
created and deleted; the PG grid all active+clean; OSD 3 marked out
(confirmed) and its PGs leave active+clean in the grid (waited for, 30 s
at most); marked in again and the grid clean again; the traffic charts
list the S3 operations this test made; the bucket it made; a quota of one
object set on a second bucket in the buckets page's quota field (then a
boto3 PUT there is refused 403 QuotaExceeded); the maintenance page's GC
and scrub panels (6 OSDs); a session the
server refuses sends the page back to login, where a non-admin's key is
refused with a message. Screenshots of every page
are kept in $IOLAKE_BUILD/console-shots/.

From outside: the user created in the page works with boto3 and the
deleted one is refused; curl sees the content types, the ETag (and a 304
for If-None-Match), the Content-Security-Policy (no inline script), no
authentication on the files, 404 for names not in console/dist, the files
served byte for byte as committed in console/dist, GET /api/v1/stats
(the S3 operations made here, with latency); and no request the page made
went to the S3 port."""
import json, os, random, re, shutil, subprocess, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser_py  # noqa: E402
from aio_py import AK, BUILD, SK, Aio, free_port  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

TOP = browser_py.TOP
DIST = os.path.join(TOP, "console/dist")
BUCKET = "console-demo"
QBUCKET = "console-quota"
OSD = 3
FAILS = []


def expect(ok, what, detail=""):
    if ok:
        print("ok:", what)
    else:
        FAILS.append(what)
        print("FAIL:", what, detail)


def curl(url, *args):
    """(status, headers dict lower-case, body bytes) of one curl call."""
    p = subprocess.run(["curl", "-s", "-D", "-", "--max-time", "10"] + list(args) + [url],
                       capture_output=True, check=True)
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hdr = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdr[k.strip().lower()] = v.strip()
    return status, hdr, body


def curl_checks(api):
    index = open(os.path.join(DIST, "index.html"), "rb").read()
    st, h, body = curl(api + "/console/")
    expect(st == 200 and h.get("content-type") == "text/html; charset=utf-8" and body == index,
           "GET /console/: index.html as committed, text/html", (st, h.get("content-type")))
    csp = h.get("content-security-policy", "")
    expect("script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
           and "frame-ancestors 'none'" in csp, "a strict CSP: scripts from the origin only", csp)
    expect(h.get("x-content-type-options") == "nosniff" and h.get("cache-control") == "no-cache",
           "nosniff, and no-cache (revalidate with the ETag)", h)
    expect(not re.search(rb"<script(?![^>]*\bsrc=)[^>]*>", index) and not re.search(rb"\son\w+=", index)
           and not re.search(rb"<style|\sstyle=", index), "index.html has no inline script, handler or style")
    etag = h.get("etag", "")
    expect(re.fullmatch(r'"[0-9a-f]{20}"', etag) is not None, "a strong ETag", etag)
    st, h2, body = curl(api + "/console/", "-H", "If-None-Match: " + etag)
    expect(st == 304 and body == b"" and h2.get("etag") == etag, "If-None-Match: 304, no body", st)
    st, h2, _ = curl(api + "/console/index.html", "-H", 'If-None-Match: "0000"')
    expect(st == 200, "another ETag: 200", st)

    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
             ".html": "text/html; charset=utf-8"}
    names = sorted(os.listdir(DIST))
    expect(set(names) == {"index.html", "app.js", "app.css"}, "console/dist: one HTML, one JS, one CSS", names)
    for name in names:
        want = open(os.path.join(DIST, name), "rb").read()
        st, h, body = curl(api + "/console/" + name)
        expect(st == 200 and body == want and h.get("content-type") == types[os.path.splitext(name)[1]],
               "GET /console/%s: the committed bytes (%d), %s" % (name, len(want), h.get("content-type")), st)
    js = open(os.path.join(DIST, "app.js"), "rb").read()
    expect(b"http://" not in js.replace(b"http://www.w3.org", b"") and b"https://" not in
           js.replace(b"https://github.com", b"").replace(b"https://preactjs.com", b""),
           "app.js fetches nothing from another host (no CDN)")
    for path in ("/console/nope.js", "/console/app.js.map", "/console/../api/v1/cluster",
                 "/console/dist/app.js", "/console/APP.JS"):
        st, h, body = curl(api + path, "--path-as-is")
        expect(st == 404 and h.get("content-type") == "application/json", "GET %s: 404" % path, st)
    st, h, _ = curl(api + "/console/app.js", "-X", "POST")
    expect(st == 405, "POST /console/app.js: 405", st)
    st, h, _ = curl(api + "/console")
    expect(st == 307 and h.get("location") == "/console/", "GET /console: redirected to /console/", st)
    p = subprocess.run(["curl", "-s", "-I", "--max-time", "10", api + "/console/app.js"],
                       capture_output=True, check=True)
    head = p.stdout.decode()
    expect(head.startswith("HTTP/1.1 200") and "\r\netag: " in head.lower() and
           "content-length: %d\r\n" % os.path.getsize(os.path.join(DIST, "app.js")) in head.lower(),
           "HEAD /console/app.js: 200, its ETag and length", head[:200])

    st, h, body = curl(api + "/api/v1/stats")
    expect(st == 401, "GET /api/v1/stats without credentials: 401", st)
    st, h, body = curl(api + "/api/v1/stats", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", AK + ":" + SK)
    doc = json.loads(body) if st == 200 else {}
    ops = doc.get("ops", {})
    expect(st == 200 and "PutObject" in ops and "CreateBucket" in ops and doc.get("uptime_ms", 0) > 0,
           "GET /api/v1/stats: the S3 operations made here", list(ops))
    put = ops.get("PutObject", {})
    expect(put.get("requests", 0) >= 5 and put.get("ok", 0) >= 5 and put.get("latency_count") == put.get("requests")
           and 0 < put.get("p50_us", 0) <= put.get("p99_us", 0) and len(put.get("buckets", [])) ==
           len(doc.get("latency_bounds_us", [])) + 1, "stats: PutObject counts, percentiles, buckets", put)
    get = ops.get("GetObject", {})
    expect(get.get("4xx", 0) >= 1, "stats: a GetObject 404 counted as 4xx", get)


def main():
    browser_py.require()
    node_dir = browser_py.npm_ci()
    shots = os.path.join(os.path.abspath(BUILD), "console-shots")
    shutil.rmtree(shots, ignore_errors=True)
    os.makedirs(shots)
    api_port = free_port()
    aio = Aio(args=["--admin-api-listen", "127.0.0.1:%d" % api_port])
    api = "http://127.0.0.1:%d" % api_port
    aio.start()
    try:
        s3 = aio.client()
        s3.create_bucket(Bucket=BUCKET)
        for i in range(5):
            s3.put_object(Bucket=BUCKET, Key="obj-%d" % i, Body=os.urandom(1000 + 30000 * i))
        try:
            s3.get_object(Bucket=BUCKET, Key="missing")
        except ClientError:
            pass
        s3.create_bucket(Bucket=QBUCKET)
        s3.put_object(Bucket=QBUCKET, Key="first", Body=b"the only one its quota allows")
        curl_checks(api)
        # The overview's first look says "ok" only once every PG has
        # reported clean after the start: wait for that, as an operator
        # would (iolake-admin cluster wait-healthy finds aio by its dir).
        r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data,
                            "cluster", "wait-healthy", "30"], capture_output=True, text=True)
        expect(r.returncode == 0, "iolake-admin --data-dir cluster wait-healthy: " + (r.stdout + r.stderr).strip())

        cfg = {"url": api + "/console/", "ak": AK, "sk": SK, "shots": shots, "osd": OSD,
               "user": "web-alice", "doomed": "web-bob", "bucket": BUCKET, "quota_bucket": QBUCKET,
               "timeout_ms": 30000}
        # S3 traffic while the page runs, for the traffic charts to show.
        stop = threading.Event()

        def traffic():
            c = aio.client()
            while not stop.wait(0.05):
                try:
                    c.get_object(Bucket=BUCKET, Key="obj-%d" % random.randrange(5))["Body"].read()
                except ClientError:
                    pass  # counted as an error in the charts; not this test's subject
        th = threading.Thread(target=traffic, daemon=True)
        th.start()
        try:
            r = browser_py.run_node(node_dir, "console.js", [json.dumps(cfg)], timeout=150)
        except RuntimeError as e:
            expect(False, "console.js ran through", str(e))
            r = None
        finally:
            stop.set()
            th.join(10)
        if r:
            for line in r["console"]:
                print("  page console:", line)
            steps = {s["name"]: s["value"] for s in r["steps"]}
            for s in r["steps"]:
                print("  step %6d ms  %s: %s" % (s["ms"], s["name"], json.dumps(s["value"])[:300]))
            expect("Wrong access key or secret key" in steps.get("bad password", ""),
                   "a wrong secret: the error shown", steps.get("bad password"))
            expect(any("ok" in x for x in steps.get("overview", [])[:1]), "overview: health ok",
                   steps.get("overview"))
            osds = steps.get("osds", [])
            expect(len(osds) == 6 and all(o["state"] == "up+in" for o in osds),
                   "the OSD page: 6 OSDs up+in", osds)
            expect(all(o["pgs"] > 0 for o in osds), "each OSD holds PGs", [o["pgs"] for o in osds])
            created = steps.get("created", {})
            expect(steps.get("secret gone after Done") is True, "the secret is gone from the page after Done")
            expect("web-alice" in steps.get("users", []) and "web-bob" not in steps.get("users", []),
                   "users: web-alice listed, web-bob deleted", steps.get("users"))
            b = steps.get("pgs before", {})
            expect(b.get("total", 0) > 0 and b.get("clean") == b.get("total") and b.get("with_osd", 0) > 0,
                   "the PG grid: every PG active+clean, some on OSD %d" % OSD, b)
            a = steps.get("pgs after out", {})
            expect(a.get("of_osd") == b.get("with_osd") and "active+clean" not in a.get("states", {"active+clean": 1})
                   and a.get("still_on_osd") == 0,
                   "OSD %d out: all of its PGs left active+clean in the grid, none on it" % OSD, a)
            i = steps.get("pgs after in", {})
            expect(i.get("clean") == b.get("total") and i.get("on_osd", 0) > 0,
                   "OSD %d in again: the grid clean again, PGs back on it" % OSD, i)
            expect({"PutObject", "CreateBucket"} <= set(steps.get("traffic ops", [])),
                   "the traffic page lists the S3 operations", steps.get("traffic ops"))
            row = steps.get("bucket row", [])
            expect(row[:2] == [BUCKET, "root"] and row[4] == "5" and row[5] == "298 KiB",
                   "the buckets page: the bucket, its owner, 5 objects, 298 KiB", row)
            expect("quota" in (steps.get("quota set") or "") and
                   "1 objects" in "".join(steps.get("quota row", [])),
                   "the buckets page: a quota of 1 object set on %s, shown in its row" % QBUCKET,
                   [steps.get("quota set"), steps.get("quota row")])
            try:
                s3.put_object(Bucket=QBUCKET, Key="second", Body=b"over the quota")
                code = "accepted"
            except ClientError as e:
                code = "%s %s" % (e.response["ResponseMetadata"]["HTTPStatusCode"],
                                  e.response["Error"]["Code"])
            expect(code == "403 QuotaExceeded",
                   "the quota set in the console refuses a boto3 PUT: 403 QuotaExceeded", code)
            gcp = steps.get("gc panel", [])
            expect(len(gcp) == 5 and gcp[0].startswith("Queue"), "the maintenance page: the GC panel", gcp)
            expect(sorted(steps.get("scrub rows", [])) == [str(i) for i in range(1, 7)],
                   "the maintenance page: the scrub panel with 6 OSDs", steps.get("scrub rows"))
            expect("log in again" in steps.get("expired session", ""),
                   "a refused session: back to login, saying why", steps.get("expired session"))
            expect("not an admin" in (steps.get("non-admin login") or ""),
                   "web-alice (not an admin) cannot log in: said so", steps.get("non-admin login"))
            s3port = ":%d/" % aio.port
            hit = [q for q in r["requests"] if s3port in q or q.split()[1].rstrip("/").endswith(":%d" % aio.port)]
            other = [q for q in r["requests"] if not q.split()[1].startswith(api + "/")]
            expect(not hit and not other, "the page's %d requests all went to the admin API port, none to S3"
                   % len(r["requests"]), hit + other)
            expect(any("/api/v1/stats" in q for q in r["requests"]), "the page polled /api/v1/stats")
            errs = [c for c in r["console"] if c.startswith("pageerror") or "Content Security Policy" in c]
            expect(not errs, "no page error, no CSP violation", errs)
            for p in r["shots"]:
                expect(os.path.getsize(p) > 5000, "screenshot kept: " + p)

            # The user the page created works with boto3; the deleted one not.
            alice = created.get("web-alice", {})
            c = aio.client(ak=alice.get("access_key", "x"), sk=alice.get("secret_key", "x"))
            try:
                c.create_bucket(Bucket="alice-bucket")
                c.put_object(Bucket="alice-bucket", Key="k", Body=b"from the console's user")
                ok = c.get_object(Bucket="alice-bucket", Key="k")["Body"].read() == b"from the console's user"
            except ClientError as e:
                ok = False
                print(e)
            expect(ok, "web-alice's key from the page works with boto3")
            bob = created.get("web-bob", {})
            c = aio.client(ak=bob.get("access_key", "x"), sk=bob.get("secret_key", "x"))
            try:
                c.list_buckets()
                refused = False
            except ClientError as e:
                refused = e.response["Error"]["Code"] == "InvalidAccessKeyId"
            expect(refused, "web-bob's key (deleted in the page) is refused: InvalidAccessKeyId")
        print("screenshots:", shots)
        rc, _ = aio.stop(limit=15)
        expect(rc == 0, "iolake-aio exits 0 on SIGTERM", rc)
    finally:
        aio.close()
    if FAILS:
        print("%d failures" % len(FAILS))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
