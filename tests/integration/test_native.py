#!/usr/bin/env python3
"""test_native.py — the native protocol (issue 19, docs/native-protocol.md)
against a real iolake-aio, with its CLI (build/iolake, over libiolake) on
one side and Debian's aws-cli / boto3 on the other:

  - PUT with the CLI, GET with aws-cli: the same bytes and ETag (the MD5);
    PUT with aws-cli, GET with the CLI: the same; for an inline object, an
    erasure-coded one and a 100 MiB one (the CLI's PutBegin/Append/Commit,
    aws-cli's multipart upload read back natively through part rows);
  - ranges (and a range past the end refused: InvalidRange);
  - LIST with a prefix and a delimiter; DELETE (then NoSuchKey both ways);
  - a wrong secret (SignatureDoesNotMatch), a clock an hour off
    (RequestTimeTooSkewed), an unknown key (InvalidAccessKeyId): refused;
  - a second user without a grant: AccessDenied for GET, PUT, LIST and
    DELETE; a bucket policy granting him GetObject and PutObject on a
    prefix lets him do exactly that, and only there;
  - an inline Put decided on the loop's cached bucket still sees a quota
    set on meta behind the gateway's back (the commit's bucket digest);
    an inline Put over an erasure-coded object;
  - --skip-md5: an opaque "<32 hex>-0" ETag, the same in S3's HEAD, and
    the bytes readable over S3;
  - iolake-s3-bench --protocol native: a small PUT/GET run with --verify,
    its connections logged in, and one with --native-sign-each-call;
  - sessions (tests/tools/native-session): an unsigned call with no login,
    a Login replayed on another connection or twice, unsigned or with a
    wrong secret, are refused; a logged-in connection's unsigned calls
    work, and stop at once when the key is removed, and stay stopped when
    the same key id comes back with another secret; a libiolake handle
    logs in again after the gateway restarts under it;
  - the CLI with --sign-each-call (no login) still works.
"""
import hashlib, json, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402

FAILS = []
CLI = os.path.join(BUILD, "iolake")


def expect(got, want, what):
    if got != want:
        FAILS.append("%s: got %r, want %r" % (what, got, want))
        print("FAIL %s: got %r, want %r" % (what, got, want))
    else:
        print("ok: %s" % what)


def cli(ep, *args, ak=AK, sk=SK, stdin=None):
    env = dict(os.environ, IOLAKE_ACCESS_KEY=ak, IOLAKE_SECRET_KEY=sk, IOLAKE_ENDPOINT=ep)
    return subprocess.run([CLI] + list(args), capture_output=True, env=env, input=stdin,
                          timeout=300)


def aws(aio, *args, ak=AK, sk=SK):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null",
               AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    return subprocess.run(["aws", "--endpoint-url", aio.ep] + list(args), capture_output=True,
                          env=env, timeout=300)


def code_of(r):
    """The S3 error code the CLI printed ("iolake get: NoSuchKey: ...")."""
    m = re.search(rb": ([A-Za-z]+): ", r.stderr)
    return m.group(1).decode() if m else ("OK" if r.returncode == 0 else r.stderr.decode())


def md5(b):
    return hashlib.md5(b).hexdigest()


def both_ways(aio, ep, s3, tmp, b, name, data):
    f = os.path.join(tmp, name + ".in")
    g = os.path.join(tmp, name + ".out")
    with open(f, "wb") as fh:
        fh.write(data)
    # native PUT -> S3 GET
    r = cli(ep, "put", "%s/%s.n" % (b, name), f)
    expect((r.returncode, r.stdout.decode().strip()), (0, md5(data)),
           "%s: CLI put prints the MD5 ETag" % name)
    r = aws(aio, "s3api", "get-object", "--bucket", b, "--key", name + ".n", g)
    got = open(g, "rb").read() if r.returncode == 0 else b""
    etag = json.loads(r.stdout)["ETag"] if r.returncode == 0 else r.stderr
    expect((got == data, etag), (True, '"%s"' % md5(data)),
           "%s: aws-cli GETs the natively PUT bytes and ETag" % name)
    # S3 PUT -> native GET
    if len(data) > 8 << 20:
        r = aws(aio, "s3", "cp", "--only-show-errors", f, "s3://%s/%s.s" % (b, name))
    else:
        r = aws(aio, "s3api", "put-object", "--bucket", b, "--key", name + ".s", "--body", f)
    expect(r.returncode, 0, "%s: aws-cli PUT" % name)
    os.unlink(g)
    r = cli(ep, "get", "%s/%s.s" % (b, name), g)
    got = open(g, "rb").read() if r.returncode == 0 else b""
    expect((r.returncode, got == data), (0, True),
           "%s: the CLI GETs the aws-cli PUT bytes (%s)" % (name, r.stderr.decode().strip()))
    head = s3.head_object(Bucket=b, Key=name + ".s")["ETag"].strip('"')
    r = cli(ep, "head", "%s/%s.s" % (b, name))
    expect(("etag %s" % head) in r.stdout.decode(), True, "%s: native HEAD shows S3's ETag" % name)


