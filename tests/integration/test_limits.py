#!/usr/bin/env python3
"""test_limits.py — the limits before authentication on iolake-aio's S3
port (issue 16), all from 127.0.0.1 (loopback is not exempt):

- request rate per address (--rate-per-addr 5 --rate-burst 20): a burst
  of requests gets about the bucket's worth through, the rest 503
  SlowDown with an S3 XML body (HEAD: no body); a bodiless keep-alive
  request's refusal keeps the connection, which serves the next request
  once the bucket refilled; a refused request with a body, or one that
  asked for Connection: close, is answered with Connection: close and
  the connection closed; boto3 sees the SlowDown code; after a pause the
  address is served again; /metrics counts exactly the refusals seen;
- signed requests give their token back: 100 boto3 requests in a row
  against the same 5/s, burst 20, are all served, and the address still
  has its burst for unsigned ones afterwards;
- connections per address (--max-conns-per-addr 4): the fifth open
  connection is closed at once without a response, counted; closing one
  makes room again;
- the negative credential cache: many requests signed with an unknown
  key are all InvalidAccessKeyId and reach meta once
  (iolake_gw_cred_lookups_total);
- named limits on what a client controls: user metadata of 2 KiB is
  taken, one byte more is MetadataTooLarge (before the body is read);
  a key of 1,024 bytes is taken, 1,025 is KeyTooLongError;
- the minimum body rate (--min-body-rate 1000): a PUT body trickling at
  ~100 B/s is cut after the 10 s window, counted; the object is not
  created.

After authentication, on a second aio (--rate-per-user 10
--bytes-per-user 256KiB, the default per-address limit, which signed
requests do not spend):
- a burst of 60 requests by alice gets about her bucket's worth (20)
  through, the rest SlowDown, while bob, from the same address at the
  same time, is served; /metrics counts alice's refusals by reason;
- bytes: a 600 KiB PUT is admitted on a full byte bucket (512 KiB) and
  leaves alice in debt, so her next request is SlowDown until the refill
  pays it back (~0.35 s); a 600 KiB GET is charged when it ends, likewise.

make-test: alone (tests/run-tests.py): token buckets and slow-loris timeouts are
measured against the clock.
"""
import json, subprocess
import os, socket, sys, time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aio_py  # noqa: E402
import s3sign  # noqa: E402
import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    fail("no metric %s" % name)


