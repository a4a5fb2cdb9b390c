#!/usr/bin/env python3
"""test_aio_crash.py — iolake-aio killed with SIGKILL during a 32-way PUT
load (boto3, thread pool), restarted on the same dir: every acknowledged
object (key -> md5 recorded when its PUT returned 200) reads back byte for
byte. Several rounds; sizes mix inline, one-segment and multi-segment
objects. Prints its seed."""
import hashlib, os, random, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
ROUNDS = int(os.environ.get("ROUNDS", 3))
print("seed", SEED, "rounds", ROUNDS)


def main():
    rnd = random.Random(SEED)
    aio = Aio()
    acked = {}
    lock = threading.Lock()
    try:
        aio.start()
        aio.client().create_bucket(Bucket="crash")
        for rnd_no in range(ROUNDS):
            stop = threading.Event()
            s3 = aio.client(max_pool_connections=32, connect_timeout=2, read_timeout=10)
            seeds = [rnd.randrange(1 << 30) for _ in range(32)]

            def worker(wid):
                r = random.Random(seeds[wid])
                n = 0
                while not stop.is_set():
                    size = r.choice([0, 100, 4096, 5000, 70000, 1 << 20, 2_500_000])
                    body = r.randbytes(size)
                    key = "r%d/w%02d/%05d" % (rnd_no, wid, n)
                    n += 1
                    try:
                        s3.put_object(Bucket="crash", Key=key, Body=body)
                    except Exception:
                        return
                    with lock:
                        acked[key] = hashlib.md5(body).hexdigest()
            with ThreadPoolExecutor(32) as ex:
                futs = [ex.submit(worker, i) for i in range(32)]
                time.sleep(rnd.uniform(1.5, 3.0))
                aio.kill9()
                stop.set()
                for f in futs:
                    f.result()
            print("round %d: killed with %d objects acknowledged so far" % (rnd_no, len(acked)))
            aio.start()
            s3 = aio.client()
            bad = []
            for key, md5 in acked.items():
                got = hashlib.md5(s3.get_object(Bucket="crash", Key=key)["Body"].read()).hexdigest()
                if got != md5:
                    bad.append(key)
            assert not bad, "round %d: %d acknowledged objects differ: %s" % (rnd_no, len(bad), bad[:5])
            print("round %d: all %d acknowledged objects intact" % (rnd_no, len(acked)))
        assert len(acked) > 0
        rc, took = aio.stop()
        assert rc == 0, rc
        print("PASS")
    finally:
        if os.environ.get("KEEP") is None:
            aio.close()


if __name__ == "__main__":
    main()
