#!/usr/bin/env python3
"""test_ranges_load.py — ranges split by load (issue 13), end to end:
iolake-aio with --range-groups 2, --range-split-load 200 (requests/s),
--range-split-load-secs 2 and size splits off; boto3 as the client,
iolake-admin against aio's meta member.

  1. A bucket has one range; 200 keys "hot/000".."hot/199" are PUT.
  2. Below the threshold: HEADs of those keys paced at about a quarter of
     it for 10 s (five times the seconds a load must last) split nothing:
     still one range, iolake_meta_range_load_splits_total 0, and `range
     ls` shows the range's REQ/S (not null, above 0, under the threshold).
  3. Above it: HEADs from several threads as fast as they go, and a writer
     PUTting new keys "w/NNNNN" all along; within 60 s the root leader
     splits the range by load (two ranges, the metric 1), at a key among
     the hot ones (the sampled load divided, not the objects).
  4. After the load: every acknowledged PUT reads back byte for byte, and
     ListObjectsV2 with pages of 7 and 1000 equals the model (every key,
     in order, once).

aio is stopped and its temp dir removed on exit, pass or fail.
"""
import json, os, re, subprocess, sys, threading, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

BUILD = os.environ.get("IOLAKE_BUILD") or os.path.join(os.path.dirname(__file__), "../../build")
B = "hot"
LOAD = 200
SECS = 2


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def main():
    aio = Aio(args=["--range-groups", "2", "--range-split-objects", "0",
                    "--range-split-load", str(LOAD), "--range-split-load-secs", str(SECS)])
    try:
        run(aio)
    finally:
        if aio.proc and aio.proc.poll() is None:
            aio.stop()
        aio.close()


def run(aio):
    aio.start()
    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()

    def ranges():
        p = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json",
                            "range", "ls", "--bucket", B], capture_output=True, text=True)
        if p.returncode != 0:
            fail("range ls: %s" % p.stderr)
        return json.loads(p.stdout)["ranges"]

    def load_splits():
        text = urllib.request.urlopen(aio.ep + "/metrics", timeout=10).read().decode()
        m = re.search(r"^iolake_meta_range_load_splits_total(?:\{[^}]*\})? (\d+)", text, re.M)
        return int(m.group(1)) if m else 0

    end = time.time() + 60
    while time.time() < end:
        p = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json",
                            "range", "ls"], capture_output=True, text=True)
        if p.returncode == 0 and len(json.loads(p.stdout)["groups"]) == 2:
            break
        time.sleep(0.2)
    s3 = aio.client()

    # 1. one range, 200 hot keys
    s3.create_bucket(Bucket=B)
    expect(len(ranges()) == 1, "one range: %s" % ranges())
    body = {}
    for i in range(200):
        k = "hot/%03d" % i
        body[k] = ("%s-%d" % (k, i * 7)).encode()
        s3.put_object(Bucket=B, Key=k, Body=body[k])
    hot = sorted(body)
    print("ok: 200 keys PUT in one range")

    # 2. below the threshold: nothing splits (after the PUTs' window ends:
    # 200 PUTs can make one second's REQ/S above the threshold, never
    # SECS seconds of it)
    time.sleep(2.5)
    rate = LOAD / 4.0
    t0 = time.time()
    n = 0
    seen_rps = []
    while time.time() - t0 < 5 * SECS:
        s3.head_object(Bucket=B, Key=hot[n % len(hot)])
        n += 1
        if n % 50 == 0:
            r = ranges()
            expect(len(r) == 1, "split under the threshold: %s" % r)
            seen_rps.append(r[0]["req_per_s"])
        lag = t0 + n / rate - time.time()
        if lag > 0:
            time.sleep(lag)
    r = ranges()
    expect(len(r) == 1, "split under the threshold: %s" % r)
    expect(load_splits() == 0, "no load split under the threshold")
    expect(all(x is not None for x in seen_rps), "range ls shows REQ/S: %s" % seen_rps)
    expect(max(seen_rps) > 0 and max(seen_rps) < LOAD,
           "REQ/S seen %s, paced at %.0f/s" % (seen_rps, rate))
    print("ok: %d HEADs at %.0f/s in %.1f s, no split (REQ/S seen %s)" %
          (n, n / (time.time() - t0), time.time() - t0, seen_rps))

    # 3. above it: several readers as fast as they go, and a writer
    stop = threading.Event()
    counts = [0] * 6
    errors = []
    acked = {}

    def reader(i):
        c = aio.client()
        k = i
        while not stop.is_set():
            try:
                c.head_object(Bucket=B, Key=hot[k % len(hot)])
                counts[i] += 1
            except Exception as e:   # a move's short WRONG_RANGE retry is the gateway's
                errors.append("head %s: %s" % (hot[k % len(hot)], e))
            k += 7

    def writer():
        c = aio.client()
        i = 0
        while not stop.is_set():
            k = "w/%05d" % i
            v = ("written %d" % i).encode() * (1 + i % 5)
            try:
                c.put_object(Bucket=B, Key=k, Body=v)
                acked[k] = v
            except Exception as e:
                errors.append("put %s: %s" % (k, e))
            i += 1

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(len(counts) - 1)]
    threads.append(threading.Thread(target=writer))
    t0 = time.time()
    for t in threads:
        t.start()
    split = None
    try:
        while time.time() - t0 < 60:
            time.sleep(0.5)
            r = ranges()
            if len(r) >= 2 and all(x["move"] in ("", "none") for x in r):
                split = r
                break
    finally:
        stop.set()
        for t in threads:
            t.join()
    took = time.time() - t0
    heads = sum(counts[:-1])
    print("load: %d HEADs and %d PUTs in %.1f s (%.0f req/s)" %
          (heads, len(acked), took, (heads + len(acked)) / took))
    expect(split is not None, "no split by load in 60 s at %.0f req/s: %s" %
           ((heads + len(acked)) / took, ranges()))
    expect(load_splits() == 1, "iolake_meta_range_load_splits_total is 1: %d" % load_splits())
    key = split[1]["start"]
    expect(hot[0] < key <= hot[-1] or key.startswith("w/"),
           "split at %r: among the keys the load touched" % key)
    expect(not errors, "errors under load: %s" % errors[:5])
    print("ok: split by load after %.1f s at %r: %s" %
          (took, key, [(x["start"], x["end"], x["group"]) for x in split]))

    # 4. every acknowledged object reads back; listings equal the model
    body.update(acked)
    for k, v in body.items():
        got = s3.get_object(Bucket=B, Key=k)["Body"].read()
        expect(got == v, "%s reads back" % k)
    want = sorted(body)
    for page in (7, 1000):
        got, tok = [], None
        while True:
            kw = dict(Bucket=B, MaxKeys=page)
            if tok:
                kw["ContinuationToken"] = tok
            res = s3.list_objects_v2(**kw)
            got += [o["Key"] for o in res.get("Contents", [])]
            if not res["IsTruncated"]:
                break
            tok = res["NextContinuationToken"]
        expect(got == want, "list page %d: %d keys, want %d" % (page, len(got), len(want)))
    r = ranges()
    expect(sum(x["objects"] for x in r) == len(want), "range ls counts every object: %s" % r)
    print("ok: %d objects read back, listings complete and ordered" % len(want))
    print("PASS")


if __name__ == "__main__":
    main()