def one(port, method="GET", path="/health/live"):
    """A request on a fresh connection: (status, headers, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path)
    r = c.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    c.close()
    return out


def test_rate(aio):
    refused0 = metric(aio.port, 'iolake_gw_http_refused_total{reason="rate_per_addr"}')
    # Made before (making one takes longer than a refill), without retries
    # (Debian's botocore counts max_attempts as retries).
    client = boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=aio_py.AK,
                          aws_secret_access_key=aio_py.SK, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"},
                                        retries={"max_attempts": 0}))
    time.sleep(4)  # the bucket refills after start-up's requests
    t0 = time.monotonic()
    ok = slow = 0
    for i in range(100):
        st, h, body = one(aio.port, "HEAD" if i == 99 else "GET")
        if st == 200:
            ok += 1
        elif st == 503:
            slow += 1
            if i == 99:
                if body:
                    fail("HEAD 503 with a body")
                continue
            if s3sign.error_code(body) != "SlowDown":
                fail("503 body: %r" % body)
            if h.get("connection", "").lower() == "close":
                fail("a keep-alive GET's 503 closes the connection: %r" % h)
            if h.get("content-type") != "application/xml":
                fail("503 content-type %r" % h.get("content-type"))
        else:
            fail("status %d" % st)
    dt = time.monotonic() - t0
    most = 20 + 5 * dt + 1
    if not (20 <= ok <= most) or ok + slow != 100:
        fail("burst of 100 in %.2f s: %d ok, %d SlowDown (wanted 20..%d ok)" % (dt, ok, slow, most))
    print("ok: 100 requests in %.2f s from one address: %d served, %d 503 SlowDown (XML, "
          "connection kept)" % (dt, ok, slow))
    slow += keep_alive_refusals(aio)
    while one(aio.port)[0] == 200:  # empty the bucket again
        pass
    slow += 1
    try:
        client.list_buckets()
        fail("boto3 was not throttled")
    except ClientError as e:
        if e.response["Error"]["Code"] != "SlowDown":
            fail("boto3 got %s" % e.response["Error"]["Code"])
        slow += 1
    print("ok: boto3 sees SlowDown")
    time.sleep(0.5)  # 2.5 tokens back
    if one(aio.port)[0] != 200:
        fail("not served again after a pause")
    refused = metric(aio.port, 'iolake_gw_http_refused_total{reason="rate_per_addr"}')
    if refused - refused0 != slow:
        fail("metric counts %d refusals, saw %d" % (refused - refused0, slow))
    print("ok: served again after a pause; /metrics counted the %d refusals" % slow)


class Raw:
    """One connection, its answers read in order from one buffered reader."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")

    def send(self, req):
        self.s.sendall(req)

    def answer(self):
        """(status, lower-cased head, body) of the next answer."""
        line = self.f.readline()
        if not line.startswith(b"HTTP/1.1 "):
            fail("not an answer: %r" % line)
        h = {}
        while True:
            ln = self.f.readline().decode().strip()
            if not ln:
                break
            k, v = ln.split(":", 1)
            h[k.strip().lower()] = v.strip()
        return int(line.split()[1]), h, self.f.read(int(h.get("content-length", "0")))

    def ask(self, req):
        self.send(req)
        return self.answer()

    def closed(self):
        return self.f.read(1) == b""

    def close(self):
        self.f.close()
        self.s.close()


