#!/usr/bin/env python3
"""test_pg_states.py — PG states, rescan flags and the operator verbs with
the real binaries (issue 12, meta + admin + gateway half): one iolake-meta
(with --metrics-listen), six iolake-osd on hosts osd1..osd6 (every 4+2 PG
spans all six), one iolake-gw, on loopback.

  - once the primaries reported, `iolake-admin pg ls` (table and --json)
    lists every PG active+clean with its OSDs and primary (primaries spread
    over all six OSDs); `cluster status` has a "pgs:" summary and
    --json pg_states / recovery;
  - the OSD V that holds a data slot (0..k-1) in the most PGs SIGKILLed
    (slot order follows registration order, so a fixed id could sit in a
    parity slot of every PG and never be read): a PUT is acknowledged
    with 5 of 6 shards and the gateway's FlagPgs reaches meta
    (iolake_pg_flags_total{reason="put_partial"} on meta's /metrics);
    GETs of objects written before that decode around V and flag
    "read_bad_shard"; once meta marks V down, `pg ls` shows it as "V*"
    and the PGs active+degraded;
  - `osd out W` (another OSD) holds against W's heartbeats (up, out,
    admin_out); `osd rm W` is refused while it is up; `osd in W` takes it
    back in; `osd rm V` is refused while V is in, accepted once it is out.

Without the OSD side of self-healing no PG reports come, so every PG
whose OSDs are all up shows "unknown": what this checks is meta's
derivation from the map and the plumbing, not recovery.
"""
import os, re, signal, subprocess, sys, time, urllib.request

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-pgstates.")
TMP = P.tmp
start = P.start


