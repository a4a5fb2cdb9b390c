#!/usr/bin/env python3
"""test_gw_buffer_pool.py — `--buffer-pool-max` bounds the idle data-path
buffers the gateway keeps (iolake_gw_data_pool_idle_bytes, summed over its
loops), and the data stays right under every setting.

Three aio runs, each: 12 objects of 3 MiB PUT and read back 4 at a time,
then the gauge once the requests are done:
  - the default (256 MiB): the pool keeps more than 4 MiB idle (the check
    can fail: without a pool, or with buffers never returned, it is 0);
  - --buffer-pool-max 4MiB: some kept, at most 4 MiB;
  - --buffer-pool-max 0: nothing kept.
Every GET must return the bytes its PUT sent."""
import hashlib, os, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

N, SIZE = 12, 3 << 20
failed = 0


def expect(cond, what):
    global failed
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    failed += not cond


def idle_bytes(aio):
    text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("iolake_gw_data_pool_idle_bytes"))


def load(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket="pool")
    bodies = {"o%02d" % i: os.urandom(SIZE) for i in range(N)}

    def one(key):
        s3.put_object(Bucket="pool", Key=key, Body=bodies[key])
        got = s3.get_object(Bucket="pool", Key=key)["Body"].read()
        return hashlib.sha256(got).digest() == hashlib.sha256(bodies[key]).digest()

    with ThreadPoolExecutor(4) as ex:
        return all(ex.map(one, sorted(bodies)))


def run(args, check, what):
    aio = Aio(args=args)
    try:
        aio.start()
        expect(load(aio), "%s: every GET returns its PUT's bytes" % what)
        # Buffers come back when the last reference drops (a response's
        # write completing): give the loops a moment after the last GET.
        time.sleep(0.3)
        idle = idle_bytes(aio)
        expect(check(idle), "%s: %d bytes idle in the pool" % (what, idle))
    finally:
        aio.close()


run([], lambda b: b > 4 << 20, "default, more than 4 MiB kept")
run(["--buffer-pool-max", "4MiB"], lambda b: 0 < b <= 4 << 20, "4 MiB cap, some kept, <= 4 MiB")
run(["--buffer-pool-max", "0"], lambda b: b == 0, "cap 0, none kept")

if failed:
    print("FAILED: %d" % failed)
    sys.exit(1)
print("PASS test_gw_buffer_pool")
