#!/usr/bin/env python3
"""policy_gate.py — what the authorization gate costs with bucket policies
(issue 16): PUT and GET of 4 KiB objects (the requests where a per-request
cost shows most) through iolake-s3-bench against a fresh iolake-aio, for
a base build and a head build, in ABBA order (a loaded, shared machine
drifts: alternating spreads the drift over both).

    bench/policy_gate.py --base BUILD_DIR --head BUILD_DIR [--rounds 2]
                         [--objects 3000] [--workdir /dev/shm]

Cells: base; head on a bucket without a policy; head on a bucket with a
policy of four statements that every request evaluates (nothing matches
but an Allow for the bench user, so the requests still pass through
conditions, principals and resources). The load runs as a user made for
it, not the root (admins skip policies). Prints p50/p99/max and ops/s of
each run and the medians per cell. Asserts nothing.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "tests", "integration"))
import aio_py  # noqa: E402

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "NoTen", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
         "Resource": ["arn:aws:s3:::bench", "arn:aws:s3:::bench/*"],
         "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}},
        {"Sid": "TLSNotRequiredButChecked", "Effect": "Deny", "Principal": "*",
         "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::bench/*",
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
        {"Sid": "Public", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::bench/public/*"},
        {"Sid": "Owner", "Effect": "Allow", "Principal": {"AWS": "benchu"},
         "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::bench/*"},
    ],
}


def run_cell(build, bench, workdir, objects, with_policy):
    aio = aio_py.Aio(osd_size="2G")
    aio_py.BUILD = build
    try:
        aio.start(timeout=30)
        # A user who is not an admin (admins skip every policy).
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        u = json.loads(subprocess.run([os.path.join(build, "iolake-admin"), "--meta", meta, "--json",
                                       "user", "add", "benchu"], check=True,
                                      capture_output=True, text=True).stdout)
        ak, sk = u["access_key"], u["secret_key"]
        c = aio.client(ak=ak, sk=sk)
        c.create_bucket(Bucket="bench")
        if with_policy:
            c.put_bucket_policy(Bucket="bench", Policy=json.dumps(POLICY))
        j = os.path.join(aio.tmp, "r.json")
        cmd = [bench, "--endpoint", aio.ep, "--access-key", ak, "--secret-key", sk,
               "--bucket", "bench", "--no-create-bucket", "--size", "4KiB", "--objects",
               str(objects), "--concurrency", "32", "--gets", "3", "--warmup-ops", "300",
               "--json", j]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            raise RuntimeError("s3-bench: %s" % r.stdout[-2000:])
        d = json.load(open(j))
        out = {}
        for p in d["phases"]:
            if p["name"] in ("put", "get"):
                lat = p["latency_us"]
                out[p["name"]] = (p["ops_per_s"], lat["p50"] / 1e3, lat["p99"] / 1e3,
                                  lat["max"] / 1e3, p["errors"])
        aio.stop(limit=15)
        return out
    finally:
        aio.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--objects", type=int, default=3000)
    ap.add_argument("--workdir", default="/dev/shm")
    a = ap.parse_args()
    bench = os.path.join(a.head, "iolake-s3-bench")
    cells = {"base": (a.base, False), "head": (a.head, False), "head+policy": (a.head, True)}
    order = []
    for r in range(a.rounds):   # ABBA over the three cells
        seq = ["base", "head", "head+policy"]
        order += seq if r % 2 == 0 else list(reversed(seq))
    res = {k: [] for k in cells}
    print("load average before: %s" % open("/proc/loadavg").read().split()[:3])
    for name in order:
        build, pol = cells[name]
        o = run_cell(build, bench, a.workdir, a.objects, pol)
        res[name].append(o)
        for ph in ("put", "get"):
            ops, p50, p99, mx, errs = o[ph]
            print("%-12s %s %8.0f ops/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  errors %d" % (
                name, ph, ops, p50, p99, mx, errs), flush=True)
    print("load average after: %s" % open("/proc/loadavg").read().split()[:3])
    print("\nmedians (%d runs each, ABBA)" % a.rounds)
    print("| cell | PUT ops/s | PUT p50 | PUT p99 | GET ops/s | GET p50 | GET p99 | GET max |")
    print("|---|---|---|---|---|---|---|---|")
    for name in cells:
        row = [name]
        for ph in ("put", "get"):
            vals = list(zip(*[o[ph] for o in res[name]]))
            row += ["%.0f" % statistics.median(vals[0]), "%.2f" % statistics.median(vals[1]),
                    "%.2f" % statistics.median(vals[2])]
            if ph == "get":
                row.append("%.2f" % statistics.median(vals[3]))
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