def admin_text(meta, *args):
    r = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta] + list(args),
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    mport = free_pair()
    meta = "127.0.0.1:%d" % mport
    metrics_port = free_port()
    start("meta", ["iolake-meta", "--id", "1", "--data-dir", os.path.join(TMP, "meta"),
                   "--listen", meta, "--peers", "1@" + meta,
                   "--metrics-listen", "127.0.0.1:%d" % metrics_port,
                   "--osd-down-after", "4s", "--osd-out-after", "10m"])
    osds = {}
    for i in range(1, 7):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        osds[i] = start("osd%d" % i, [
            "iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"), "--size", "256M",
            "--format", "--meta-dir", os.path.join(d, "idx"),
            "--listen", "127.0.0.1:%d" % free_port(), "--meta", meta, "--host", "osd%d" % i])

    def osd_map():
        r = admin(meta, "osd", "ls")
        return {o["id"]: o for o in (r["osds"] if isinstance(r, dict) else r)}

    wait_for("six OSDs registered and up",
             lambda: len(osd_map()) == 6 and all(o["up"] for o in osd_map().values()))

    def meta_metric(name, labels):
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port,
                                      timeout=2).read().decode()
        for line in text.splitlines():
            if line.startswith(name + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        return None

    # pg ls and cluster status with PG states: the primaries scan their
    # (empty) PGs and report them clean within a report interval or two.
    wait_for("every PG reported active+clean",
             lambda: admin(meta, "cluster", "status")["pg_states"] == {"active+clean": 256},
             timeout=20)
    pgs = admin(meta, "pg", "ls")
    expect(len(pgs["pgs"]) == 256 and all(
        p["state"] == "active+clean" and len(p["osds"]) == 6 and p["primary"] in p["osds"]
        and all(p["up"]) for p in pgs["pgs"]),
        "pg ls --json: 256 PGs, active+clean, a primary in each set")
    lead = {}
    for p in pgs["pgs"]:
        lead[p["primary"]] = lead.get(p["primary"], 0) + 1
    expect(len(lead) == 6 and min(lead.values()) >= 20,
           "primaries spread over the six OSDs: %s" % dict(sorted(lead.items())))
    expect(all(k in pgs["pgs"][0] for k in ("stripes_missing", "bytes_missing",
                                            "rate_bytes_per_s", "eta_s", "report")),
           "pg ls --json: recovery fields and report per PG")
    data_slots = {}
    for p in pgs["pgs"]:
        for o in p["osds"][:4]:
            data_slots[o] = data_slots.get(o, 0) + 1
    v = max(sorted(data_slots), key=lambda o: data_slots[o])
    w = 1 if v != 1 else 2
    print("victim osd%d (a data slot in %d PGs), out/in osd%d" % (v, data_slots[v], w))
    rc, out, _ = admin_text(meta, "pg", "ls")
    expect(rc == 0 and re.search(r"^PG\s+STATE\s+OSDS\s+PRIMARY\s+MISSING\s+BYTES LEFT\s+RATE\s+ETA",
                                 out, re.M), "pg ls: table header")
    st = admin(meta, "cluster", "status")
    expect(st["pg_states"] == {"active+clean": 256} and st["recovery"]["bytes_missing"] == 0,
           "cluster status --json: pg_states and recovery")
    rc, out, _ = admin_text(meta, "cluster", "status")
    expect(rc == 0 and "pgs: 256 active+clean" in out, "cluster status: pgs summary line")
    rc, out, err = admin_text(meta, "cluster", "wait-healthy", "20")
    expect(rc == 0 and re.search(r"^healthy after [0-9.]+ s: 1 meta members, 6 OSDs up and in, "
                                 r"256 PGs active\+clean$", out, re.M),
           "cluster wait-healthy on a healthy cluster: %s%s" % (out.strip(), err.strip()))
    wait_for("meta /metrics: iolake_pg_state{state=active+clean} 256",   # set each second
             lambda: meta_metric("iolake_pg_state", {"state": "active+clean"}) == 256, timeout=5)
    print("ok: meta /metrics: iolake_pg_state{state=active+clean} 256")

    key = admin(meta, "user", "add", "root")
    gport = free_port()
    ep = "http://127.0.0.1:%d" % gport
    start("gw", ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % gport, "--meta", meta])
    wait_for("gateway ready",
             lambda: urllib.request.urlopen(ep + "/health/ready", timeout=1).status == 200)
    s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=key["access_key"],
                      aws_secret_access_key=key["secret_key"], region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                    read_timeout=60))
    s3.create_bucket(Bucket="pgs")
    bodies = {}
    for i in range(12):
        bodies["before-%d" % i] = os.urandom(256 << 10)
        s3.put_object(Bucket="pgs", Key="before-%d" % i, Body=bodies["before-%d" % i])
    time.sleep(1.2)   # a batch would have gone out by now
    expect(not meta_metric("iolake_pg_flags_total", {"reason": "put_partial"}),
           "all OSDs up: no put_partial flag")

    osds[v].send_signal(signal.SIGKILL)
    osds[v].wait()
    print("killed osd%d" % v)
    b = os.urandom(256 << 10)
    s3.put_object(Bucket="pgs", Key="after", Body=b)
    expect(s3.get_object(Bucket="pgs", Key="after")["Body"].read() == b,
           "osd%d down: a PUT is acknowledged and reads back" % v)
    for k, body in bodies.items():
        expect(s3.get_object(Bucket="pgs", Key=k)["Body"].read() == body,
               "osd%d down: %s reads back" % (v, k))
    # A down OSD keeps its slot and its channel (gw_map): reads keep
    # failing on it, whether meta has marked it down yet or not.
    gw_metrics = urllib.request.urlopen(ep + "/metrics", timeout=2).read().decode()
    decodes = [float(l.split()[1]) for l in gw_metrics.splitlines()
               if l.startswith("iolake_gw_data_decodes ")]
    check_read = bool(decodes and decodes[0] > 0)
    if not check_read:
        print("SKIP step: no GET decoded around osd%d; read flag not checked" % v)
    wait_for("FlagPgs put_partial on meta",
             lambda: (meta_metric("iolake_pg_flags_total", {"reason": "put_partial"}) or 0) >= 1,
             timeout=10)
    print("ok: a degraded PUT made a FlagPgs(put_partial) reach meta")
    if check_read:
        wait_for("FlagPgs read_bad_shard on meta",
                 lambda: (meta_metric("iolake_pg_flags_total", {"reason": "read_bad_shard"}) or 0) >= 1,
                 timeout=10)
        print("ok: GETs that decoded around osd%d made a FlagPgs(read_bad_shard) reach meta" % v)

    wait_for("osd%d marked down" % v, lambda: not osd_map()[v]["up"], timeout=20)
    pgs = admin(meta, "pg", "ls")
    expect(all(p["state"] == "active+degraded" for p in pgs["pgs"]),
           "osd%d down: every PG active+degraded" % v)
    rc, out, _ = admin_text(meta, "pg", "ls")
    expect(rc == 0 and re.search(r"^0\s+active\+degraded\s+\S*\b%d\*" % v, out, re.M),
           "pg ls: the down OSD is marked %d*" % v)
    wait_for("gauge active+degraded 256",
             lambda: meta_metric("iolake_pg_state", {"state": "active+degraded"}) == 256)
    t0 = time.time()
    rc, out, err = admin_text(meta, "cluster", "wait-healthy", "2")
    expect(rc == 1 and "not healthy after" in err and "not up" in err and time.time() - t0 < 10,
           "cluster wait-healthy with osd%d down: exit 1 after its 2 s, %s" % (v, err.strip()))
    rc, _, err = admin_text(meta, "cluster", "wait-healthy", "0")
    expect(rc == 2 and "1..86400" in err, "cluster wait-healthy 0 refused: %s" % err.strip())

    # Operator verbs.
    r = admin(meta, "osd", "out", str(w))
    expect(r["admin_out"] and not r["in"], "osd out %d" % w)
    time.sleep(3)   # it keeps beating (every 2 s)
    o = osd_map()[w]
    expect(o["up"] and not o["in"] and o["admin_out"],
           "osd%d up but held out despite its beats" % w)
    rc, _, err = admin_text(meta, "osd", "rm", str(w))
    expect(rc == 1 and "only a down and out OSD" in err,
           "osd rm %d refused while up: %s" % (w, err.strip()))
    r = admin(meta, "osd", "in", str(w))
    o = osd_map()[w]
    expect(o["in"] and not o["admin_out"], "osd in %d" % w)
    rc, _, err = admin_text(meta, "osd", "rm", str(v))
    expect(rc == 1 and "down and in" in err, "osd rm %d refused while in: %s" % (v, err.strip()))
    admin(meta, "osd", "out", str(v))
    r = admin(meta, "osd", "rm", str(v))
    expect(r["removed"] == v and v not in osd_map(), "osd rm %d once down and out" % v)
    pgs = admin(meta, "pg", "ls")
    expect(all(v not in p["osds"] for p in pgs["pgs"]), "no PG names osd%d any more" % v)
    rc, _, err = admin_text(meta, "osd", "rm", str(v))
    expect(rc == 1 and "no such OSD" in err, "osd rm of an unknown OSD")
    print("PASS test_pg_states")


if __name__ == "__main__":
    P.run(main)
