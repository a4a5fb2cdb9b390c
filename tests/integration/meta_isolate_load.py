#!/usr/bin/env python3
"""meta_isolate_load.py — the load side of test_meta_isolate_netns.sh (a
helper, not a test): a steady PUT load through some gateways of a netns
cluster with a ledger of every acknowledged PUT, one line per second, the
verdict on the write gaps, and the read-back of the ledger.

  meta_isolate_load.py run EPS THREADS EVENTS STOP OUT LEDGER
        THREADS workers (each its own keep-alive connection, gateways taken
        in turn) PUT fresh keys (each key written once, 1 KiB inline or
        64 KiB erasure-coded, bytes from the key) until the file STOP
        exists. Every request's start, end and outcome go to OUT (JSON
        lines); every acknowledged PUT's key, size, MD5 and returned ETag
        to LEDGER. A line per second: PUTs acknowledged, errors, p50, p99.
  meta_isolate_load.py judge OUT EVENTS MAXGAP HEALGAP
        EVENTS holds "isolate EPOCH" and "heal EPOCH" lines. The isolation
        gap is the longest time with no PUT acknowledged from the isolation
        on (the first ack after it, and any later gap before the heal);
        PASS when it is at most MAXGAP s and no gap between acks after the
        heal exceeds HEALGAP s.
  meta_isolate_load.py check EP LEDGER
        GET every ledger key: its bytes must have the MD5 and its ETag the
        one the PUT returned; ListObjectsV2 must list every key once. A
        PutObject applied twice (its retry not answered from the request
        table) would show as a key listed twice or an ETag/generation not
        the acknowledged one.

SigV4 by hand (s3sign.py), UNSIGNED-PAYLOAD, HTTP/1.1 keep-alive;
credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
"""
import hashlib
import http.client
import json
import os
import random
import re
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from partial_load import pct, signer  # noqa: E402
import s3sign  # noqa: E402

BUCKET = "isolate"


class Conn:
    """One keep-alive connection; req() returns (status, body) and keeps
    the answer's ETag in last_etag."""

    def __init__(self, ep, sg):
        u = urllib.parse.urlparse(ep)
        self.host, self.port, self.sg, self.c = u.hostname, u.port, sg, None
        self.last_etag = ""

    def req(self, method, path, body=b"", query=None):
        if self.c is None:
            self.c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        hdr = {"host": "%s:%d" % (self.host, self.port)}
        if body:
            hdr["content-length"] = str(len(body))
        h, _, _ = self.sg.sign_headers(method, path, hdr, "UNSIGNED-PAYLOAD", query=query)
        url = path
        if query:
            url += "?" + urllib.parse.urlencode(sorted(query.items()), quote_via=urllib.parse.quote)
        try:
            self.c.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
            for k, v in h.items():
                self.c.putheader(k, v)
            self.c.endheaders()
            if body:
                self.c.send(body)
            r = self.c.getresponse()
            data = r.read()
            self.last_etag = (r.getheader("ETag") or "").strip('"')
            return r.status, data
        except Exception:
            self.c.close()
            self.c = None
            raise


def body_for(key, size):
    return random.Random(key).randbytes(size)


def run(eps, threads, events, stop, outp, ledgerp):
    sg = signer()
    c = Conn(eps[0], sg)
    st, data = c.req("PUT", "/" + BUCKET)
    if st not in (200, 409):
        print("create bucket: HTTP %d %s" % (st, data[:200]))
        return 1
    lock = threading.Lock()
    recs = []          # (start, end, ok, why)
    out = open(outp, "w")
    ledger = open(ledgerp, "w")

    def worker(w):
        rnd = random.Random(w)
        conn = Conn(eps[w % len(eps)], sg)
        n = 0
        while not os.path.exists(stop):
            key = "w%02d/%06d" % (w, n)
            n += 1
            size = 1024 if rnd.random() < 0.5 else 65536
            body = body_for(key, size)
            why, etag = "", ""
            t0 = time.time()
            try:
                st, data = conn.req("PUT", "/%s/%s" % (BUCKET, key), body)
                ok = st == 200
                if ok:
                    etag = conn.last_etag
                else:
                    why = "HTTP %d %s" % (st, s3sign.error_code(data))
            except Exception as e:  # noqa: BLE001
                ok, why = False, "%s: %s" % (type(e).__name__, e)
            t1 = time.time()
            with lock:
                recs.append((t0, t1, ok, why))
                out.write(json.dumps([t0, t1, ok, why, key]) + "\n")
                if ok:
                    ledger.write(json.dumps([key, size, hashlib.md5(body).hexdigest(), etag]) + "\n")
                    ledger.flush()

    ths = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(threads)]
    for t in ths:
        t.start()
    start = time.time()
    sec = 0
    print("  t  event    |  acked  err    p50     p99   (PUTs ending in the second, ms)")
    while not os.path.exists(stop):
        sec += 1
        time.sleep(max(0, start + sec - time.time()))
        lo, hi = start + sec - 1, start + sec
        with lock:
            win = [r for r in recs if lo <= r[1] < hi]
        ev = ""
        if os.path.exists(events):
            for line in open(events):
                p = line.split()
                if len(p) >= 2 and lo <= float(p[1]) < hi:
                    ev = p[0]
        ms = [(r[1] - r[0]) * 1000 for r in win if r[2]]
        print("%3d  %-8s | %6d %4d %6.1f %7.1f" % (sec, ev, len(ms), sum(1 for r in win if not r[2]),
                                               pct(ms, 0.5), pct(ms, 0.99)), flush=True)
    for t in ths:
        t.join(60)
    out.close()
    ledger.close()
    bad = [r for r in recs if not r[2]]
    print("%d PUTs, %d acknowledged, %d failed" % (len(recs), len(recs) - len(bad), len(bad)))
    whys = {}
    for r in bad:
        whys[r[3]] = whys.get(r[3], 0) + 1
    for w, k in sorted(whys.items(), key=lambda x: -x[1])[:5]:
        print("  %5d x %s" % (k, w[:160]))
    return 0


