#!/usr/bin/env python3
"""test_admin_api.py — aio's operability and the admin HTTP API (issue 20).

iolake-aio on a free port set (S3, --admin-listen, --admin-api-listen all
given, none of them the defaults) with generated root credentials: the
banner and DIR/aio.json name the same addresses; `iolake-admin --data-dir
DIR cluster status` and `osd ls` work with no other flag; every endpoint
answers the expected JSON with the expected values (6 OSDs up; a bucket
made with aws-cli shows its object count and bytes; a user created through
the API uses S3 with the key it returned, is refused by the API (403), and
is gone for S3 once deleted; a key added, made admin and removed
through iolake-admin (meta, not the API) counts on the API within 1.5 s;
osd out through the API shows in `iolake-admin
osd ls` and in /api/v1/pgs, osd in reverts; every OSD holds data slots of
some PGs); no credentials, a wrong
secret, a bad token give 401; bad JSON 400; a big body 413; login sets an
HttpOnly cookie and gives a Bearer token; a cookie-only change without the
console header is 403. Then SIGTERM removes aio.json (iolake-admin exits 2:
not running); a restart with no admin flags serves S3 port + 1 and + 2;
kill -9 leaves a stale aio.json (iolake-admin exits 2: stale).

Signed calls go through curl --aws-sigv4 (Debian's 7.88), as
docs/admin-api.md shows them."""
import json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.error, urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aio_py  # noqa: E402

BUILD = os.environ.get("IOLAKE_BUILD") or os.path.join(os.path.dirname(__file__), "../../build")
AIO = os.path.join(BUILD, "iolake-aio")
ADMIN = os.path.join(BUILD, "iolake-admin")

tmp = tempfile.mkdtemp(prefix="iolake-adm.", dir="/dev/shm")
data = os.path.join(tmp, "data")
procs = []


def free_port():
    """A free port, none of the pair aio's meta keeps in DIR/meta/rpc-addr
    (its RPC and Raft ports, taken again at each start)."""
    keep = set()
    try:
        mp = int(open(os.path.join(data, "meta", "rpc-addr")).read().split(":")[1])
        keep = {mp, mp + 1}
    except (OSError, ValueError, IndexError):
        pass
    while True:
        p = aio_py.free_port()
        if p not in keep and p + 1 not in keep and p + 2 not in keep:
            return p


def port_free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


