#!/usr/bin/env python3
"""netns_s3.py — the S3 side of test_netns_cluster.sh (a helper, not a test).

boto3 (Debian's) against one gateway of a netns cluster; credentials from
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Objects live as files under
WORK/objs (the oracle): each key is its file's name.

  netns_s3.py make WORK SEED COUNT       write COUNT files, 1 KiB..3 MiB, from SEED
  netns_s3.py makemixed WORK SEED COUNT  write COUNT files, 0 B..20 MiB (most small), from SEED
  netns_s3.py put EP WORK [KEY...]       create bucket "netns" if needed; PUT the keys (default all)
  netns_s3.py putall EP WORK             PUT every file, 16 at a time; over 8 MiB as multipart
  netns_s3.py delete EP WORK KEY...      DELETE the keys and drop them from the oracle
  netns_s3.py new EP WORK KEY SIZE       write a new file KEY of SIZE bytes and PUT it
  netns_s3.py check EP WORK              GET every key (32 at a time), compare byte for byte
  netns_s3.py checkloop EP WORK STOP     check again and again until the file STOP exists

Exit 0 when everything asked succeeded, 1 otherwise (each failure printed).
No retries: a failed call is a failure, the caller polls if it means to.
"""
import concurrent.futures
import os
import random
import sys
import time

import boto3
from botocore.config import Config

BUCKET = "netns"


def client(ep):
    return boto3.client("s3", endpoint_url=ep, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1, "mode": "standard"},
                                      connect_timeout=5, read_timeout=60,
                                      max_pool_connections=32))


def objs(work):
    return os.path.join(work, "objs")


def make(work, seed, count):
    rnd = random.Random(seed)
    os.makedirs(objs(work), exist_ok=True)
    # Mixed sizes: the ends of the range always, the rest log-uniform, so
    # inline (<= 4 KiB), one-segment and multi-segment (1 MiB) objects all occur.
    sizes = [1024, 3 << 20] + [int(1024 * 2 ** rnd.uniform(0, 11.58)) for _ in range(count - 2)]
    for i, n in enumerate(sizes):
        with open(os.path.join(objs(work), "obj%02d" % i), "wb") as f:
            f.write(rnd.getrandbits(8 * n).to_bytes(n, "little") if n else b"")
    print("made %d objects, seed %d, %d..%d bytes" % (len(sizes), seed, min(sizes), max(sizes)))


def makemixed(work, seed, count):
    rnd = random.Random(seed)
    os.makedirs(objs(work), exist_ok=True)
    # The ends always (empty, 20 MiB); then 60% up to 64 KiB (inline and
    # one-segment objects), 30% up to 2 MiB, 10% up to 20 MiB (multipart
    # above 8 MiB), each log-uniform in its band.
    sizes = [0, 20 << 20]
    for _ in range(count - 2):
        r = rnd.random()
        lo, hi = (1, 64 << 10) if r < 0.6 else ((64 << 10, 2 << 20) if r < 0.9 else (2 << 20, 20 << 20))
        sizes.append(int(lo * (hi / lo) ** rnd.random()))
    for i, n in enumerate(sizes):
        with open(os.path.join(objs(work), "obj%04d" % i), "wb") as f:
            f.write(rnd.getrandbits(8 * n).to_bytes(n, "little") if n else b"")
    print("made %d objects, seed %d, %d bytes in all, %d..%d bytes" % (
        len(sizes), seed, sum(sizes), min(sizes), max(sizes)))


def putall(ep, work):
    from boto3.s3.transfer import TransferConfig
    s3 = client(ep)
    try:
        s3.head_bucket(Bucket=BUCKET)
    except Exception:
        s3.create_bucket(Bucket=BUCKET)
    tc = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=5 << 20,
                        max_concurrency=4, use_threads=True)
    keys = sorted(k for k in os.listdir(objs(work)) if not k.endswith(".tmp"))

    def one(k):
        s3.upload_file(os.path.join(objs(work), k), BUCKET, k, Config=tc)

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(one, keys))
    total = sum(os.path.getsize(os.path.join(objs(work), k)) for k in keys)
    print("put %d objects (%d bytes) in %.1f s" % (len(keys), total, time.time() - t0))