def judge(outp, events, maxgap, healgap):
    recs = [json.loads(x) for x in open(outp)]
    ev = {}
    for line in open(events):
        p = line.split()
        if len(p) >= 2:
            ev[p[0]] = float(p[1])
    iso, heal = ev["isolate"], ev["heal"]
    acks = sorted(r[1] for r in recs if r[2])
    after = [t for t in acks if t >= iso]
    if not after:
        print("no PUT acknowledged after the isolation")
        return 1
    # Longest stretch without an ack, from the isolation to the heal.
    gap, prev, at = after[0] - iso, iso, iso
    for t in after:
        if t > heal:
            break
        if t - prev > gap:
            gap, at = t - prev, prev
        prev = t
    first = after[0] - iso
    # After the heal: the longest stretch between acks (the run's end excluded).
    hg, hat, prev = 0.0, heal, heal
    for t in acks:
        if t < heal:
            continue
        if t - prev > hg:
            hg, hat = t - prev, prev
        prev = t
    print("isolation gap: %.2f s with no PUT acknowledged (from %.2f s after the isolation); "
          "first ack %.2f s after it; limit %.1f s" % (gap, at - iso, first, maxgap))
    print("after the heal: longest gap between acks %.2f s (at %.2f s after the heal); limit %.1f s"
          % (hg, hat - heal, healgap))
    n_heal = sum(1 for t in acks if t >= heal)
    print("PUTs acknowledged: %d before the isolation, %d during it, %d after the heal"
          % (sum(1 for t in acks if t < iso), sum(1 for t in acks if iso <= t < heal), n_heal))
    ok = gap <= maxgap and hg <= healgap and n_heal > 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def check(ep, ledgerp):
    sg = signer()
    conn = Conn(ep, sg)
    led = [json.loads(x) for x in open(ledgerp)]
    bad = 0
    for key, size, md5, etag in led:
        st, data = conn.req("GET", "/%s/%s" % (BUCKET, key))
        if st != 200 or len(data) != size or hashlib.md5(data).hexdigest() != md5 \
                or data != body_for(key, size):
            print("FAIL: %s: HTTP %d, %d bytes of %d, md5 %s" % (
                key, st, len(data), size, hashlib.md5(data).hexdigest()))
            bad += 1
            continue
        got = conn.last_etag
        if got != etag:
            print("FAIL: %s: ETag %s, the PUT answered %s" % (key, got, etag))
            bad += 1
    # Every key listed once.
    seen, token = {}, None
    while True:
        q = {"list-type": "2", "max-keys": "1000"}
        if token:
            q["continuation-token"] = token
        st, data = conn.req("GET", "/" + BUCKET, query=q)
        if st != 200:
            print("FAIL: list: HTTP %d" % st)
            return 1
        txt = data.decode()
        for k in re.findall(r"<Key>([^<]*)</Key>", txt):
            seen[k] = seen.get(k, 0) + 1
        m = re.search(r"<NextContinuationToken>([^<]*)</NextContinuationToken>", txt)
        if not m:
            break
        token = m.group(1)
    dup = [k for k, n in seen.items() if n > 1]
    missing = [k for k, _, _, _ in led if k not in seen]
    for k in dup[:5]:
        print("FAIL: %s listed %d times" % (k, seen[k]))
    for k in missing[:5]:
        print("FAIL: %s acknowledged but not listed" % k)
    print("%d/%d acknowledged PUTs read back byte for byte with their ETag; %d keys listed "
          "(%d acknowledged, %d more from PUTs that failed to the client), %d listed twice"
          % (len(led) - bad, len(led), len(seen), len(led), len(seen) - len(led) + len(missing), len(dup)))
    return 0 if not bad and not dup and not missing else 1


def main(a):
    if a[0] == "run":
        return run(a[1].split(","), int(a[2]), a[3], a[4], a[5], a[6])
    if a[0] == "judge":
        return judge(a[1], a[2], float(a[3]), float(a[4]))
    if a[0] == "check":
        return check(a[1], a[2])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
