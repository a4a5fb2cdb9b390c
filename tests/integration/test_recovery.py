#!/usr/bin/env python3
"""test_recovery.py — self-healing end to end with the real binaries (issue
12, the OSD half): one iolake-meta (one voter, --osd-down-after 3s
--osd-out-after 15s: OSDs beat every 2 s, and a 2 s limit flaps under load
on two cores; a paused OSD must be down, not out, while the gateway, which
waits out its calls to it, writes a few objects), eight iolake-osd (a 256 MiB file each in /dev/shm,
each its own host hN, so a 4+2 PG spans six of them), one iolake-gw, on
loopback; boto3 drives the gateway. Every OSD runs its recovery driver.

  1. ~100 objects of 0 B .. 3 MiB (and two multipart ones) are PUT and
     their MD5s kept; `iolake-admin pg check` (which asks every up slot's
     OSD for its shards, independently of the drivers) finds every stripe
     whole.
  1b. Bad shards: a byte of data shard 1 of one object is flipped on its
     device and its scrubber records it and flags the PG (FlagPgs through
     meta, or straight to its own driver when it leads the PG); then a
     byte of shard 0: the PG's primary rescans, lists every slot's records,
     counts them as missing, rebuilds both from the other four shards, and
     the puts drop the records.
  2. Lost OSD: the OSD holding the most shards is SIGKILLed and its device
     and index deleted. Once meta marks it out, placement moves its slots;
     the new slot holders must end up holding every shard (pg check clean,
     no slot names the dead OSD). The rebuild rate is measured from the
     drivers' iolake_osd_recovery_bytes_total (/metrics).
  3. Backfill: another OSD is SIGKILLed (data kept); while it is down (not
     out) objects are written and some deleted; it is restarted; pg check
     must end clean again (its missing shards backfilled), and the new
     objects read back.
  3b. The OSD that leads most PGs is paused (SIGSTOP: it keeps its
     memory) until meta marks it down, objects are written, it resumes
     with the very slots it had: it must not trust its old "clean", but
     rescan the PGs it leads and backfill its own slots.
  4. Two more OSDs (other hosts) are SIGKILLed: every object still reads
     back with its MD5 — possible only if step 2 rebuilt the lost shards.

Prints its seed (IOLAKE_SEED replays); IOLAKE_RECOVERY_RATE sets the
drivers' --recovery-rate (default: the binaries' default). Bounded waits
with messages naming what did not happen.
"""
import concurrent.futures, hashlib, os, random, re, shutil, signal, subprocess, sys, time, urllib.request

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-recovery.")
TMP = P.tmp
N_OSDS = 8
SEED = int(os.environ.get("IOLAKE_SEED") or random.randrange(1 << 30))
RATE = os.environ.get("IOLAKE_RECOVERY_RATE")


USED_PORTS = set()


def port():
    """A free port not handed out before in this test (free_port() may
    return a port twice once it is closed again)."""
    while True:
        p = free_port()
        if p not in USED_PORTS and p + 1 not in USED_PORTS:
            USED_PORTS.add(p)
            return p


def pg_check(meta):
    """(clean, result) from iolake-admin pg check --json."""
    r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json",
                        "pg", "check"], capture_output=True, text=True, timeout=60)
    import json
    res = json.loads(r.stdout) if r.stdout.strip() else {}
    return r.returncode == 0, res


