#!/usr/bin/env python3
"""test_pg_check_aio.py — `iolake-admin --data-dir DIR pg check` on
iolake-aio, whose OSDs answer only inside its process, through its admin
API (GET osds/{id}/shards?pg=N, one page of an OSD's shards in a PG):

  1. aio with every PutShard call to OSD 3 failed UNAVAILABLE
     (--debug-fault). Eight 1 MiB objects through boto3: each PUT is
     acknowledged at its write quorum with five of six shards, OSD 3's
     missing, and stays so: the recovery drivers' rebuilds onto OSD 3
     fail the same way.
  2. pg check --json: exit 3, no PG unreachable, eight stripes, all
     eight incomplete over the PGs it names, each lacking one shard. The
     table says the same.
  3. The API: GET osds/3/shards?pg=P lists nothing OSD 3 lacks; after
     sixty 64 KiB objects more, for a PG with two shards on OSD 1, limit=1
     gives the first, more and a next token, and the page after it the
     second; no pg, a bad one or an after in another PG is 400, an OSD
     not in the map 404.
  4. The objects read back whole (five shards of six decode).
Before the endpoint, pg check printed an UNAVAILABLE line for every
in-process OSD and counted every PG unreachable.
"""
import hashlib, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Checks, run_with_aio  # noqa: E402

CHECKS = Checks()
expect = CHECKS.expect
N_OBJ = 8


def admin(aio, *args):
    # aio_py's aio takes its root key from the environment, not a file
    env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK)
    return subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data] +
                          list(args), capture_output=True, text=True, timeout=60, env=env)


def api(aio, path):
    r = admin(aio, "api", "GET", path)
    try:
        return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}
    except ValueError:
        return r.returncode, {"raw": r.stdout}


def run(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket="pgcheck")
    bodies = {"o%d" % i: os.urandom(1 << 20) for i in range(N_OBJ)}
    for k, b in bodies.items():
        s3.put_object(Bucket="pgcheck", Key=k, Body=b)

    # 2. pg check, JSON and table
    r = admin(aio, "--json", "pg", "check")
    expect(r.returncode, 3, "pg check exits 3 (stripes incomplete); stderr: %s" % r.stderr[-300:])
    res = json.loads(r.stdout) if r.stdout.strip() else {}
    expect(res.get("pgs_unreachable"), 0, "no PG unreachable (every OSD listed through the API)")
    expect((res.get("stripes"), res.get("incomplete"), res.get("shards_missing")),
           (N_OBJ, N_OBJ, N_OBJ), "stripes, incomplete, shards missing: the objects', each "
           "lacking OSD 3's shard")
    inc = res.get("incomplete", 0)
    pgs = res.get("incomplete_pgs", [])
    expect(sum(p["incomplete"] for p in pgs), inc, "the PGs named add up to the total")
    t = admin(aio, "pg", "check")
    expect(t.returncode, 3, "the table's exit code")
    last = t.stdout.strip().splitlines()[-1] if t.stdout.strip() else ""
    expect(re.match(r"stripes: %d +incomplete: %d +shards missing: %d +pgs unreachable: 0$"
                    % (N_OBJ, N_OBJ, N_OBJ), last) is not None, True,
           "the table's summary line: %r" % last)
    expect(sorted(int(m.group(1)) for m in re.finditer(r"^pg (\d+): \d+ of \d+ stripes lack",
                                                         t.stdout, re.M)),
           sorted(p["pg"] for p in pgs), "the table names the same PGs")

    # 3. the endpoint: OSD 3 lacks its shards of the incomplete PGs
    for p in pgs:
        pg = p["pg"]
        rc, page = api(aio, "osds/3/shards?pg=%d" % pg)
        expect(rc, 0, "GET osds/3/shards?pg=%d answers" % pg)
        expect((page.get("shards"), page.get("more"), page.get("next")), ([], False, None),
               "PG %d: OSD 3 lists none of its shards" % pg)
    # a PG with two objects' shards on OSD 1, paged one at a time: sixty
    # 64 KiB objects more
    for i in range(60):
        s3.put_object(Bucket="pgcheck", Key="s%d" % i, Body=os.urandom(64 << 10))
    two = None
    for pg in range(256):
        rc, page = api(aio, "osds/1/shards?pg=%d" % pg)
        if rc == 0 and len(page.get("shards", [])) >= 2:
            two = (pg, page["shards"])
            break
    expect(two is not None, True, "a PG holds two shards on OSD 1 (68 objects in 256 PGs)")
    if two is None:
        return
    pg, whole = two
    rc, p1 = api(aio, "osds/1/shards?pg=%d&limit=1" % pg)
    expect(len(p1.get("shards", [])), 1, "limit=1 gives one shard")
    s = p1["shards"][0]
    expect((s, p1.get("more")), (whole[0], True), "the first shard (pg, object_id, shard, "
           "length, crc32c, inline), and more")
    expect(s.get("length") in (16 << 10, 256 << 10) and s.get("inline") == (s["length"] <= 64 << 10),
           True, "a shard of 16 KiB (inline in the OSD's log) or 256 KiB (an extent)")
    rc, p2 = api(aio, "osds/1/shards?pg=%d&limit=1&after=%s" % (pg, p1["next"]))
    expect([x["object_id"] for x in p2.get("shards", [])], [whole[1]["object_id"]],
           "the page after next: the second shard")
    for bad in ("osds/1/shards", "osds/1/shards?pg=x", "osds/1/shards?pg=1&after=2:0:ab",
                "osds/1/shards?pg=1&limit=0", "osds/1/shards?pg=1&foo=1"):
        rc, body = api(aio, bad)
        expect((rc, body.get("error")), (1, "InvalidArgument"), "GET %s is refused" % bad)
    rc, body = api(aio, "osds/99/shards?pg=0")
    expect((rc, body.get("error")), (1, "NoSuchOsd"), "an OSD not in the map")

    # 4. read back
    for k, b in bodies.items():
        got = s3.get_object(Bucket="pgcheck", Key=k)["Body"].read()
        expect(hashlib.md5(got).hexdigest(), hashlib.md5(b).hexdigest(), "%s reads back" % k)


if __name__ == "__main__":
    sys.exit(run_with_aio(run, CHECKS, args=(
        "--debug-fault", "fail=UNAVAILABLE,peer=local:osd-3,method=PutShard")))
