#!/usr/bin/env python3
"""test_aio_crash.py — iolake-aio killed with SIGKILL during a 32-way
load of PUTs, overwrites and DELETEs (boto3, thread pool), restarted on
the same dir: every acknowledged object (key -> md5 recorded when its PUT
returned 200) reads back byte for byte and every acknowledged DELETE stays
deleted; a key whose operation was in flight at the kill shows either its
state before or the state that operation wrote. Several rounds; sizes mix
inline, one-segment and multi-segment objects. Overwrites and deletes free
OSD blocks (once their shards are collected) that later PUTs write again
(osd/store/alloc is lowest-first), so a kill also lands on reused blocks.
Prints its seed."""
import hashlib, os, random, re, sys, threading, time, urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
ROUNDS = int(os.environ.get("ROUNDS", 3))
print("seed", SEED, "rounds", ROUNDS)


def shard_deletes(aio):
    """iolake_osd_deletes_total over the OSDs (since the last start), or -1
    when /metrics did not answer: the figure is printed, not judged."""
    try:
        text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
    except OSError:
        return -1
    return sum(float(v) for v in re.findall(r"^iolake_osd_deletes_total(?:\{[^}]*\})? (\S+)$",
                                              text, re.M))


def main():
    rnd = random.Random(SEED)
    # Collection every 300 ms (10 s by default): the shards of overwritten
    # and deleted objects go, and their blocks are written again, within
    # a round.
    aio = Aio(args=("--gc-interval", "300ms"))
    acked = {}      # key -> md5 of its acknowledged body, None once deleted
    pending = {}    # key -> what the operation in flight at the kill would leave
    counts = {"put": 0, "overwrite": 0, "delete": 0}
    lock = threading.Lock()
    try:
        aio.start()
        aio.client().create_bucket(Bucket="crash")
        for rnd_no in range(ROUNDS):
            stop = threading.Event()
            s3 = aio.client(max_pool_connections=32, connect_timeout=2, read_timeout=10)
            seeds = [rnd.randrange(1 << 30) for _ in range(32)]

            def worker(wid):
                # One operation at a time per worker, on keys no other
                # worker touches: at most one in flight per key.
                r = random.Random(seeds[wid])
                n = 0
                mine = []
                while not stop.is_set():
                    p = r.random()
                    if mine and p < 0.15:
                        op, key = "delete", r.choice(mine)
                    elif mine and p < 0.40:
                        op, key = "overwrite", r.choice(mine)
                    else:
                        op, key = "put", "r%d/w%02d/%05d" % (rnd_no, wid, n)
                        n += 1
                    if op == "delete":
                        val = None
                    else:
                        body = r.randbytes(r.choice([0, 100, 4096, 5000, 70000, 1 << 20, 2_500_000]))
                        val = hashlib.md5(body).hexdigest()
                    with lock:
                        pending[key] = val
                    try:
                        if op == "delete":
                            s3.delete_object(Bucket="crash", Key=key)
                        else:
                            s3.put_object(Bucket="crash", Key=key, Body=body)
                    except Exception:
                        return
                    with lock:
                        acked[key] = val
                        del pending[key]
                        counts[op] += 1
                    if key not in mine:
                        mine.append(key)
            with ThreadPoolExecutor(32) as ex:
                futs = [ex.submit(worker, i) for i in range(32)]
                time.sleep(rnd.uniform(1.5, 3.0))
                deleted = shard_deletes(aio)
                aio.kill9()
                stop.set()
                for f in futs:
                    f.result()
            live = sum(v is not None for v in acked.values())
            print("round %d: killed after %d PUTs, %d overwrites, %d DELETEs acknowledged so far "
                  "(%d objects live, %d operations in flight; %d shards collected since the "
                  "last start)" % (rnd_no, counts["put"], counts["overwrite"], counts["delete"],
                                   live, len(pending), deleted))
            aio.start()
            s3 = aio.client()
            bad = []
            for key in sorted(set(acked) | set(pending)):
                try:
                    got = hashlib.md5(s3.get_object(Bucket="crash", Key=key)["Body"].read()).hexdigest()
                except s3.exceptions.NoSuchKey:
                    got = None
                allowed = {acked.get(key)}
                if key in pending:
                    allowed.add(pending[key])
                if got not in allowed:
                    bad.append((key, got, allowed))
                acked[key] = got    # what survived is the next round's start
            pending.clear()
            assert not bad, "round %d: %d keys not as acknowledged: %s" % (rnd_no, len(bad), bad[:5])
            print("round %d: every acknowledged PUT intact, every acknowledged DELETE gone "
                  "(%d keys checked)" % (rnd_no, len(acked)))
        assert counts["put"] > 0 and counts["overwrite"] > 0 and counts["delete"] > 0, counts
        rc, took = aio.stop()
        assert rc == 0, rc
        print("PASS")
    finally:
        if os.environ.get("KEEP") is None:
            aio.close()


if __name__ == "__main__":
    main()