def main():
    aio = Aio(osd_size="1G")
    aio.start()
    try:
        run(aio)
        rc, took = aio.stop(limit=30)
        expect(rc, 0, "SIGTERM: aio exits 0 in %.1f s (an ASan build: no report)" % took)
    finally:
        aio.close()
    if FAILS:
        print("%d failures" % len(FAILS))
        for f in FAILS:
            print("  " + f)
        sys.exit(1)
    print("PASS")


def run(aio):
    info = json.load(open(os.path.join(aio.data, "aio.json")))
    ep = info["native_endpoint"]
    print("native endpoint %s" % ep)
    expect(info.get("gw_loops", 0) >= 1, True,
           "aio.json names the gateway's loops (gw_loops %s): a client's connections" %
           info.get("gw_loops"))
    s3 = aio.client()
    b = "nat"
    s3.create_bucket(Bucket=b)
    tmp = tempfile.mkdtemp(prefix="native.", dir=aio.tmp)

    both_ways(aio, ep, s3, tmp, b, "small", os.urandom(100))
    both_ways(aio, ep, s3, tmp, b, "ec", os.urandom(300 * 1024 + 7))
    big = os.urandom(100 << 20)
    t0 = time.time()
    both_ways(aio, ep, s3, tmp, b, "big", big)
    print("100 MiB both ways in %.1f s" % (time.time() - t0))

    # ranges
    data = open(os.path.join(tmp, "ec.in"), "rb").read()
    r = cli(ep, "get", "--range", "10-99", "%s/ec.n" % b, "-")
    expect(r.stdout, data[10:100], "range 10-99")
    r = cli(ep, "get", "--range", "%d-%d" % (len(data) - 5, len(data) + 100), "%s/ec.n" % b, "-")
    expect(r.stdout, data[-5:], "a range past the end is cut at the end")
    r = cli(ep, "get", "--range", "%d-%d" % (len(data), len(data) + 9), "%s/ec.n" % b, "-")
    expect(code_of(r), "InvalidRange", "a range starting past the end: InvalidRange")
    r = cli(ep, "get", "--range", "%d-%d" % ((90 << 20) + 3, (90 << 20) + 20003), "%s/big.s" % b, "-")
    expect(r.stdout, big[(90 << 20) + 3:(90 << 20) + 20004], "a range inside aws-cli's multipart object")

    # list
    for k in ("d/a/1", "d/a/2", "d/b/1", "d/c"):
        cli(ep, "put", "%s/%s" % (b, k), stdin=b"x")
    r = cli(ep, "ls", "--delimiter", "/", "%s/d/" % b)
    names = [ln.split()[-1] for ln in r.stdout.decode().splitlines()]
    expect(names, ["d/a/", "d/b/", "d/c"], "ls with a prefix and a delimiter")
    r = cli(ep, "ls", "%s/d/a/" % b)
    expect([ln.split()[-1] for ln in r.stdout.decode().splitlines()], ["d/a/1", "d/a/2"],
           "ls with a prefix")
    r = cli(ep, "ls", "--max-keys", "2", "%s/d/" % b)
    expect(len(r.stdout.decode().splitlines()), 2, "ls --max-keys 2")

    # delete
    r = cli(ep, "rm", "%s/d/c" % b)
    expect(r.returncode, 0, "rm")
    r = aws(aio, "s3api", "head-object", "--bucket", b, "--key", "d/c")
    expect(r.returncode != 0 and b"404" in r.stderr, True, "deleted natively: S3 HEAD 404")
    r = cli(ep, "head", "%s/d/c" % b)
    expect(code_of(r), "NoSuchKey", "deleted: native HEAD NoSuchKey")
    r = cli(ep, "rm", "%s/d/c" % b)
    expect(r.returncode, 0, "rm of a missing key succeeds, as S3")
    r = cli(ep, "get", "nosuchbucket/x", "-")
    expect(code_of(r), "NoSuchBucket", "a missing bucket: NoSuchBucket")
    r = cli(ep, "put", "nosuchbucket/x", stdin=b"inline")
    expect(code_of(r), "NoSuchBucket", "an inline Put into a missing bucket: NoSuchBucket")
    r = cli(ep, "put", "%s/%s" % (b, "k" * 1025), stdin=b"x")
    expect(code_of(r), "KeyTooLongError", "a key of 1,025 bytes: KeyTooLongError")
    r = cli(ep, "put", "%s/%s" % (b, "k" * 1024), stdin=b"x")
    expect(r.returncode, 0, "a key of 1,024 bytes is stored")

    # authentication
    r = cli(ep, "get", "%s/small.n" % b, "-", sk=SK + "x")
    expect(code_of(r), "SignatureDoesNotMatch", "a wrong secret is refused")
    r = cli(ep, "get", "%s/small.n" % b, "-", ak="AKIANOSUCHKEY0000000")
    expect(code_of(r), "InvalidAccessKeyId", "an unknown key is refused")
    r = cli(ep, "--debug-clock-offset", "-3600", "get", "%s/small.n" % b, "-")
    expect(code_of(r), "RequestTimeTooSkewed", "a timestamp an hour old is refused")
    r = cli(ep, "--debug-clock-offset", "-600", "get", "%s/small.n" % b, "-")
    expect(r.returncode, 0, "a timestamp 10 minutes old is accepted (skew 15 min)")

    # authorization: bob, no grant, then a bucket policy
    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
    admin = [os.path.join(BUILD, "iolake-admin"), "--meta", meta]
    j = json.loads(subprocess.run(admin + ["--json", "user", "add", "bob"], capture_output=True,
                                  text=True, check=True).stdout)
    bak, bsk = j["access_key"], j["secret_key"]

    def bob(*args, **kw):
        return code_of(cli(ep, *args, ak=bak, sk=bsk, **kw))
    expect((bob("get", "%s/small.n" % b, "-"), bob("put", "%s/p/x" % b, stdin=b"y"),
            bob("ls", "%s/" % b), bob("rm", "%s/small.n" % b)),
           ("AccessDenied",) * 4, "bob without a grant: GET, PUT, LIST, DELETE denied")
    pol = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["bob"]},
        "Action": ["s3:GetObject", "s3:PutObject"],
        "Resource": ["arn:aws:s3:::%s/p/*" % b]}]}
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(pol))
    t0 = time.time()
    while bob("put", "%s/p/x" % b, stdin=b"y") != "OK" and time.time() - t0 < 10:
        time.sleep(0.1)
    expect((bob("put", "%s/p/x" % b, stdin=b"yy"), bob("get", "%s/p/x" % b, "-")), ("OK", "OK"),
           "a bucket policy lets bob PUT and GET under p/")
    expect((bob("get", "%s/small.n" % b, "-"), bob("put", "%s/q/x" % b, stdin=b"y"),
            bob("rm", "%s/p/x" % b)), ("AccessDenied",) * 3,
           "... and nothing else (another prefix, DELETE)")

    # skip-MD5
    f = os.path.join(tmp, "skip.in")
    sdata = os.urandom(200 * 1024)
    open(f, "wb").write(sdata)
    for name, body in (("skip", f), ("skip-inline", None)):
        if body:
            r = cli(ep, "put", "--skip-md5", "%s/%s" % (b, name), body)
        else:
            r = cli(ep, "put", "--skip-md5", "%s/%s" % (b, name), stdin=b"tiny")
        etag = r.stdout.decode().strip()
        expect(bool(re.fullmatch(r"[0-9a-f]{32}-0", etag)), True,
               "%s: --skip-md5 stores an opaque <hex>-0 ETag (%s)" % (name, etag))
        h = s3.head_object(Bucket=b, Key=name)["ETag"]
        expect(h, '"%s"' % etag, "%s: S3 HEAD shows the same ETag" % name)
    got = s3.get_object(Bucket=b, Key="skip")["Body"].read()
    expect(got == sdata, True, "a --skip-md5 object reads back over S3")

    # the inline Put's cached bucket (gw_bcache): a change made past the
    # gateway (iolake-admin to meta) within the cache's second must still
    # be decided on (the commit's bucket digest, then a fresh read)
    r = cli(ep, "put", "%s/q1" % b, stdin=b"fills the cache")
    expect(r.returncode, 0, "an inline Put (the bucket cached)")
    t0 = time.time()
    subprocess.run(admin + ["quota", "set", "--bucket", b, "--max-objects", "1"],
                   capture_output=True, check=True)
    r = cli(ep, "put", "%s/q2" % b, stdin=b"past the quota")
    expect(code_of(r), "QuotaExceeded",
           "a quota set on meta %.2f s after the bucket was cached: QuotaExceeded"
           % (time.time() - t0))
    subprocess.run(admin + ["quota", "clear", "--bucket", b], capture_output=True, check=True)
    r = cli(ep, "put", "%s/q2" % b, stdin=b"past the quota")
    expect(r.returncode, 0, "the quota cleared: the inline Put is stored")
    # an inline Put over an erasure-coded object (the commit reads no
    # current record: meta queues the old shards for GC)
    r = cli(ep, "put", "%s/over" % b, os.path.join(tmp, "ec.in"))
    r = cli(ep, "put", "%s/over" % b, stdin=b"now inline")
    expect((r.returncode, cli(ep, "get", "%s/over" % b, "-").stdout), (0, b"now inline"),
           "an inline Put replaces an erasure-coded object")

    # the bench's native engine, and S3's, on the same bucket
    for proto in ("native", "s3"):
        bep = ep if proto == "native" else aio.ep
        r = subprocess.run([os.path.join(BUILD, "iolake-s3-bench"), "--protocol", proto,
                            "--endpoint", bep, "--access-key", AK, "--secret-key", SK,
                            "--bucket", b, "--prefix", "bench-%s/" % proto, "--size", "64KiB",
                            "--objects", "60", "--concurrency", "8", "--warmup", "0",
                            "--verify", "--delete"], capture_output=True, text=True, timeout=120)
        expect(r.returncode, 0, "iolake-s3-bench --protocol %s --verify --delete (%s)"
               % (proto, (r.stdout + r.stderr).strip().splitlines()[-1:] if r.returncode else ""))
    r = subprocess.run([os.path.join(BUILD, "iolake-s3-bench"), "--protocol", "native",
                        "--native-sign-each-call", "--endpoint", ep, "--access-key", AK,
                        "--secret-key", SK, "--bucket", b, "--prefix", "bench-signed/",
                        "--size", "4KiB", "--objects", "60", "--concurrency", "8", "--warmup", "0",
                        "--verify", "--delete"], capture_output=True, text=True, timeout=120)
    expect(r.returncode, 0, "iolake-s3-bench --protocol native --native-sign-each-call")
    r = cli(ep, "--sign-each-call", "get", "%s/small.n" % b, "-")
    expect(r.returncode, 0, "the CLI with --sign-each-call (every call signed, no login)")

    sessions(ep, admin, b, bak, bsk)
    relogin(aio, ep, b)