def delete(ep, work, keys):
    s3 = client(ep)
    for k in keys:
        s3.delete_object(Bucket=BUCKET, Key=k)
        os.unlink(os.path.join(objs(work), k))
    print("deleted %d objects" % len(keys))


def put(ep, work, keys):
    s3 = client(ep)
    try:
        s3.head_bucket(Bucket=BUCKET)
    except Exception:
        s3.create_bucket(Bucket=BUCKET)
    for k in keys or sorted(os.listdir(objs(work))):
        t0 = time.time()
        with open(os.path.join(objs(work), k), "rb") as f:
            s3.put_object(Bucket=BUCKET, Key=k, Body=f.read())
        print("put %s in %.2f s" % (k, time.time() - t0))


def new(ep, work, key, size):
    with open(os.path.join(objs(work), key + ".tmp"), "wb") as f:
        f.write(os.urandom(size))
    try:
        put_file(ep, work, key + ".tmp", key)
    except Exception:
        os.unlink(os.path.join(objs(work), key + ".tmp"))
        raise
    # Only an acknowledged PUT joins the oracle.
    os.rename(os.path.join(objs(work), key + ".tmp"), os.path.join(objs(work), key))
    print("put %s (%d bytes)" % (key, size))


def put_file(ep, work, fname, key):
    with open(os.path.join(objs(work), fname), "rb") as f:
        client(ep).put_object(Bucket=BUCKET, Key=key, Body=f.read())


def check(ep, work):
    s3 = client(ep)
    keys = sorted(k for k in os.listdir(objs(work)) if not k.endswith(".tmp"))

    def one(k):
        with open(os.path.join(objs(work), k), "rb") as f:
            want = f.read()
        try:
            got = s3.get_object(Bucket=BUCKET, Key=k)["Body"].read()
        except Exception as e:  # noqa: BLE001 - reported, counted as a failure
            return "%s: GET failed: %s" % (k, e)
        if got != want:
            return "%s: %d bytes read, %d expected%s" % (
                k, len(got), len(want), ", WRONG BYTES" if len(got) == len(want) else "")
        return None

    t0 = time.time()
    # All at once: a GET that meets a blackholed OSD waits for its shard
    # call's deadline (10 s) before decoding; in parallel they wait once.
    with concurrent.futures.ThreadPoolExecutor(32) as ex:
        bad = [r for r in ex.map(one, keys) if r]
    for b in bad:
        print("FAIL:", b)
    print("%d/%d objects read back byte for byte from %s in %.1f s" % (
        len(keys) - len(bad), len(keys), ep, time.time() - t0))
    return not bad


def checkloop(ep, work, stop):
    rounds = failed = 0
    while not os.path.exists(stop):
        rounds += 1
        if not check(ep, work):
            failed += 1
    print("checkloop: %d rounds over every object, %d with a failure" % (rounds, failed))
    return failed == 0 and rounds > 0


def main(a):
    if a[0] == "make":
        make(a[1], int(a[2]), int(a[3]))
    elif a[0] == "makemixed":
        makemixed(a[1], int(a[2]), int(a[3]))
    elif a[0] == "putall":
        putall(a[1], a[2])
    elif a[0] == "delete":
        delete(a[1], a[2], a[3:])
    elif a[0] == "put":
        put(a[1], a[2], a[3:])
    elif a[0] == "new":
        new(a[1], a[2], a[3], int(a[4]))
    elif a[0] == "checkloop":
        return 0 if checkloop(a[1], a[2], a[3]) else 1
    elif a[0] == "check":
        return 0 if check(a[1], a[2]) else 1
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as e:  # noqa: BLE001 - one line, exit 1: the caller decides
        print("FAIL: %s: %s" % (type(e).__name__, e))
        sys.exit(1)