def keep_alive_refusals(aio):
    """Refusals on one connection; returns how many requests were refused."""
    get = b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    c = Raw(aio.port)
    refused = 0
    for _ in range(200):  # the bucket is empty after test_rate's burst
        if c.ask(get)[0] == 503:
            refused += 1
            break
    if not refused:
        fail("no 503 in 200 requests on one connection")
    # Two requests pipelined in one write: both answered, in order, and
    # the connection still open after them.
    c.send(get + get)
    for _ in range(2):
        st, h, body = c.answer()
        if st == 503:
            refused += 1
            if s3sign.error_code(body) != "SlowDown" or h.get("connection") == "close":
                fail("a pipelined refusal: %r %r" % (h, body))
    time.sleep(0.5)  # 2.5 tokens back
    st, h, _ = c.ask(get)
    if st != 200:
        fail("the kept connection is not served after a refill: %d" % st)
    # Emptied again, a refusal of a request with a body closes (its body
    # is not read), and so does one whose client asked to close.
    while c.ask(get)[0] == 200:
        pass
    refused += 1
    st, h, _ = c.ask(b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    if st != 503 or h.get("connection") != "close":
        fail("a refused PUT with a body: %d %r" % (st, h))
    refused += 1
    if not c.closed():
        fail("the refused PUT's connection stays open")
    c.close()
    c = Raw(aio.port)
    st, h, _ = c.ask(b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    if st != 503 or h.get("connection") != "close" or not c.closed():
        fail("a refused Connection: close request: %d %r" % (st, h))
    refused += 1
    c.close()
    print("ok: a bodiless keep-alive refusal keeps the connection (pipelined too) and it is "
          "served after a refill; a body or Connection: close closes it")
    return refused


def test_signed_not_counted(aio):
    client = boto3.client("s3", endpoint_url=aio.ep, aws_access_key_id=aio_py.AK,
                          aws_secret_access_key=aio_py.SK, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"},
                                        retries={"max_attempts": 0}))
    # A full bucket again first: the test before this one leaves it empty,
    # and /metrics, unsigned, spends a token like any other request.
    time.sleep(4.5)
    refused0 = metric(aio.port, 'iolake_gw_http_refused_total{reason="rate_per_addr"}')
    t0 = time.monotonic()
    for i in range(100):
        try:
            client.list_buckets()
        except ClientError as e:
            fail("signed request %d refused: %s" % (i, e.response["Error"]["Code"]))
    dt = time.monotonic() - t0
    if metric(aio.port, 'iolake_gw_http_refused_total{reason="rate_per_addr"}') != refused0:
        fail("signed requests were refused (a retry hid it)")
    ok = sum(1 for _ in range(25) if one(aio.port)[0] == 200)
    # Without refunds the 100 would have spent the burst and their own
    # refill (20 + 5 * dt < 100): next to nothing left. With them, the
    # burst less the /metrics read above.
    if ok < 15:
        fail("after 100 signed requests only %d of 25 unsigned ones were served" % ok)
    print("ok: 100 signed requests in %.2f s (5/s, burst 20) all served; the bucket was "
          "still full for unsigned ones (%d of 25 served)" % (dt, ok))


def test_conns(aio):
    time.sleep(1.5)
    held = [socket.create_connection(("127.0.0.1", aio.port)) for _ in range(4)]
    time.sleep(0.2)
    extra = socket.create_connection(("127.0.0.1", aio.port))
    extra.settimeout(3)
    try:
        extra.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        got = extra.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        got = b""
    if got:
        fail("a fifth connection was served: %r" % got)
    extra.close()
    print("ok: the fifth connection from one address is closed without a response")
    # The held ones still work.
    held[0].sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
    if not held[0].recv(100).startswith(b"HTTP/1.1 200"):
        fail("a held connection does not answer")
    held.pop().close()
    time.sleep(0.2)
    st = one(aio.port)[0]
    if st != 200:
        fail("after a close: %d" % st)
    for s in held:
        s.close()
    time.sleep(0.2)
    n = metric(aio.port, 'iolake_gw_http_refused_total{reason="conns_per_addr"}')
    if n != 1:
        fail("conns_per_addr refusals %d, wanted 1" % n)
    print("ok: room again after one closes; /metrics counted 1 refusal")


def test_negative_cache(aio):
    time.sleep(4)
    before = metric(aio.port, "iolake_gw_cred_lookups_total")
    bad = aio.client(ak="AKIAUNKNOWNKEY000001", sk="x" * 40)
    for _ in range(15):
        try:
            bad.list_buckets()
            fail("an unknown key listed buckets")
        except ClientError as e:
            if e.response["Error"]["Code"] != "InvalidAccessKeyId":
                fail("unknown key: %s" % e.response["Error"]["Code"])
    after = metric(aio.port, "iolake_gw_cred_lookups_total")
    if after - before != 1:
        fail("15 requests with one unknown key made %d meta lookups" % (after - before))
    print("ok: 15 requests with an unknown key: InvalidAccessKeyId each, 1 meta lookup")


def test_client_limits(aio):
    time.sleep(4)
    c = aio.client()
    c.create_bucket(Bucket="lim")
    meta = {"a": "x" * 1000, "bb": "y" * 1045}  # 1 + 1000 + 2 + 1045 = 2048
    c.put_object(Bucket="lim", Key="m", Body=b"1", Metadata=meta)
    got = c.head_object(Bucket="lim", Key="m")["Metadata"]
    if got != meta:
        fail("metadata round trip")
    meta["bb"] += "z"
    try:
        c.put_object(Bucket="lim", Key="m2", Body=b"1" * 100000, Metadata=meta)
        fail("2,049 bytes of metadata taken")
    except ClientError as e:
        if e.response["Error"]["Code"] != "MetadataTooLarge":
            fail("metadata: %s" % e.response["Error"]["Code"])
    c.put_object(Bucket="lim", Key="k" * 1024, Body=b"1")
    try:
        c.put_object(Bucket="lim", Key="k" * 1025, Body=b"1")
        fail("a 1,025-byte key taken")
    except ClientError as e:
        if e.response["Error"]["Code"] != "KeyTooLongError":
            fail("key: %s" % e.response["Error"]["Code"])
    print("ok: 2,048 bytes of metadata taken, 2,049 MetadataTooLarge; 1,024-byte key taken, "
          "1,025 KeyTooLongError")


def test_slow_body(aio):
    time.sleep(2)
    c = aio.client()
    c.create_bucket(Bucket="slow")
    sg = s3sign.Signer(aio_py.AK, aio_py.SK)
    host = "127.0.0.1:%d" % aio.port
    h, _, _ = sg.sign_headers("PUT", "/slow/obj", {"host": host, "content-length": "100000"},
                              "UNSIGNED-PAYLOAD")
    s = socket.create_connection(("127.0.0.1", aio.port))
    s.sendall(("PUT /slow/obj HTTP/1.1\r\n" + "".join("%s: %s\r\n" % kv for kv in h.items())
               + "\r\n").encode())
    t0 = time.monotonic()
    cut = False
    try:
        while time.monotonic() - t0 < 20:
            s.sendall(b"x" * 20)
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        cut = True
    dt = time.monotonic() - t0
    s.close()
    if not cut or not 9 <= dt <= 15:
        fail("a 100 B/s body: cut=%s after %.1f s" % (cut, dt))
    if metric(aio.port, "iolake_gw_http_slow_bodies_total") != 1:
        fail("slow body not counted")
    try:
        c.head_object(Bucket="slow", Key="obj")
        fail("the slow PUT created the object")
    except ClientError:
        pass
    print("ok: a body at 100 B/s is cut after %.1f s (minimum 1000 B/s); no object" % dt)


def absent_bucket_cache(aio, alice):
    """Anonymous requests at a missing bucket read meta once per TTL; a
    create voids the cache at once."""
    name = "absent-b"
    get = ("GET /%s/k HTTP/1.1\r\nHost: x\r\n\r\n" % name).encode()
    hits = 'iolake_gw_bucket_cache_absent_hits_total'
    c = Raw(aio.port)  # one connection: one loop's cache
    h0 = metric(aio.port, hits)
    for _ in range(10):
        st, _, body = c.ask(get)
        if st != 404 or s3sign.error_code(body) != "NoSuchBucket":
            fail("anonymous GET of a missing bucket: %d %r" % (st, body))
    got = metric(aio.port, hits) - h0
    if got < 8:  # the first reads meta (a second if the TTL ran out between)
        fail("10 anonymous GETs of a missing bucket: %d answered from the cache" % got)
    # A signed request is never answered from it.
    try:
        alice.head_object(Bucket=name, Key="k")
        fail("HEAD in a missing bucket succeeded")
    except ClientError as e:
        if e.response["Error"]["Code"] not in ("404", "NoSuchBucket"):
            fail("signed HEAD in a missing bucket: %s" % e.response["Error"]["Code"])
    alice.create_bucket(Bucket=name, ObjectOwnership="ObjectWriter", ACL="public-read")
    alice.put_object(Bucket=name, Key="k", Body=b"now", ACL="public-read")
    st, _, body = c.ask(get)  # within the TTL of the entry made above
    if st != 200 or body != b"now":
        fail("anonymous GET right after the create: %d %r" % (st, body))
    c.close()
    print("ok: anonymous GETs of a missing bucket: NoSuchBucket, %d of 10 from the cache; "
          "served at once after a create" % got)


def test_per_user():
    aio = aio_py.Aio(args=["--max-conns-per-addr", "0",
                           "--rate-per-user", "10", "--bytes-per-user", "256KiB"])
    try:
        aio.start()
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        admin = [os.path.join(aio_py.BUILD, "iolake-admin"), "--meta", meta]
        keys = {}
        for name in ("alice", "bob"):
            out = subprocess.run(admin + ["--json", "user", "add", name], check=True,
                                 capture_output=True, text=True).stdout
            j = json.loads(out)
            keys[name] = boto3.client(
                "s3", endpoint_url=aio.ep, aws_access_key_id=j["access_key"],
                aws_secret_access_key=j["secret_key"], region_name="us-east-1",
                config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0}))
        alice, bob = keys["alice"], keys["bob"]
        alice.create_bucket(Bucket="alice-b")
        bob.create_bucket(Bucket="bob-b")
        absent_bucket_cache(aio, alice)
        time.sleep(2.5)  # both request buckets full again

        def code(fn, **kw):
            try:
                fn(**kw)
                return "OK"
            except ClientError as e:
                return e.response["Error"]["Code"]

        r0 = metric(aio.port, 'iolake_gw_user_refused_total{reason="rate_per_user"}')
        t0 = time.monotonic()
        got = [code(alice.head_bucket, Bucket="alice-b") for _ in range(60)]
        dt = time.monotonic() - t0
        bob_got = [code(bob.head_bucket, Bucket="bob-b") for _ in range(10)]
        ok, slow = got.count("OK"), got.count("SlowDown")
        # HEAD's error has no body: boto3 names it by status ("503").
        slow += got.count("503")
        most = 20 + 10 * dt + 1
        if not (20 <= ok <= most) or ok + slow != 60:
            fail("alice's 60 in %.2f s: %d ok, %d SlowDown, %r (wanted 20..%d ok)" %
                 (dt, ok, slow, sorted(set(got)), most))
        if bob_got.count("OK") != 10:
            fail("bob was throttled by alice's burst: %r" % bob_got)
        r1 = metric(aio.port, 'iolake_gw_user_refused_total{reason="rate_per_user"}')
        if r1 - r0 != slow:
            fail("metric counts %d per-user refusals, saw %d" % (r1 - r0, slow))
        print("ok: alice's 60 requests in %.2f s: %d served, %d SlowDown; bob served "
              "meanwhile; /metrics counted %d" % (dt, ok, slow, r1 - r0))

        time.sleep(2.5)
        body = os.urandom(600 * 1024)
        b0 = metric(aio.port, 'iolake_gw_user_refused_total{reason="bytes_per_user"}')
        if code(alice.put_object, Bucket="alice-b", Key="big", Body=body) != "OK":
            fail("a 600 KiB PUT on a full byte bucket was refused")
        after_put = code(alice.list_objects_v2, Bucket="alice-b")
        if after_put != "SlowDown":
            fail("alice in byte debt after a 600 KiB PUT got %s" % after_put)
        time.sleep(0.6)   # 88 KiB of debt at 256 KiB/s
        if code(alice.list_objects_v2, Bucket="alice-b") != "OK":
            fail("alice not served once her byte debt was paid")
        time.sleep(2.5)
        got = alice.get_object(Bucket="alice-b", Key="big")["Body"].read()
        if got != body:
            fail("GET of the 600 KiB object returned other bytes")
        after_get = code(alice.list_objects_v2, Bucket="alice-b")
        if after_get != "SlowDown":
            fail("alice in byte debt after a 600 KiB GET got %s" % after_get)
        if code(bob.list_objects_v2, Bucket="bob-b") != "OK":
            fail("bob refused while alice was in byte debt")
        b1 = metric(aio.port, 'iolake_gw_user_refused_total{reason="bytes_per_user"}')
        if b1 - b0 != 2:
            fail("metric counts %d byte refusals, saw 2" % (b1 - b0))
        print("ok: 600 KiB PUT and GET each put alice in byte debt (next request SlowDown, "
              "served again after the refill); bob unaffected")
        aio.stop()
    finally:
        aio.close()


def main():
    aio = aio_py.Aio(args=["--rate-per-addr", "5", "--rate-burst", "20",
                           "--max-conns-per-addr", "4", "--min-body-rate", "1000"])
    try:
        aio.start()
        test_rate(aio)
        test_signed_not_counted(aio)
        test_conns(aio)
        test_negative_cache(aio)
        test_client_limits(aio)
        test_slow_body(aio)
        aio.stop()
    finally:
        aio.close()
    test_per_user()
    print("PASS test_limits")


if __name__ == "__main__":
    main()