def relogin(aio, ep, b):
    """A libiolake handle across a gateway restart: its channel reconnects,
    its unsigned call meets LoginRequired, it logs in again and resends."""
    tool = os.path.join(BUILD, "tests", "tools", "native-session")
    p = subprocess.Popen([tool, "relogin", ep, AK, SK, b, "small.n"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        expect(p.stdout.readline().strip(), "ready 0", "libiolake: a Head, the handle logged in")
        rc, _ = aio.stop(limit=30)
        expect(rc, 0, "aio stopped (SIGTERM) under a logged-in handle")
        aio.start()
        t0 = time.time()
        got = None
        while got != "0" and time.time() - t0 < 20:
            p.stdin.write("\n")
            p.stdin.flush()
            got = p.stdout.readline().strip()
            if got != "0":
                time.sleep(0.2)   # the peer's circuit may still be open
        expect(got, "0", "after aio restarted, the same handle logs in again (%.1f s)"
               % (time.time() - t0))
    finally:
        p.stdin.close()
        p.wait(timeout=10)


def sessions(ep, admin, b, bak, bsk):
    """Logins (docs/native-protocol.md, "Sessions"), with raw calls."""
    tool = os.path.join(BUILD, "tests", "tools", "native-session")
    r = subprocess.run([tool, "check", ep, AK, SK, b, "small.n"], capture_output=True,
                       text=True, timeout=60)
    print(r.stdout, end="")
    expect((r.returncode, "FAIL" in r.stdout), (0, False),
           "native-session check: every refusal held (%s)" % r.stderr.strip())
    # bob's connection, logged in, held open across his key's removal and
    # its return with another secret (bob may GET p/x: the policy above)
    p = subprocess.Popen([tool, "hold", ep, bak, bsk, b, "p/x"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        expect(p.stdout.readline().strip(), "ready 0", "bob's session: an unsigned GET's Head")

        def again():
            p.stdin.write("\n")
            p.stdin.flush()
            return p.stdout.readline().strip()
        expect(again(), "0", "... and again on the same connection (status 0: OK)")
        subprocess.run(admin + ["user", "rm", "bob"], check=True, capture_output=True)
        t0 = time.time()
        got = again()
        while got == "0" and time.time() - t0 < 5:
            got = again()
        expect(got.split(":")[0], "16 InvalidAccessKeyId",
               "bob removed: his session's next calls are refused (%.2f s)" % (time.time() - t0))
        subprocess.run(admin + ["user", "add", "bob", "--access-key", bak, "--secret-key",
                                bsk[::-1]], check=True, capture_output=True)
        t0 = time.time()   # until the gateway's credential cache sees the new key
        got = again()
        while "changed" not in got and got.startswith("16 ") and time.time() - t0 < 10:
            time.sleep(0.2)
            got = again()
        expect(got, "16 InvalidAccessKeyId: the key changed since this connection's login",
               "his key id back with another secret: the old login does not hold")
    finally:
        p.stdin.close()
        p.wait(timeout=10)


if __name__ == "__main__":
    main()
