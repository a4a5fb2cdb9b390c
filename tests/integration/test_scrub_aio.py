#!/usr/bin/env python3
"""test_scrub_aio.py — `iolake-admin --data-dir DIR osd scrub-status` on
iolake-aio, whose OSDs answer only inside its process, through its admin
API (GET scrub, and GET osds/{id}/bad-shards for the bad shards):

  1. aio with --scrub-interval 1s and --recovery-rate 4096; eight 1 MiB
     objects through boto3: each OSD holds a 256 KiB shard of each, as
     extents (above the 64 KiB inline size), the first eight of its data
     area (the allocator places lowest first).
  2. One byte of each of OSD 1's eight shards is flipped in its device
     file behind its back. The recovery drivers rebuild what the scrubber
     reports, but each OSD's token bucket lets one job go at once and the
     next wait about a minute at 4 KiB/s: of eight, at least two stay
     bad while the test looks (at most one quick rebuild per OSD).
  3. Polled (bounded) until it stands still: scrub-status --json lists
     at least two on OSD 1,
     each kind checksum, bytes 0+65536 of 262144, and none on another
     OSD; OSD 1 counts its scrub errors. The table lists them the same
     way.
  4. The API pages: limit=1 gives one shard, more, and a next token; the
     page after it another; a bad query is 400, an OSD not in the map 404.
  5. The objects read back whole (the GET decodes around a bad shard).
"""
import hashlib, json, os, re, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Checks, run_with_aio  # noqa: E402

CHECKS = Checks()
expect = CHECKS.expect
DATA_OFF = 1 << 20   # osd/store/super.h STORE_DATA_OFF
SHARD = 256 << 10    # 1 MiB over 4 data shards


def admin(aio, *args):
    # aio_py's aio takes its root key from the environment, not a file
    env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK)
    return subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data] +
                          list(args), capture_output=True, text=True, timeout=60, env=env)


def flip(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0xFF]))


def run(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket="scrubaio")
    bodies = {"o%d" % i: os.urandom(1 << 20) for i in range(8)}
    for k, b in bodies.items():
        s3.put_object(Bucket="scrubaio", Key=k, Body=b)
    dev = os.path.join(aio.data, "osd-1", "dev")
    for i in range(len(bodies)):
        flip(dev, DATA_OFF + i * SHARD + 10)

    def listed():
        r = admin(aio, "--json", "osd", "scrub-status")
        if r.returncode:
            print(r.stderr)
            return None
        d = json.loads(r.stdout)
        return d if sum(len(o["bad_shards"]) for o in d["osds"]) >= 2 else None
    # Until the list has stood still for three polls a second apart: the
    # quick rebuilds are over, the others wait on their token buckets.
    end, d, prev, still = time.time() + 90, None, None, 0
    while still < 3 and time.time() < end:
        d = listed()
        cur = d and sorted((b["pg"], b["object_id"], b["shard"])
                           for o in d["osds"] for b in o["bad_shards"])
        still = still + 1 if cur and cur == prev else 0
        prev = cur
        time.sleep(1)
    expect(still >= 3, True, "scrub-status --json lists at least two bad shards, steady, "
                             "within 90 s")
    if d is None:
        return
    osds = {o["id"]: o for o in d["osds"]}
    expect(sorted(osds), [1, 2, 3, 4, 5, 6], "six OSDs, from the admin API")
    bad1 = osds[1]["bad_shards"]
    expect({(b["kind"], b["bad_offset"], b["bad_length"], b["length"]) for b in bad1},
           {("checksum", 0, 65536, SHARD)}, "OSD 1's: checksum, bytes 0+65536 of 262144")
    expect([o["id"] for o in d["osds"] if o["bad_shards"]], [1], "no other OSD has one")
    expect(osds[1]["errors"] >= len(bad1) and osds[1]["scrub_rate"] > 0, True,
           "OSD 1 counts its scrub errors; the scrubber is on")

    r = admin(aio, "osd", "scrub-status")
    rows = re.findall(r"^  osd 1: pg \d+ .* shard \d+: checksum, bytes 0\+65536 of 262144, found at \d+$",
                      r.stdout, re.M)
    expect((r.returncode, len(rows) >= 2, len(re.findall(
        r"^\d+ +local:osd-\d+ +(?:idle|scanning) ", r.stdout, re.M))),
           (0, True, 6), "the table: six OSD rows, and OSD 1's bad shards under 'bad shards:'")

    r1 = admin(aio, "api", "GET", "osds/1/bad-shards?limit=1")
    p1 = json.loads(r1.stdout) if r1.returncode == 0 else {}
    expect((len(p1.get("shards", [])), p1.get("more"), bool(p1.get("next"))), (1, True, True),
           "GET osds/1/bad-shards?limit=1: one, more, a next token")
    r2 = admin(aio, "api", "GET", "osds/1/bad-shards?limit=1&after=" + (p1.get("next") or ""))
    p2 = json.loads(r2.stdout) if r2.returncode == 0 else {}
    both = [(b["pg"], b["object_id"], b["shard"]) for b in p1.get("shards", []) +
            p2.get("shards", [])]
    expect((len(p2.get("shards", [])), len(set(both))), (1, 2),
           "the page after it: another one")
    r = admin(aio, "api", "GET", "osds/1/bad-shards")
    pall = json.loads(r.stdout) if r.returncode == 0 else {}
    keys = [(b["pg"], b["object_id"], b["shard"]) for b in pall.get("shards", [])]
    expect((keys == sorted(keys), set(both) <= set(keys), pall.get("more")), (True, True, False),
           "the whole list: in key order, both pages' in it, no more")
    r = admin(aio, "api", "GET", "osds/1/bad-shards?limit=0")
    expect((r.returncode, "InvalidArgument" in r.stdout), (1, True), "limit=0: 400")
    r = admin(aio, "api", "GET", "osds/99/bad-shards")
    expect((r.returncode, "NoSuchOsd" in r.stdout), (1, True), "an OSD not in the map: 404")

    for k, b in bodies.items():
        got = s3.get_object(Bucket="scrubaio", Key=k)["Body"].read()
        expect(hashlib.md5(got).hexdigest(), hashlib.md5(b).hexdigest(),
               "object %s reads back whole" % k)


def main():
    run_with_aio(run, CHECKS, args=("--scrub-interval", "1s", "--recovery-rate", "4096"))


if __name__ == "__main__":
    main()
