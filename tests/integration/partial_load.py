#!/usr/bin/env python3
"""partial_load.py — the load side of test_partial_netns.sh (a helper, not
a test): a steady mixed GET/PUT load on a netns cluster's gateways, one
latency table per second, and the verdict on fault windows.

  partial_load.py prep EPS N SIZE           create bucket "partial", PUT N objects of SIZE
  partial_load.py run EPS N SIZE THREADS EVENTS STOP OUT
        THREADS workers (each its own keep-alive connection, gateways taken
        in turn) until the file STOP exists: GET one of the N objects (body
        checked byte for byte) or, one request in four, PUT a new version
        (fresh bytes) of one of N other keys, which are never read (a GET
        racing an overwrite is not what this measures); every request's
        start, end, op and outcome go to OUT (JSON lines). A line per second: requests, p50/p99 by op, errors, and
        the gateways' failure-detection counters (/metrics).
  partial_load.py judge OUT EVENTS GRACE    the verdict (below); exit 0 or 1

EVENTS holds "NAME+ EPOCH [GET_GRACE PUT_GRACE]" (a fault starts) and
"NAME- EPOCH" (it ends) lines, written by the test as it goes; the graces
default to GRACE. For each: healthy p99 = requests started in the 5 s
before it; fault p99 = requests started from START + the op's grace to END. PASS when
no request failed at all, and per op fault p99 <= 2 x healthy p99 (a
healthy p99 under 20 ms counts as 20 ms: below that, one context switch
on a loaded two-core host is a doubling). SigV4 by hand (s3sign.py),
UNSIGNED-PAYLOAD, HTTP/1.1 keep-alive; credentials from
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
"""
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3sign  # noqa: E402

BUCKET = "partial"
FLOOR_MS = 20.0


def signer():
    return s3sign.Signer(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])


class Conn:
    def __init__(self, ep, sg):
        u = urllib.parse.urlparse(ep)
        self.host, self.port, self.sg, self.c = u.hostname, u.port, sg, None

    def req(self, method, path, body=b""):
        if self.c is None:
            self.c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        hdr = {"host": "%s:%d" % (self.host, self.port)}
        if body:
            hdr["content-length"] = str(len(body))
        h, _, _ = self.sg.sign_headers(method, path, hdr, "UNSIGNED-PAYLOAD")
        try:
            self.c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for k, v in h.items():
                self.c.putheader(k, v)
            self.c.endheaders()
            if body:
                self.c.send(body)
            r = self.c.getresponse()
            data = r.read()
            return r.status, data
        except Exception:
            self.c.close()
            self.c = None
            raise


def body_for(key, version, size):
    # Not periodic: a shard put in the wrong place must show.
    return random.Random("%s/%d" % (key, version)).randbytes(size)


def prep(eps, n, size):
    c = Conn(eps[0], signer())
    st, data = c.req("PUT", "/" + BUCKET)
    if st not in (200, 409):
        print("create bucket: HTTP %d %s" % (st, data[:200]))
        return 1
    for i in range(n):
        key = "o%03d" % i
        st, data = c.req("PUT", "/%s/%s" % (BUCKET, key), body_for(key, 0, size))
        if st != 200:
            print("PUT %s: HTTP %d %s" % (key, st, data[:200]))
            return 1
    print("prepared %d objects of %d bytes" % (n, size))
    return 0


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def scrape(ep):
    """The failure-detection counters of one gateway's /metrics."""
    want = ("iolake_gw_data_hedges", "iolake_gw_data_shard_gets_avoided",
            "iolake_gw_data_shard_put_failures", "iolake_rpc_peers_not_up",
            "iolake_rpc_fast_fails", "iolake_rpc_peer_dead_declared")
    out = dict.fromkeys(want, 0.0)
    try:
        u = urllib.parse.urlparse(ep)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=2)
        c.request("GET", "/metrics")
        for line in c.getresponse().read().decode().splitlines():
            p = line.split()
            if len(p) == 2 and p[0] in out:
                out[p[0]] = float(p[1])
        c.close()
    except Exception:
        pass
    return out