def expect(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def start(args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLAKE_ROOT_")}
    out = open(os.path.join(tmp, "aio.out"), "w")
    err = open(os.path.join(tmp, "aio.err"), "a")
    p = subprocess.Popen([AIO, "--data-dir", data, "--osd-size", "256M"] + args,
                         stdout=out, stderr=err, env=env)
    procs.append(p)
    end = time.time() + 30
    while time.time() < end:
        if p.poll() is not None:
            raise RuntimeError("iolake-aio exited %d: %s" % (
                p.returncode, open(os.path.join(tmp, "aio.err")).read()[-2000:]))
        text = open(os.path.join(tmp, "aio.out")).read()
        if "console" in text and os.path.exists(os.path.join(data, "aio.json")):
            return p, text
        time.sleep(0.1)
    raise RuntimeError("iolake-aio printed no banner in 30 s")


def banner_value(text, label):
    m = re.search(r"^\s*%s:\s+(\S+)" % re.escape(label), text, re.M)
    if not m:
        raise AssertionError("banner has no %r line:\n%s" % (label, text))
    return m.group(1)


def admin(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLAKE_ROOT_")}
    return subprocess.run([ADMIN, "--data-dir", data] + list(args), capture_output=True,
                          text=True, timeout=60, env=env)


class Api:
    def __init__(self, base, ak, sk):
        self.base, self.ak, self.sk = base.rstrip("/"), ak, sk

    def signed(self, method, path, body=None, ak=None, sk=None, service="s3"):
        """curl --aws-sigv4: (status, parsed JSON)."""
        cmd = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", method,
               "--aws-sigv4", "aws:amz:us-east-1:" + service,
               "--user", "%s:%s" % (ak or self.ak, sk or self.sk)]
        if body is not None:
            cmd += ["-H", "content-type: application/json", "--data-binary", body]
        out = subprocess.run(cmd + [self.base + path], capture_output=True, text=True,
                             timeout=60).stdout
        text, _, code = out.rpartition("\n")
        return int(code), (json.loads(text) if text else None)

    def plain(self, method, path, body=None, headers=None):
        """urllib, no signature: (status, JSON or text, headers)."""
        req = urllib.request.Request(self.base + path, method=method,
                                     data=body.encode() if isinstance(body, str) else body,
                                     headers=headers or {})
        try:
            r = urllib.request.urlopen(req, timeout=30)
            st, raw, hdr = r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            st, raw, hdr = e.code, e.read(), e.headers
        try:
            return st, json.loads(raw), hdr
        except ValueError:
            return st, raw.decode(errors="replace"), hdr


def is_error(doc, code=None):
    return (isinstance(doc, dict) and isinstance(doc.get("error"), str) and
            isinstance(doc.get("message"), str) and (code is None or doc["error"] == code))


def wait_for(fn, what, timeout=60):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = fn()
        if last:
            print("ok:", what)
            return last
        time.sleep(0.5)
    raise AssertionError("%s: not within %d s (last: %r)" % (what, timeout, last))


def s3(ep, ak, sk):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def main():
    # --- start on a port set of our own (none of them the defaults)
    s3p, madm, apip = free_port(), free_port(), free_port()
    p, text = start(["--s3-listen", "127.0.0.1:%d" % s3p,
                     "--admin-listen", "127.0.0.1:%d" % madm,
                     "--admin-api-listen", "127.0.0.1:%d" % apip])
    print(text)
    info = json.load(open(os.path.join(data, "aio.json")))
    ep = banner_value(text, "S3 endpoint")
    expect(ep == "http://127.0.0.1:%d" % s3p == info["s3_endpoint"], "banner and aio.json: S3 endpoint")
    expect(banner_value(text, "meta admin") == "127.0.0.1:%d" % madm == info["meta_admin"],
           "banner and aio.json: meta's admin address is --admin-listen")
    api_url = banner_value(text, "admin API")
    expect(api_url == "http://127.0.0.1:%d/api/v1/" % apip == info["admin_api"],
           "banner and aio.json: admin API URL is --admin-api-listen")
    expect(banner_value(text, "console") == "http://127.0.0.1:%d/console/" % apip == info["console"],
           "banner and aio.json: console URL")
    expect(info["pid"] == p.pid, "aio.json names aio's pid")
    creds = dict(l.strip().split("=", 1) for l in open(os.path.join(data, "root-credentials")))
    ak, sk = creds["access_key"], creds["secret_key"]
    expect(banner_value(text, "access key") == ak and banner_value(text, "secret key") == sk,
           "banner's root keys are DIR/root-credentials'")
    api = Api("http://127.0.0.1:%d" % apip, ak, sk)

    # --- iolake-admin with --data-dir only
    r = admin("cluster", "status")
    print(r.stdout, r.stderr)
    expect(r.returncode == 0 and "leader" in r.stdout and "127.0.0.1:%d" % madm in r.stdout,
           "iolake-admin --data-dir DIR cluster status")
    r = admin("osd", "ls")
    expect(r.returncode == 0 and len(re.findall(r"^\d+ .* up +in", r.stdout, re.M)) == 6,
           "iolake-admin --data-dir DIR osd ls: 6 OSDs up and in")

    # aio's OSDs answer only inside its process: df asks its admin API.
    r = admin("osd", "df")
    rows = re.findall(r"^(\d+) +local:osd-\d+ +(\d+) +(\d+) +(\d+) +(\d+)$", r.stdout, re.M)
    expect(r.returncode == 0 and len(rows) == 6 and all(int(t) > 0 for _, t, _, _, _ in rows)
           and not r.stderr, "iolake-admin --data-dir DIR osd df: six OSDs' space, through "
           "aio's admin API")
    r = admin("--json", "osd", "df")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    expect(len(d.get("osds", [])) == 6 and all(
        o["total_bytes"] == o["used_bytes"] + o["reserved_bytes"] + o["free_bytes"]
        and "puts" in o and "deletes" in o for o in d["osds"]),
           "iolake-admin --data-dir DIR --json osd df: total = used + reserved + free, "
           "puts and deletes, for each of six")

    # --- authentication
    st, doc, hdr = api.plain("GET", "/api/v1/cluster")
    expect(st == 401 and is_error(doc, "Unauthenticated"), "no credentials: 401 JSON error")
    st, doc = api.signed("GET", "/api/v1/cluster", sk=sk[:-1] + ("x" if sk[-1] != "x" else "y"))
    expect(st == 401 and is_error(doc, "SignatureDoesNotMatch"), "wrong secret: 401")
    st, doc = api.signed("GET", "/api/v1/cluster", ak="AKIANOSUCHKEY0000000")
    expect(st == 401 and is_error(doc), "unknown access key: 401")
    st, doc, _ = api.plain("GET", "/api/v1/cluster", headers={"Authorization": "Bearer v1.1.61.00"})
    expect(st == 401 and is_error(doc, "InvalidToken"), "bad bearer token: 401")

    # --- cluster, osds, pgs
    def healthy():
        st, d = api.signed("GET", "/api/v1/cluster")
        return d if st == 200 and d["health"] == "ok" else None
    cl = wait_for(healthy, "GET /api/v1/cluster: health ok")
    expect(cl["leader"] and cl["leader"]["id"] == 1 and len(cl["members"]) == 1 and
           cl["members"][0]["leader"] and cl["members"][0]["commit_index"] > 0 and
           cl["epoch"] > 0, "cluster: one member, the leader, with its Raft index and the epoch")
    expect(cl["osds"] == {"total": 6, "up": 6, "in": 6}, "cluster: 6 OSDs up and in")
    expect(cl["pgs"]["total"] == 256 and cl["pgs"]["states"] == {"active+clean": 256},
           "cluster: 256 PGs active+clean")
    st, d = api.signed("GET", "/api/v1/cluster", service="iolake-admin")
    expect(st == 200 and d["health"] == "ok", "SigV4 with service iolake-admin works too")
    st, osds = api.signed("GET", "/api/v1/osds")
    expect(st == 200 and len(osds["osds"]) == 6 and
           all(o["up"] and o["in"] and o["state"] == "up+in" for o in osds["osds"])
           and osds["expect_osds"] == 0,
           "GET /api/v1/osds: 6 OSDs up+in, the PGs placed (expect_osds 0)")
    expect(all(o["space"] and o["space"]["total_bytes"] > 0 and o["space"]["used_bytes"] >= 0
               for o in osds["osds"]) and osds["summary"]["total_bytes"] >= 6 * (200 << 20),
           "osds: each OSD's used/total bytes from the OSD")
    st, pgs = api.signed("GET", "/api/v1/pgs")
    expect(st == 200 and pgs["total"] == 256 and pgs["states"] == {"active+clean": 256} and
           len(pgs["pgs"]) == 256 and pgs["recovery"]["bytes_missing"] == 0,
           "GET /api/v1/pgs: counts by state, recovery, each PG")
    # aio's first PG table waits for all six OSDs (InitMap's expect_osds,
    # its --osds), so data slots (0..3) are spread over them: in join order
    # OSDs 1-4 held every PG's data and 5-6 only parity (256 x 4 / 6 = 171
    # each on average).
    data_slots = {}
    for row in pgs["pgs"]:
        for o in row["osds"][:4]:
            data_slots[o] = data_slots.get(o, 0) + 1
    expect(sorted(data_slots) == [1, 2, 3, 4, 5, 6] and min(data_slots.values()) > 120,
           "every OSD holds data slots: %s" % sorted(data_slots.items()))

    # --- a bucket made with aws-cli, objects in it
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk,
               AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
               AWS_CONFIG_FILE=os.path.join(tmp, "awsconf"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "awscreds"))
    with open(env["AWS_CONFIG_FILE"], "w") as f:
        f.write("[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n")
    open(env["AWS_SHARED_CREDENTIALS_FILE"], "w").close()
    aws = ["aws", "--endpoint-url", ep, "s3"]
    subprocess.run(aws + ["mb", "s3://admbucket"], env=env, check=True, timeout=120)
    sizes = [10, 5000, 100000]
    for i, n in enumerate(sizes):
        path = os.path.join(tmp, "f%d" % i)
        with open(path, "wb") as f:
            f.write(os.urandom(n))
        subprocess.run(aws + ["cp", path, "s3://admbucket/obj%d" % i], env=env, check=True,
                       timeout=120)
    st, b = api.signed("GET", "/api/v1/buckets")
    mine = [x for x in b["buckets"] if x["name"] == "admbucket"]
    expect(st == 200 and len(mine) == 1 and mine[0]["owner"] == "root" and
           mine[0]["objects"] == 3 and mine[0]["bytes"] == sum(sizes) and
           mine[0]["count"] == "complete",
           "GET /api/v1/buckets: the aws-cli bucket with 3 objects, %d bytes" % sum(sizes))
    st, b = api.signed("GET", "/api/v1/buckets?count=0")
    # ?count=0 skips listings; a bucket meta counts (no key ranges) keeps its
    # figures, which cost nothing (issue 20's usage rows).
    expect(st == 200 and b["buckets"][0]["objects"] == 3 and
           b["buckets"][0]["count"] == "complete",
           "buckets?count=0: no listing, meta's count of the bucket still there")

    # --- users: create through the API, use S3 with the key
    st, u = api.signed("POST", "/api/v1/users", body='{"name": "carol"}')
    expect(st == 201 and u["user"] == "carol" and not u["admin"] and
           len(u["access_key"]) == 20 and len(u["secret_key"]) == 40,
           "POST /api/v1/users: 201 with the new key and secret")
    c = s3(ep, u["access_key"], u["secret_key"])
    c.create_bucket(Bucket="carolbucket")
    c.put_object(Bucket="carolbucket", Key="k", Body=b"hello carol")
    expect(c.get_object(Bucket="carolbucket", Key="k")["Body"].read() == b"hello carol",
           "the new user's key works for S3 (bucket, put, get)")
    st, doc = api.signed("POST", "/api/v1/users", body='{"name": "carol"}')
    expect(st == 409 and is_error(doc, "AlreadyExists"), "same user again: 409")
    st, doc = api.signed("GET", "/api/v1/cluster", ak=u["access_key"], sk=u["secret_key"])
    expect(st == 403 and is_error(doc, "AccessDenied"), "a non-admin's signed call: 403")
    st, doc, _ = api.plain("POST", "/api/v1/login", json.dumps(
        {"access_key": u["access_key"], "secret_key": u["secret_key"]}))
    expect(st == 403 and is_error(doc, "AccessDenied"), "a non-admin cannot log in: 403")
    cmd = ["curl", "-s", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "%s:%s" % (ak, sk),
           api.base + "/api/v1/users"]
    raw = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    users = json.loads(raw)["users"]
    carol = [x for x in users if x["name"] == "carol"]
    expect(len(carol) == 1 and carol[0]["access_keys"] == [u["access_key"]] and
           not carol[0]["admin"] and [x for x in users if x["name"] == "root"][0]["admin"],
           "GET /api/v1/users: names, admin flags, key ids")
    expect(u["secret_key"] not in raw and sk not in raw and "secret" not in raw,
           "GET /api/v1/users: no secret in the answer")

    # --- iolake-admin api: the API signed with DIR/root-credentials
    r = admin("api", "GET", "cluster")
    expect(r.returncode == 0 and json.loads(r.stdout)["health"] == "ok",
           "iolake-admin --data-dir DIR api GET cluster (root key from DIR/root-credentials)")
    r = admin("api", "POST", "/api/v1/users", '{"name": "frank"}')
    expect(r.returncode == 0 and json.loads(r.stdout)["user"] == "frank",
           "iolake-admin api POST /api/v1/users")
    r = admin("api", "DELETE", "users/frank")
    expect(r.returncode == 0 and json.loads(r.stdout)["deleted"] == "frank",
           "iolake-admin api DELETE users/frank")
    r = admin("api", "GET", "nothing")
    expect(r.returncode == 1 and is_error(json.loads(r.stdout), "NotFound") and
           "HTTP 404" in r.stderr, "iolake-admin api on an unknown resource: exit 1, HTTP 404")

    # --- changes made through meta (iolake-admin), not through this API,
    # count here at once: the map's creds_epoch empties the API's credential
    # cache (10 s for a key, 2 s for an unknown one, without it)
    gak, gsk = "AKIAGINA000000000001", "g" * 40

    def until(fn, what, limit=1.5):
        t0 = time.time()
        while not fn():
            if time.time() - t0 > limit:
                raise AssertionError("%s: not within %.1f s" % (what, limit))
            time.sleep(0.05)
        print("ok: %s (%.2f s)" % (what, time.time() - t0))

    st, doc = api.signed("GET", "/api/v1/cluster", ak=gak, sk=gsk)
    expect(st == 401 and is_error(doc, "InvalidAccessKeyId"), "a key not yet made: 401")
    r = admin("user", "add", "gina", "--access-key", gak, "--secret-key", gsk)
    expect(r.returncode == 0, "iolake-admin user add gina: %s" % r.stderr.strip())
    until(lambda: api.signed("GET", "/api/v1/cluster", ak=gak, sk=gsk)[0] == 403,
          "the new key is known to the API (a non-admin: 403)")
    expect(admin("user", "admin", "gina", "on").returncode == 0, "iolake-admin user admin gina on")
    until(lambda: api.signed("GET", "/api/v1/cluster", ak=gak, sk=gsk)[0] == 200,
          "made an admin through meta: 200")
    expect(admin("user", "rm", "gina").returncode == 0, "iolake-admin user rm gina")
    until(lambda: api.signed("GET", "/api/v1/cluster", ak=gak, sk=gsk)[0] == 401,
          "removed through meta: 401")

    # --- bad requests
    for body, code in (('{"name": "dave"', "MalformedJSON"), ("[1,2]", "InvalidRequest"),
                       ('{"name": "dave", "nmae": 1}', "InvalidRequest"),
                       ('{"name": "bad/name"}', "InvalidRequest"),
                       ('{"name": "dave", "access_key": "AKIAONLYKEY000000001"}', "InvalidRequest"),
                       ('{"name": "dave", "name": "erin"}', "MalformedJSON")):
        st, doc = api.signed("POST", "/api/v1/users", body=body)
        expect(st == 400 and is_error(doc, code), "bad body %r: 400 %s" % (body, code))
    st, doc = api.signed("POST", "/api/v1/users", body='{"name": "%s"}' % ("x" * 20000))
    expect(st == 413 and is_error(doc, "EntityTooLarge"), "a 20 KB body: 413")
    st, doc = api.signed("GET", "/api/v1/nothing")
    expect(st == 404 and is_error(doc, "NotFound"), "unknown resource: 404")
    st, doc = api.signed("DELETE", "/api/v1/osds")
    expect(st == 405 and is_error(doc), "wrong method: 405")
    st, doc = api.signed("POST", "/api/v1/osds/abc/out")
    expect(st == 400 and is_error(doc), "bad OSD id: 400")
    st, doc = api.signed("POST", "/api/v1/osds/77/out")
    expect(st == 404 and is_error(doc, "NotFound"), "osd out of an unknown OSD: 404")

    # --- login: cookie and bearer token
    st, lg, hdr = api.plain("POST", "/api/v1/login",
                            json.dumps({"access_key": ak, "secret_key": sk}))
    cookie = hdr.get("Set-Cookie", "")
    expect(st == 200 and lg["user"] == "root" and lg["token"] and
           "HttpOnly" in cookie and cookie.startswith("iolake_session=" + lg["token"]),
           "POST /api/v1/login: token, HttpOnly cookie")
    st, doc, _ = api.plain("POST", "/api/v1/login", json.dumps({"access_key": ak, "secret_key": "x" * 40}))
    expect(st == 401 and is_error(doc, "InvalidCredentials"), "login with a wrong secret: 401")
    bearer = {"Authorization": "Bearer " + lg["token"]}
    st, doc, _ = api.plain("GET", "/api/v1/osds", headers=bearer)
    expect(st == 200 and len(doc["osds"]) == 6, "Bearer token: GET /api/v1/osds")
    bad = lg["token"][:-1] + ("0" if lg["token"][-1] != "0" else "1")
    st, doc, _ = api.plain("GET", "/api/v1/osds", headers={"Authorization": "Bearer " + bad})
    expect(st == 401 and is_error(doc, "InvalidToken"), "altered token: 401")
    ck = {"Cookie": "iolake_session=" + lg["token"]}
    st, doc, _ = api.plain("GET", "/api/v1/users", headers=ck)
    expect(st == 200, "session cookie: GET /api/v1/users")
    st, doc, _ = api.plain("POST", "/api/v1/users", '{"name": "erin"}', headers=ck)
    expect(st == 403 and is_error(doc, "AccessDenied"),
           "a change by cookie without X-IOLake-Console: 403")
    st, doc, _ = api.plain("POST", "/api/v1/users", '{"name": "erin"}',
                           headers=dict(ck, **{"X-IOLake-Console": "1"}))
    expect(st == 201 and doc["user"] == "erin", "a change by cookie with X-IOLake-Console: 201")

    # --- osd out / in through the API
    st, doc = api.signed("POST", "/api/v1/osds/2/out")
    expect(st == 200 and doc["osd"] == 2 and doc["admin_out"] and not doc["in"],
           "POST /api/v1/osds/2/out")
    r = admin("osd", "ls")
    expect(re.search(r"^2 .* out\(admin\)", r.stdout, re.M) is not None,
           "iolake-admin osd ls shows osd 2 out(admin)")
    st, osds = api.signed("GET", "/api/v1/osds")
    expect([o["state"] for o in osds["osds"] if o["id"] == 2] == ["up+out"], "osds: 2 is up+out")

    def pgs_moved():
        st, d = api.signed("GET", "/api/v1/pgs")
        return d if st == 200 and d["states"].get("active+clean", 0) < 256 else None
    d = wait_for(pgs_moved, "GET /api/v1/pgs: PGs leave active+clean once osd 2 is out", 30)
    print("pg states with osd 2 out:", d["states"])
    expect(all(2 not in p["osds"] for p in d["pgs"]), "pgs: no PG has osd 2 in its set")
    st, doc = api.signed("POST", "/api/v1/osds/2/in")
    expect(st == 200 and doc["in"] and not doc["admin_out"], "POST /api/v1/osds/2/in")
    r = admin("osd", "ls")
    expect(re.search(r"^2 .* up +in", r.stdout, re.M) is not None, "iolake-admin osd ls: osd 2 in")

    def pgs_clean():
        st, d = api.signed("GET", "/api/v1/pgs")
        return d if st == 200 and d["states"] == {"active+clean": 256} else None
    wait_for(pgs_clean, "pgs: all 256 active+clean again after osd in", 90)

    # --- delete the user: its key stops working for S3
    st, doc = api.signed("DELETE", "/api/v1/users/carol")
    expect(st == 200 and doc["deleted"] == "carol", "DELETE /api/v1/users/carol")
    try:
        c.list_buckets()
        raise AssertionError("carol's key still works after DELETE")
    except ClientError as e:
        expect(e.response["Error"]["Code"] == "InvalidAccessKeyId",
               "carol's key is refused by S3 after DELETE")
    st, doc = api.signed("DELETE", "/api/v1/users/carol")
    expect(st == 404 and is_error(doc, "NotFound"), "DELETE again: 404")
    st, doc = api.signed("DELETE", "/api/v1/users/root")
    expect(st == 409 and is_error(doc), "a user cannot delete itself: 409")

    # --- the console's page (test_console.py drives it in a browser)
    st, page, hdr = api.plain("GET", "/console/")
    expect(st == 200 and "text/html" in hdr.get("Content-Type", "") and
           'src="app.js"' in page and "script-src 'self'" in hdr.get("Content-Security-Policy", ""),
           "GET /console/: the console's page, its script from app.js, a CSP")

    # --- iolake-gw --admin-api-listen, against aio's meta admin address: the
    # API works from another process; aio's OSDs are in-process only
    # ("local:osd-N"), so their space is unknown there, and said so.
    gport = free_port()
    gw = subprocess.Popen([os.path.join(BUILD, "iolake-gw"), "--s3-listen", "127.0.0.1:0",
                           "--meta", info["meta_admin"],
                           "--admin-api-listen", "127.0.0.1:%d" % gport,
                           # aio's cluster key: the secrets meta holds are sealed
                           "--secret-key-file", os.path.join(data, "secret.key")],
                          stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "gw.err"), "w"))
    procs.append(gw)
    gapi = Api("http://127.0.0.1:%d" % gport, ak, sk)

    def gw_up():
        try:
            st, d = gapi.signed("GET", "/api/v1/cluster")
        except ValueError:
            return None
        return d if st == 200 else None
    d = wait_for(gw_up, "iolake-gw --admin-api-listen: GET /api/v1/cluster", 30)
    expect(d["health"] == "ok" and d["osds"]["up"] == 6, "gw's admin API: health ok, 6 OSDs up")
    st, d = gapi.signed("GET", "/api/v1/osds")
    expect(st == 200 and len(d["osds"]) == 6 and
           all(o["space"] is None and o["space_error"] for o in d["osds"]),
           "gw's admin API: OSDs it cannot reach have space null and a space_error")
    gw.send_signal(signal.SIGTERM)
    expect(gw.wait(timeout=20) == 0, "iolake-gw with the admin API stops cleanly on SIGTERM")

    # --- clean stop removes aio.json
    p.send_signal(signal.SIGTERM)
    expect(p.wait(timeout=20) == 0, "SIGTERM: aio exits 0")
    expect(not os.path.exists(os.path.join(data, "aio.json")), "clean stop removes aio.json")
    r = admin("cluster", "status")
    expect(r.returncode == 2 and "aio.json does not exist" in r.stderr,
           "iolake-admin --data-dir after a clean stop: exit 2, 'does not exist'")

    # --- defaults: S3 port + 1 and + 2 (an explicit port that is taken is an error)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    r = subprocess.run([AIO, "--data-dir", data, "--osd-size", "256M", "--s3-listen",
                        "127.0.0.1:%d" % free_port(), "--admin-api-listen",
                        "127.0.0.1:%d" % busy.getsockname()[1]],
                       capture_output=True, text=True, timeout=60)
    busy.close()
    if r.returncode != 1 or "--admin-api-listen" not in r.stderr:
        print("exit", r.returncode, r.stderr[-3000:])
    expect(r.returncode == 1 and "--admin-api-listen" in r.stderr and
           not os.path.exists(os.path.join(data, "aio.json")),
           "--admin-api-listen on a taken port: exit 1 naming the flag, no aio.json")
    for _ in range(50):
        s3p = free_port()
        if s3p < 65000 and port_free(s3p + 1) and port_free(s3p + 2):
            break
    p, text = start(["--s3-listen", "127.0.0.1:%d" % s3p])
    info = json.load(open(os.path.join(data, "aio.json")))
    expect(info["meta_admin"] == "127.0.0.1:%d" % (s3p + 1) and
           info["admin_api"] == "http://127.0.0.1:%d/api/v1/" % (s3p + 2),
           "no admin flags: meta admin on S3 port + 1, admin API on + 2")
    r = admin("osd", "ls")
    expect(r.returncode == 0, "iolake-admin --data-dir finds the restarted aio")
    p.send_signal(signal.SIGTERM)
    expect(p.wait(timeout=20) == 0, "SIGTERM again: exit 0")

    # --- a default port that is taken: a free one instead, with a warning
    for _ in range(50):
        s3p = free_port()
        if s3p < 65000 and port_free(s3p + 1) and port_free(s3p + 2):
            break
    squats = []
    for off in (1, 2):
        q = socket.socket()
        q.bind(("127.0.0.1", s3p + off))
        q.listen(1)
        squats.append(q)
    p, text = start(["--s3-listen", "127.0.0.1:%d" % s3p])
    for q in squats:
        q.close()
    info = json.load(open(os.path.join(data, "aio.json")))
    url = banner_value(text, "admin API")
    madm = banner_value(text, "meta admin")
    expect(madm == info["meta_admin"] and madm != "127.0.0.1:%d" % (s3p + 1) and
           url == info["admin_api"] and url != "http://127.0.0.1:%d/api/v1/" % (s3p + 2),
           "S3 port + 1 and + 2 taken: meta admin and admin API took other ports, "
           "banner and aio.json say which")
    log = open(os.path.join(tmp, "aio.err")).read()
    expect("default admin address is taken" in log and
           "default admin API address is taken" in log, "... and aio logged warnings")
    r = admin("cluster", "status")
    expect(r.returncode == 0 and madm in r.stdout, "iolake-admin follows aio.json to meta's port")
    r = admin("api", "GET", "cluster")
    expect(r.returncode == 0, "iolake-admin api follows aio.json to the API's port")

    # --- kill -9: aio.json stays, stale
    p.send_signal(signal.SIGKILL)
    p.wait()
    expect(os.path.exists(os.path.join(data, "aio.json")), "kill -9 leaves aio.json behind")
    r = admin("cluster", "status")
    print(r.stderr)
    expect(r.returncode == 2 and "stale" in r.stderr and str(p.pid) in r.stderr,
           "iolake-admin --data-dir with a stale aio.json: exit 2, says stale and the pid")
    print("PASS test_admin_api")


try:
    main()
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    if os.environ.get("KEEP"):
        print("kept", tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