def main():
    print("seed", SEED)
    rnd = random.Random(SEED)
    mport = free_pair()
    USED_PORTS.update((mport, mport + 1))
    meta = "127.0.0.1:%d" % mport
    P.start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                     "--listen", meta, "--peers", "1@" + meta, "--pg-count", "64",
                     "--osd-down-after", "3s", "--osd-out-after", "15s"])
    osds, args, mports = {}, {}, {}

    def start_osd(i):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d, exist_ok=True)
        if i not in args:
            mports[i] = port()
            args[i] = [
                "iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                "--size", "256M", "--format", "--meta-dir", os.path.join(d, "idx"),
                "--listen", "127.0.0.1:%d" % port(), "--meta", meta, "--host", "h%d" % i,
                "--metrics-listen", "127.0.0.1:%d" % mports[i], "--pg-report-interval", "1s",
                "--scrub-rate", "16M", "--scrub-interval", "1s"]
            if RATE is not None:
                args[i] += ["--recovery-rate", RATE]
        osds[i] = P.start("osd%d" % i, args[i])

    for i in range(1, N_OSDS + 1):
        start_osd(i)

    def osd_list():
        r = admin(meta, "osd", "ls")
        return r["osds"] if isinstance(r, dict) else r

    def up_set():
        return {o["id"] for o in osd_list() if o.get("up")}
    wait_for("eight OSDs registered and up", lambda: len(up_set()) == N_OSDS)
    print("ok: eight OSDs up")

    key = admin(meta, "user", "add", "root")
    gport = port()
    ep = "http://127.0.0.1:%d" % gport
    P.start("gw", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % gport, "--meta", meta])
    wait_for("gateway ready",
             lambda: urllib.request.urlopen(ep + "/health/ready", timeout=1).status == 200)
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                      aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"},
                                    retries={"max_attempts": 3}, read_timeout=60))
    s3.create_bucket(Bucket="heal")

    md5 = {}

    def put(key, n):
        b = rnd.randbytes(n)
        s3.put_object(Bucket="heal", Key=key, Body=b)
        md5[key] = hashlib.md5(b).hexdigest()

    # 1. objects: many small, some medium, some up to 3 MiB.
    for i in range(100):
        c = rnd.random()
        n = (rnd.randrange(0, 4096) if c < 0.25 else rnd.randrange(4096, 256 << 10)
             if c < 0.65 else rnd.randrange(256 << 10, 3 << 20))
        put("obj-%03d" % i, n)
    for i in range(2):
        k = "mp-%d" % i
        up = s3.create_multipart_upload(Bucket="heal", Key=k)
        parts, whole = [], b""
        for pn, n in ((1, 5 << 20), (2, rnd.randrange(1, 1 << 20))):
            b = rnd.randbytes(n)
            whole += b
            e = s3.upload_part(Bucket="heal", Key=k, UploadId=up["UploadId"], PartNumber=pn,
                               Body=b)["ETag"]
            parts.append({"ETag": e, "PartNumber": pn})
        s3.complete_multipart_upload(Bucket="heal", Key=k, UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": parts})
        md5[k] = hashlib.md5(whole).hexdigest()
    bulk = int(os.environ.get("IOLAKE_RECOVERY_BULK_MB", "0"))
    for i in range(bulk // 3):
        put("bulk-%04d" % i, 3 << 20)
    print("ok: %d objects written" % len(md5))
    wait_for("every stripe whole after the writes", lambda: pg_check(meta)[0], timeout=20)
    _, res = pg_check(meta)
    expect(res.get("stripes", 0) > 100, "pg check sees %d stripes, all whole" % res["stripes"])

    def read_all(label):
        for k, want in md5.items():
            got = hashlib.md5(s3.get_object(Bucket="heal", Key=k)["Body"].read()).hexdigest()
            if got != want:
                raise AssertionError("%s: %s reads back wrong (md5 %s, want %s)" %
                                     (label, k, got, want))
        print("ok: %s: all %d objects read back (md5)" % (label, len(md5)))

    def recovery_bytes():
        tot = 0
        for i, p in osds.items():
            if p.poll() is not None:
                continue
            try:
                t = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mports[i],
                                           timeout=2).read().decode()
            except OSError:
                continue
            for m in re.finditer(r'^iolake_osd_recovery_bytes_total\{[^}]*\} (\d+)', t, re.M):
                tot += int(m.group(1))
        return tot

    # 1b. bad shards found by the scrubbers and rewritten by the primary.
    body = rnd.randbytes(1 << 20)  # one 1 MiB segment: 4 data shards of 256 KiB
    s3.put_object(Bucket="heal", Key="scrub-victim", Body=body)
    md5["scrub-victim"] = hashlib.md5(body).hexdigest()
    sl = (1 << 20) // 4

    def bad_on(i):
        for o in admin(meta, "osd", "scrub-status")["osds"]:
            if o["id"] == i:
                return len(o.get("bad_shards", []))
        return 0

    def flip(shard):
        """Flip a byte of the shard's first block on the device that holds it."""
        probe = body[shard * sl:shard * sl + 4096]
        for i in sorted(osds):
            with open(os.path.join(TMP, "osd%d" % i, "dev"), "r+b") as f:
                data = f.read()
                at = data.find(probe)
                while at >= 0 and at % 4096:
                    at = data.find(probe, at + 1)
                if at < 0:
                    continue
                f.seek(at + 100)
                f.write(bytes([data[at + 100] ^ 0x40]))
                return i
        raise AssertionError("shard %d of scrub-victim is on no device" % shard)
    fixed_before = recovery_bytes()
    # Shard 1 first: its record reaches the PG's primary as a flag
    # (through meta unless that OSD leads the PG itself) ...
    o1 = flip(1)
    wait_for("osd%d's scrubber records the bad shard 1" % o1,
             lambda: bad_on(o1) or recovery_bytes() > fixed_before, timeout=30)
    # ... then shard 0; a scan lists every slot's records and rewrites
    # whatever is recorded bad.
    o0 = flip(0)
    flipped = [(o0, 0), (o1, 1)]
    # A GET in between (before, or racing, the rewrite): two data shards
    # are bad on disk, so it must decode from the other four and still
    # return the right bytes.
    got = s3.get_object(Bucket="heal", Key="scrub-victim")["Body"].read()
    expect(got == body, "a GET with shards 0 and 1 bad on disk reads back byte for byte")
    print("flipped a byte of shard 1 (osd%d), recorded bad; then of shard 0 (osd%d)" %
          (o1, o0))
    wait_for("the primary rewrote both shards (records dropped, every stripe whole)",
             lambda: recovery_bytes() - fixed_before >= 2 * sl and
             not any(bad_on(i) for i, _ in flipped) and pg_check(meta)[0], timeout=30)
    expect(recovery_bytes() - fixed_before >= 2 * sl,
           "the two bad shards were rebuilt (%d bytes written by the drivers)" %
           (recovery_bytes() - fixed_before))
    got = s3.get_object(Bucket="heal", Key="scrub-victim")["Body"].read()
    expect(got == body, "the object reads back byte for byte")

    def holders(victim):
        pgs = admin(meta, "pg", "ls")["pgs"]
        return [p["pg"] for p in pgs if victim in p["osds"]]

    def settled():
        """Every OSD alive is up in the map (a slot of an OSD marked down
        by a late beat is not checked) and every stripe is whole."""
        alive = {i for i, p in osds.items() if p.poll() is None}
        return up_set() == alive and pg_check(meta)[0] and up_set() == alive

    # 2. a lost OSD: dead, its disk gone.
    pgs = admin(meta, "pg", "ls")["pgs"]
    count = {i: sum(1 for p in pgs if i in p["osds"]) for i in osds}
    victim = max(count, key=lambda i: (count[i], -i))
    prim = {}
    for p in pgs:
        prim[p["primary"]] = prim.get(p["primary"], 0) + 1
    print("PGs per primary (all up):", dict(sorted(prim.items())))
    before = recovery_bytes()
    osds[victim].send_signal(signal.SIGKILL)
    osds[victim].wait()
    shutil.rmtree(os.path.join(TMP, "osd%d" % victim))
    t_kill = time.time()
    print("killed osd%d (slots in %d PGs) and deleted its device and index" %
          (victim, count[victim]))
    del osds[victim]
    wait_for("osd%d marked out and its slots moved" % victim, lambda: not holders(victim),
             timeout=20)
    t_out = time.time()
    print("ok: osd%d out after %.1fs; its slots moved" % (victim, t_out - t_kill))
    t_first = None
    end = time.time() + 60
    while time.time() < end:
        if t_first is None and recovery_bytes() > before:
            t_first = time.time()
        if settled():
            break
        time.sleep(0.05)
    else:
        print("last pg check:", pg_check(meta)[1])
        raise AssertionError("the lost OSD's shards were not rebuilt within 60 s")
    t_done = time.time()
    rebuilt = recovery_bytes() - before
    span = t_done - min(t_first or t_out, t_out)
    expect(rebuilt > 0, "the new slot holders got every shard back: %d bytes rebuilt "
           "in %.2fs after the first byte (%.1f MB/s; %.1fs after out, %.1fs after the kill)" %
           (rebuilt, span, rebuilt / max(span, 1e-3) / 1e6, t_done - t_out, t_done - t_kill))
    print("RECOVERY_RATE bytes=%d seconds=%.2f mb_per_s=%.1f rate_flag=%s" %
          (rebuilt, span, rebuilt / max(span, 1e-3) / 1e6, RATE or "default"))

    # 3. backfill: an OSD misses writes and deletes while down, then returns.
    back = next(i for i in sorted(osds) if i != victim)
    osds[back].send_signal(signal.SIGKILL)
    osds[back].wait()
    t_b = time.time()
    for i in range(10):
        put("while-down-%d" % i, rnd.randrange(4096, 512 << 10))
    for k in ("obj-001", "obj-002", "obj-003"):
        s3.delete_object(Bucket="heal", Key=k)
        md5.pop(k)
    # Restart only once meta saw it down (so the map really changes
    # twice), and before it is marked out (5 s).
    wait_for("osd%d marked down" % back, lambda: back not in up_set(), timeout=10)
    start_osd(back)
    print("osd%d killed, 10 objects written and 3 deleted, restarted after %.1fs" %
          (back, time.time() - t_b))
    wait_for("osd%d up again" % back, lambda: back in up_set(), timeout=20)
    expect(back not in [o["id"] for o in osd_list() if not o.get("in", True)],
           "osd%d came back before it was marked out" % back)
    wait_for("osd%d backfilled (every live OSD up, every stripe whole)" % back, settled,
             timeout=60)
    print("ok: osd%d holds every shard of its slots again, the objects written while it "
          "was down included" % back)
    read_all("after backfill")

    # 3b. a primary paused (not restarted: it keeps its memory) while
    # objects are written: once back it must not trust its old "clean".
    pgs = admin(meta, "pg", "ls")["pgs"]
    lead = {}
    for p in pgs:
        lead[p["primary"]] = lead.get(p["primary"], 0) + 1
    paused = max((i for i in lead if i in osds and osds[i].poll() is None),
                 key=lambda i: lead[i])
    slots_before = [p["osds"] for p in pgs]
    osds[paused].send_signal(signal.SIGSTOP)
    t_p = time.time()
    wait_for("osd%d marked down" % paused, lambda: paused not in up_set(), timeout=10)
    # In parallel: the gateway waits out its call to the paused OSD for
    # each, and the OSD must come back before it is marked out.
    bodies = {"while-paused-%d" % i: rnd.randbytes(rnd.randrange(64 << 10, 512 << 10))
              for i in range(8)}
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda kv: s3.put_object(Bucket="heal", Key=kv[0], Body=kv[1]),
                    bodies.items()))
    for k, b in bodies.items():
        md5[k] = hashlib.md5(b).hexdigest()
    still_in = paused not in [o["id"] for o in osd_list() if not o.get("in", True)]
    slots_after = [p["osds"] for p in admin(meta, "pg", "ls")["pgs"]]
    osds[paused].send_signal(signal.SIGCONT)
    expect(still_in and slots_after == slots_before,
           "osd%d (primary of %d PGs) paused %.1fs: marked down, not out, its slots kept, "
           "8 objects written meanwhile" % (paused, lead[paused], time.time() - t_p))
    wait_for("osd%d backfilled its own PGs after a pause (every stripe whole)" % paused,
             settled, timeout=60)
    print("ok: osd%d, primary again, backfilled what it missed while paused" % paused)

    # 4. two more OSDs on other hosts die: the data survives only if the
    # lost OSD's shards were rebuilt.
    others = [i for i in sorted(osds) if i != back][:2]
    for i in others:
        osds[i].send_signal(signal.SIGKILL)
        osds[i].wait()
    print("killed osd%d and osd%d" % tuple(others))
    read_all("three OSDs lost in all")

    for i, p in osds.items():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for i, p in osds.items():
        if i in others:
            continue
        rc = p.wait(timeout=15)
        expect(rc == 0, "osd%d stops cleanly (recovery driver included)" % i)
    if os.environ.get("IOLAKE_KEEP_LOGS"):
        shutil.copytree(TMP, os.environ["IOLAKE_KEEP_LOGS"], dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("dev", "idx", "meta"))
    print("PASS test_recovery (seed %d)" % SEED)


if __name__ == "__main__":
    P.run(main)