def run(eps, n, size, threads, events, stop, outp):
    sg = signer()
    lock = threading.Lock()
    recs = []          # (start, end, op, ok, why)
    out = open(outp, "w")

    def worker(w):
        rnd = random.Random(w)
        conn = Conn(eps[w % len(eps)], sg)
        while not os.path.exists(stop):
            op = "PUT" if rnd.random() < 0.25 else "GET"
            if op == "PUT":
                key = "w%03d" % rnd.randrange(n)
                body = body_for(key, int(time.time() * 1e6) * 64 + w, size)
            else:
                key = "o%03d" % rnd.randrange(n)
            why = ""
            t0 = time.time()
            try:
                if op == "PUT":
                    st, data = conn.req("PUT", "/%s/%s" % (BUCKET, key), body)
                    ok = st == 200
                else:
                    st, data = conn.req("GET", "/%s/%s" % (BUCKET, key))
                    ok = st == 200
                    if ok and data != body_for(key, 0, size):
                        ok, why = False, "wrong bytes"
                if not ok and not why:
                    why = "HTTP %d %s" % (st, s3sign.error_code(data))
            except Exception as e:  # noqa: BLE001
                ok, why = False, "%s: %s" % (type(e).__name__, e)
            t1 = time.time()
            with lock:
                recs.append((t0, t1, op, ok, why))
                out.write(json.dumps([t0, t1, op, ok, why]) + "\n")

    ths = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(threads)]
    for t in ths:
        t.start()
    start = time.time()
    sec = 0
    prev = {ep: scrape(ep) for ep in eps}
    print("  t  event     | GET   n   p50    p99 | PUT   n   p50    p99 | err | hedges avoided putfail fastfail dead notup")
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
        row = "%3d  %-9s" % (sec, ev)
        for op in ("GET", "PUT"):
            ms = [(r[1] - r[0]) * 1000 for r in win if r[2] == op]
            row += " | %5d %5.1f %6.1f" % (len(ms), pct(ms, 0.5), pct(ms, 0.99))
        row += " | %3d |" % sum(1 for r in win if not r[3])
        cur = {ep: scrape(ep) for ep in eps}
        d = lambda k: sum(cur[e][k] - prev[e][k] for e in eps)  # noqa: E731
        row += " %6d %7d %7d %8d %4d %5d" % (
            d("iolake_gw_data_hedges"), d("iolake_gw_data_shard_gets_avoided"),
            d("iolake_gw_data_shard_put_failures"), d("iolake_rpc_fast_fails"),
            d("iolake_rpc_peer_dead_declared"),
            sum(cur[e]["iolake_rpc_peers_not_up"] for e in eps))
        prev = cur
        print(row, flush=True)
    for t in ths:
        t.join(60)
    out.close()
    print("%d requests, %d failed" % (len(recs), sum(1 for r in recs if not r[3])))
    return 0


def judge(outp, events, grace):
    recs = [json.loads(x) for x in open(outp)]
    bad = [r for r in recs if not r[3]]
    ok = True
    for r in bad[:10]:
        print("FAILED %s at %.3f after %.0f ms: %s" % (r[2], r[0], (r[1] - r[0]) * 1000, r[4]))
    if bad:
        print("%d of %d requests failed" % (len(bad), len(recs)))
        ok = False
    starts, windows = {}, []
    for line in open(events):
        p = line.split()
        if len(p) >= 2 and p[0].endswith("+"):
            g = [float(x) for x in p[2:4]] if len(p) >= 4 else [grace, grace]
            starts[p[0][:-1]] = (float(p[1]), {"GET": g[0], "PUT": g[1]})
        elif len(p) == 2 and p[0].endswith("-") and p[0][:-1] in starts:
            t0, gr = starts.pop(p[0][:-1])
            windows.append((p[0][:-1], t0, float(p[1]), gr))
    for name, t0, t1, gr in windows:
        for op in ("GET", "PUT"):
            grace = gr[op]
            h = [(r[1] - r[0]) * 1000 for r in recs if r[2] == op and t0 - 5 <= r[0] < t0]
            f = [(r[1] - r[0]) * 1000 for r in recs if r[2] == op and t0 + grace <= r[0] < t1]
            e = [(r[1] - r[0]) * 1000 for r in recs if r[2] == op and t0 <= r[0] < t0 + grace]
            if not grace:
                e = []
            if not h or not f:
                print("%s %s: no requests to judge (healthy %d, fault %d)" % (name, op, len(h), len(f)))
                ok = False
                continue
            hp, fp = pct(h, 0.99), pct(f, 0.99)
            limit = 2 * max(hp, FLOOR_MS)
            verdict = "ok" if fp <= limit else "TOO SLOW"
            print("%-9s %s: healthy p99 %.1f ms (%d req); first %.0f s of the fault p99 %.1f ms, "
                  "max %.0f ms (%d req); then p99 %.1f ms (%d req), limit %.1f: %s"
                  % (name, op, hp, len(h), grace, pct(e, 0.99), max(e) if e else 0, len(e),
                     fp, len(f), limit, verdict))
            ok = ok and fp <= limit
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main(a):
    if a[0] == "prep":
        return prep(a[1].split(","), int(a[2]), int(a[3]))
    if a[0] == "run":
        return run(a[1].split(","), int(a[2]), int(a[3]), int(a[4]), a[5], a[6], a[7])
    if a[0] == "judge":
        return judge(a[1], a[2], float(a[3]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
