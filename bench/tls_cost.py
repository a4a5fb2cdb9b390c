#!/usr/bin/env python3
"""tls_cost.py — what TLS costs on the S3 port (issue 16): the same cells
against two fresh iolake-aio, one plain and one with --tls-cert/--tls-key
(a test CA made here), driven by the same wrk (-t2, presigned URLs, so
SigV4 query auth on every request), alternated plain/TLS/TLS/plain (ABBA)
and each side's two runs averaged:

  GET 4 KiB   wrk -c16, ops/s and p50/p99
  GET 4 MiB   wrk -c8, MB/s and p50/p99
  PUT 4 MiB   wrk -c4 (presigned PUT, one key per connection... wrk reuses
              one path list), MB/s and p50/p99

  bench/tls_cost.py [--build build] [--secs 8] [--workdir /dev/shm]

iolake-s3-bench speaks plain HTTP only; wrk speaks both, so both sides
are measured by one client. Prints a markdown table for docs/performance.md.
"""
import argparse, os, re, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

LUA = """local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do paths[#paths + 1] = line end
local method = os.getenv("WRK_METHOD")
local i = 0
if method == "PUT" then wrk.body = string.rep("x", tonumber(os.getenv("WRK_BODY"))) end
request = function()
	i = i + 1
	return wrk.format(method, paths[(i % #paths) + 1])
end
"""


def certs(d):
    def run(*a):
        subprocess.run(a, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", d + "/ca.key", "-out", d + "/ca.pem", "-days", "2", "-subj", "/CN=bench ca")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", d + "/srv.key", "-out", d + "/srv.csr", "-subj", "/CN=localhost")
    with open(d + "/ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("openssl", "x509", "-req", "-in", d + "/srv.csr", "-CA", d + "/ca.pem", "-CAkey",
        d + "/ca.key", "-set_serial", "7", "-out", d + "/srv.pem", "-days", "2", "-extfile", d + "/ext")


def client(ep, ca):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=benchlib.AK,
                        aws_secret_access_key=benchlib.SK, region_name="us-east-1",
                        verify=ca if ep.startswith("https") else None,
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))


def prepare(ep, ca):
    """Objects and presigned paths: {cell: [paths]}."""
    c = client(ep, ca)
    c.create_bucket(Bucket="tls")
    small, big = os.urandom(4096), os.urandom(4 << 20)
    out = {"get4k": [], "get4m": [], "put4m": []}
    for i in range(200):
        c.put_object(Bucket="tls", Key="s/%04d" % i, Body=small)
        out["get4k"].append(("s/%04d" % i, "get_object"))
    for i in range(16):
        c.put_object(Bucket="tls", Key="b/%04d" % i, Body=big)
        out["get4m"].append(("b/%04d" % i, "get_object"))
    for i in range(16):
        out["put4m"].append(("p/%04d" % i, "put_object"))
    for cell, keys in out.items():
        out[cell] = [c.generate_presigned_url(m, Params={"Bucket": "tls", "Key": k},
                                              ExpiresIn=3600)[len(ep):] for k, m in keys]
    return out


def cpu_s(pid):
    """CPU seconds (user + system) process pid has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(ep, paths, method, conns, secs, work, body=0, pid=None):
    pf = os.path.join(work, "paths.txt")
    with open(pf, "w") as f:
        f.write("\n".join(paths) + "\n")
    lua = os.path.join(work, "cell.lua")
    with open(lua, "w") as f:
        f.write(LUA)
    env = dict(os.environ, WRK_PATHS=pf, WRK_METHOD=method, WRK_BODY=str(body))
    c0 = cpu_s(pid) if pid else 0
    r = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "--latency", "-s", lua, ep],
                       capture_output=True, text=True, env=env)
    cpu = cpu_s(pid) - c0 if pid else 0
    t = r.stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", t)
    if r.returncode or not m:
        raise benchlib.BenchError("wrk %s failed:\n%s%s" % (ep, t, r.stderr))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if bad:
        raise benchlib.BenchError("wrk %s: %s non-2xx responses\n%s" % (ep, bad.group(1), t))

    def ms(p):
        g = re.search(r"\s%s%%\s+([\d.]+)(us|ms|s)\b" % p, t)
        return float(g.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[g.group(2)]
    ops = float(m.group(1))
    # server CPU per request, microseconds: robust to a busy machine
    return {"ops": ops, "p50": ms(50), "p99": ms(99), "cpu_us": cpu / (ops * secs) * 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--secs", type=int, default=8)
    ap.add_argument("--workdir", default="/dev/shm")
    ap.add_argument("--cells", default="get4k,get4m,put4m", help="subset, comma separated")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="iolake-tlscost.", dir=a.workdir)
    certs(work)
    ca = work + "/ca.pem"
    os.environ["SSL_CERT_FILE"] = ca  # benchlib's readiness probe verifies too
    plain = benchlib.Aio(a.build, work)
    tls = benchlib.Aio(a.build, work, flags=["--tls-cert", work + "/srv.pem",
                                             "--tls-key", work + "/srv.key"])
    tls.ep = tls.ep.replace("http://", "https://")
    try:
        plain.start()
        tls.start()
        paths = {"plain": prepare(plain.ep, ca), "tls": prepare(tls.ep, ca)}
        aios = {"plain": plain, "tls": tls}
        cells = [("GET 4 KiB", "get4k", "GET", 16, 0), ("GET 4 MiB", "get4m", "GET", 8, 0),
                 ("PUT 4 MiB", "put4m", "PUT", 4, 4 << 20)]
        res = {}
        print("machine: %s; load %s" % (benchlib.machine(), benchlib.uptime()), file=sys.stderr)
        cells = [c for c in cells if c[1] in a.cells.split(",")]
        for name, cell, method, conns, body in cells:
            runs = {"plain": [], "tls": []}
            for side in ("plain", "tls", "tls", "plain"):
                runs[side].append(wrk(aios[side].ep, paths[side][cell], method, conns, a.secs,
                                      work, body, aios[side].proc.pid))
                print("  %s %s: %.0f ops/s p99 %.2f ms, server %.0f us CPU/op (load %s)" % (
                    name, side, runs[side][-1]["ops"], runs[side][-1]["p99"],
                    runs[side][-1]["cpu_us"], benchlib.uptime()), file=sys.stderr, flush=True)
            res[name] = {s: {k: sum(r[k] for r in v) / len(v)
                             for k in ("ops", "p50", "p99", "cpu_us")}
                         for s, v in runs.items()}
            res[name]["size"] = 4096 if "KiB" in name else 4 << 20
        print("| cell | plain ops/s | TLS ops/s | TLS / plain | plain MB/s | TLS MB/s | "
              "plain p50 / p99 ms | TLS p50 / p99 ms | server CPU us/op plain / TLS |")
        print("|---|---:|---:|---:|---:|---:|---|---|---|")
        for name, r in res.items():
            p, t = r["plain"], r["tls"]
            print("| %s | %s | %s | %.2f | %.0f | %.0f | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f |" % (
                name, benchlib.fmt_int(p["ops"]), benchlib.fmt_int(t["ops"]), t["ops"] / p["ops"],
                p["ops"] * r["size"] / 1e6, t["ops"] * r["size"] / 1e6, p["p50"], p["p99"],
                t["p50"], t["p99"], p["cpu_us"], t["cpu_us"]))
        m = subprocess.run(["curl", "-s", "--cacert", ca, tls.ep + "/metrics"], capture_output=True,
                           text=True).stdout
        print("\n" + "\n".join(l for l in m.splitlines() if l.startswith("iolake_gw_tls_")))
    finally:
        tls.close()
        plain.close()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
