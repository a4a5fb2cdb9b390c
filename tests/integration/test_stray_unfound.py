#!/usr/bin/env python3
"""test_stray_unfound.py — an OSD out of a PG's set keeps its shards of
that PG while some stripe there has fewer than k shards on the set
(osd/recover_stray.c): "active+clean" leaves such stripes out
("unfound"), and they may be live objects whose other shards sit on the
very OSDs that are out for now.

The thrash soak (test_thrash_netns.sh, 2026-12-05) ended once with
objects readable from 3 shards of 6 after every PG was active+clean. The
same state, deterministically, in one iolake-aio with 9 OSDs, 4+2, 16
PGs:
  - objects are written (6 shards each);
  - OSDs 1, 2 and 3 are marked out at once (`iolake-admin osd out`: up,
    data kept), while every scan's shard listing is held 2 s
    (--debug-fault): no rebuild lands between the three outs. Each PG
    that named all three now has its stripes at 3 shards on its set
    (unfound: left alone, the PG clean); the others are rebuilt;
  - OSDs 1-3 run their stray rounds: they drop the shards of the PGs
    clean without them, must keep those of PGs with unfound stripes, and
    push those shards to the PGs' new sets, whose primaries then rebuild
    the rest: no stripe unfound, and every object reads back byte for
    byte with OSDs 1-3 still out;
  - they are marked in again: every object reads back byte for byte.
Before the drop's fix the PGs naming 1, 2 and 3 lost their shards on
them: their objects answered 503 ("only 3 of 6 shards readable") for
good. Before the push they answered 503 until OSDs 1-3 were back in.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, Aio, Checks  # noqa: E402

N = 64
SIZE = 96 * 1024   # past the inline limit: EC shards on the OSDs
DROP = re.compile(r'msg="stray shards dropped" osd=([0-9]+) shards=([0-9]+)')
PUSH = re.compile(r'msg="stray shards pushed" osd=([0-9]+) pg=([0-9]+) shards=([0-9]+)')


def admin(aio, *args):
    return subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data] +
                          list(args), capture_output=True, text=True, timeout=200)


def pgs(aio, live=False):
    """(states of `pg ls`, stripes reported unfound[, of them live])."""
    r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data, "--json",
                        "pg", "ls"], capture_output=True, text=True, timeout=60)
    try:
        d = json.loads(r.stdout)
    except ValueError:
        return ([], 0, 0) if live else ([], 0)
    reps = [p.get("report") or {} for p in d.get("pgs", [])]
    out = ([p.get("state") for p in d.get("pgs", [])], sum(int(r.get("unfound") or 0) for r in reps))
    return out + (sum(int(r.get("unfound_live") or 0) for r in reps),) if live else out


def read_back(s3, sums):
    """The keys that do not read back as written: [(key, what came)]."""
    bad = []
    for key, md5 in sorted(sums.items()):
        try:
            got = hashlib.md5(s3.get_object(Bucket="unfound", Key=key)["Body"].read()).hexdigest()
        except Exception as e:   # noqa: BLE001 (reported below)
            got = str(e)[:100]
        if got != md5:
            bad.append((key, got))
    return bad


def log_text(aio):
    aio.log.flush()
    with open(aio.log.name, errors="replace") as f:
        return f.read()


def main():
    ck = Checks()
    aio = Aio(args=["--osds", "9", "--pg-count", "16",
                    "--debug-fault", "delay=2000,method=ListShards;delay=5000,method=StatShards"])
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="unfound")
        sums = {}
        for i in range(N):
            body = os.urandom(SIZE)
            s3.put_object(Bucket="unfound", Key="k%02d" % i, Body=body)
            sums["k%02d" % i] = hashlib.md5(body).hexdigest()
        ck.expect(len(sums), N, "PUTs acknowledged")

        for osd in ("1", "2", "3"):
            r = admin(aio, "osd", "out", osd)
            ck.expect(r.returncode, 0, "osd out %s" % osd)
        # Until OSDs 1-3 push their shards (each push's StatShards held
        # 5 s), the PGs whose stripes sit at 3 shards on their sets are
        # active+unfound: live objects unreadable, the cluster not healthy.
        deadline = time.time() + 180
        seen_live, status, healthy_rc = 0, "", None
        while time.time() < deadline:
            states, unfound, live = pgs(aio, live=True)
            if "active+unfound" in states and not seen_live:
                seen_live = live
                status = admin(aio, "cluster", "status").stdout
                healthy_rc = admin(aio, "cluster", "wait-healthy", "1").returncode
            if states and unfound == 0 and all(st == "active+clean" for st in states):
                break
            time.sleep(0.5)
        print("stripes of live objects seen unfound:", seen_live)
        print(status)
        ck.expect(seen_live > 0, True, "PGs with live stripes below k shards shown active+unfound")
        ck.expect("UNFOUND: %d stripes of live objects" % seen_live in status, True,
                  "cluster status names the unfound stripes of live objects")
        ck.expect(healthy_rc, 1, "cluster wait-healthy fails while they are unfound")
        ck.expect(sorted(set(states)), ["active+clean"], "every PG active+clean with OSDs 1-3 out")
        print("stripes reported unfound:", unfound)
        # Their stray rounds: each drops the shards of the PGs rebuilt
        # without it (some PG named one or two of them).
        deadline = time.time() + 120
        seen = set()
        while time.time() < deadline and seen != {"1", "2", "3"}:
            seen = {o for o, _ in DROP.findall(log_text(aio)) if o in ("1", "2", "3")}
            time.sleep(0.5)
        ck.expect(seen, {"1", "2", "3"}, "OSDs 1-3, out, dropped the shards of PGs clean without them")
        # The PGs with unfound stripes: OSDs 1-3 pushed the shards their
        # new sets lacked, the primaries rebuilt the rest, and every object
        # reads back with OSDs 1-3 still out.
        ck.expect(unfound, 0, "no stripe unfound with OSDs 1-3 still out (their strays pushed)")
        pushed = PUSH.findall(log_text(aio))
        print("stray pushes (osd, pg, shards):", pushed)
        ck.expect(bool(pushed), True, "OSDs out of a PG pushed their shards to its new set")
        ck.expect(read_back(s3, sums), [], "every object reads back byte for byte with OSDs 1-3 out")
        for osd in ("1", "2", "3"):
            r = admin(aio, "osd", "in", osd)
            ck.expect(r.returncode, 0, "osd in %s" % osd)
        r = admin(aio, "cluster", "wait-healthy", "180")
        ck.expect(r.returncode, 0, "every PG active+clean with OSDs 1-3 back in")
        ck.expect(read_back(s3, sums), [], "every object reads back byte for byte")
        print("stray drops:", DROP.findall(log_text(aio)))
    finally:
        aio.close()
    ck.finish()


if __name__ == "__main__":
    main()
