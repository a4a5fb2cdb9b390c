#!/usr/bin/python3
"""test_rclone.py — rclone (Debian's) against iolake-aio, unchanged: the
remote is configured only through RCLONE_CONFIG_* variables, provider
Other, path-style, and rclone's defaults otherwise. rclone sends
`x-amz-acl: private` on every bucket create, PUT, copy and multipart
upload, and keeps its own metadata (X-Amz-Meta-Mtime, Md5chksum for
multipart objects), so this is what an operator's first `rclone sync`
does.

- a tree with empty, small, unicode and `space+%` names and a 12 MiB file
  uploaded in 5 MiB parts: `rclone check` (sizes and MD5), `md5sum` equal to
  the local files' (the multipart object's from rclone's metadata);
- a ranged read (`cat --offset --count`), a modification time set with
  `touch` (CopyObject onto itself, metadata REPLACE) and read back;
- a server-side copy in parts (`--s3-copy-cutoff 5M`: UploadPartCopy) and a
  move (copy + delete), byte-for-byte;
- `sync` deleting what the source lost;
- a presigned link (`rclone link`) fetched without rclone, and an upload
  through a presigned PUT (`--s3-use-presigned-request`: Content-Length
  sent twice with one value);
- versioning switched on with `rclone backend versioning`, two versions
  listed with `--s3-versions`, the newest read;
- 1,500 objects at 16 transfers, listed with and without `--fast-list`
  (two pages of ListObjectsV2), `check --download`;
- another user's rclone is refused the bucket (AccessDenied), and a wrong
  secret key fails clearly (SignatureDoesNotMatch) without writing;
- `purge`, and the bucket is gone from `lsd`.
SKIP (exit 0 with a line) when rclone is not installed.
"""
import hashlib, os, shutil, subprocess, sys, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, run_with_aio  # noqa: E402

checks = Checks()
expect = checks.expect


def rclone_env(aio, ak, sk):
    env = dict(os.environ, RCLONE_CONFIG="/dev/null",
               RCLONE_CONFIG_IOL_TYPE="s3", RCLONE_CONFIG_IOL_PROVIDER="Other",
               RCLONE_CONFIG_IOL_ENDPOINT=aio.ep, RCLONE_CONFIG_IOL_REGION="us-east-1",
               RCLONE_CONFIG_IOL_ACCESS_KEY_ID=ak, RCLONE_CONFIG_IOL_SECRET_ACCESS_KEY=sk)
    # rclone's AWS SDK refuses any custom CA bundle with its own HTTP
    # transport; the endpoint is plain HTTP anyway.
    env.pop("AWS_CA_BUNDLE", None)
    return env


def make_rclone(env):
    def rclone(*args, ok=True):
        r = subprocess.run(["rclone"] + list(args), env=env, capture_output=True, text=True,
                           timeout=300)
        if ok and r.returncode:
            raise RuntimeError("rclone %s exited %d:\n%s" % (" ".join(args), r.returncode,
                                                             r.stderr[-3000:]))
        return r
    return rclone


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def md5sums(out):
    """{path: md5} of `rclone md5sum` or `md5sum` lines."""
    d = {}
    for line in out.splitlines():
        h, _, p = line.partition("  ")
        d[p.lstrip("./")] = h
    return d


def local_tree(root):
    d = {}
    for dp, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dp, f)
            d[os.path.relpath(p, root)] = md5(p)
    return d


def write_tree(src):
    os.makedirs(os.path.join(src, "sub", "deep"))
    for i in range(1, 4):
        with open(os.path.join(src, "f%d" % i), "wb") as f:
            f.write(os.urandom(i * 1000 + 7))
    with open(os.path.join(src, "sub", "big"), "wb") as f:
        f.write(os.urandom(12 << 20))
    open(os.path.join(src, "sub", "empty"), "wb").close()
    with open(os.path.join(src, "sub", "deep", "space name+plus%.txt"), "w") as f:
        f.write("hi\n")
    with open(os.path.join(src, "sub", "deep", "ünïcødé.txt"), "w") as f:
        f.write("x\n")


def run(aio):
    # Scratch files beside the aio's data: its dir goes when it is closed.
    tmp = os.path.join(aio.tmp, "rclone")
    os.mkdir(tmp)
    rclone = make_rclone(rclone_env(aio, AK, SK))
    src = os.path.join(tmp, "src")
    write_tree(src)

    rclone("mkdir", "iol:rcl")
    rclone("copy", src, "iol:rcl", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M")
    r = rclone("check", src, "iol:rcl", ok=False)
    expect((r.returncode, "0 differences found" in r.stderr), (0, True), "copy, then check")
    expect(md5sums(rclone("md5sum", "iol:rcl").stdout), local_tree(src),
           "md5sum of every object (the 12 MiB one in three parts)")
    etag = aio.client().head_object(Bucket="rcl", Key="sub/big")["ETag"]
    expect(etag.endswith('-3"'), True, "sub/big went up in 5 MiB parts")

    with open(os.path.join(src, "sub", "big"), "rb") as f:
        f.seek(5000000)
        want = f.read(100000)
    got = subprocess.run(["rclone", "cat", "iol:rcl/sub/big", "--offset", "5000000", "--count",
                          "100000"], env=rclone_env(aio, AK, SK), capture_output=True,
                         timeout=60).stdout
    expect(got == want, True, "cat --offset --count: a ranged GET")

    rclone("touch", "iol:rcl/f1", "-t", "2020-01-02T03:04:05")
    expect(rclone("lsl", "iol:rcl/f1").stdout.split()[1:3], ["2020-01-02", "03:04:05.000000000"],
           "touch sets the modification time (CopyObject, metadata REPLACE)")
    expect(md5sums(rclone("md5sum", "iol:rcl/f1").stdout).get("f1"),
           md5(os.path.join(src, "f1")), "touch keeps the bytes")

    rclone("copyto", "iol:rcl/sub/big", "iol:rcl/copy/big2", "--s3-copy-cutoff", "5M")
    expect(md5sums(rclone("md5sum", "iol:rcl/copy").stdout).get("big2"),
           md5(os.path.join(src, "sub", "big")), "server-side copy in parts (UploadPartCopy)")
    rclone("moveto", "iol:rcl/f2", "iol:rcl/moved/f2")
    listed = set(rclone("lsf", "-R", "--files-only", "iol:rcl").stdout.split("\n")) - {""}
    expect(("moved/f2" in listed, "f2" in listed), (True, False), "moveto: copy, then delete")

    os.remove(os.path.join(src, "f3"))
    with open(os.path.join(src, "f4"), "w") as f:
        f.write("new\n")
    rclone("sync", src, "iol:rcl")
    listed = set(rclone("lsf", "-R", "--files-only", "iol:rcl").stdout.split("\n")) - {""}
    expect(listed, set(local_tree(src)), "sync deletes what the source lost")
    r = rclone("check", src, "iol:rcl", ok=False)
    expect((r.returncode, "0 differences found" in r.stderr), (0, True), "check after sync")

    link = rclone("link", "iol:rcl/f1", "--expire", "1h").stdout.strip()
    with urllib.request.urlopen(link, timeout=10) as resp:
        expect(hashlib.md5(resp.read()).hexdigest(), md5(os.path.join(src, "f1")),
               "rclone link: a presigned GET without rclone")

    # --s3-use-presigned-request: single-part PUTs through presigned URLs,
    # whose request carries Content-Length twice ("Content-Length" from Go,
    # "content-length" signed): one value, taken once (RFC 9112 6.3), as S3.
    rclone("copyto", os.path.join(src, "f1"), "iol:rcl/presigned/f1", "--s3-use-presigned-request")
    expect(md5sums(rclone("md5sum", "iol:rcl/presigned").stdout).get("f1"),
           md5(os.path.join(src, "f1")), "a PUT through a presigned URL (Content-Length twice)")

    expect(rclone("backend", "versioning", "iol:rcl", "Enabled").stdout.strip(), "Enabled",
           "backend versioning Enabled")
    vf = os.path.join(tmp, "vf")
    for v in ("one\n", "two\n"):
        with open(vf, "w") as f:
            f.write(v)
        rclone("copyto", vf, "iol:rcl/v/vf")
    names = sorted(ln.split()[-1] for ln in rclone("ls", "--s3-versions", "iol:rcl/v").stdout
                   .splitlines())
    expect((len(names), names[0]), (2, "vf"), "--s3-versions lists the current and one older")
    expect(rclone("cat", "iol:rcl/v/vf").stdout, "two\n", "the newest version is read")

    many = os.path.join(tmp, "many")
    for i in range(1500):
        d = os.path.join(many, "d%02d" % (i % 7))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "o%05d" % i), "wb") as f:
            f.write(os.urandom(i % 3000))
    rclone("copy", many, "iol:rcl2/m", "--transfers", "16", "--checkers", "16")
    for how in ([], ["--fast-list"]):
        n = len(rclone("lsf", "-R", "--files-only", *how, "iol:rcl2").stdout.splitlines())
        expect(n, 1500, "1,500 objects listed %s" % (" ".join(how) or "by directory"))
    r = rclone("check", many, "iol:rcl2/m", "--download", ok=False)
    expect((r.returncode, "1500 matching files" in r.stderr), (0, True),
           "check --download: every byte")

    bob_ak, bob_sk = aio.add_user("bob")
    bob = make_rclone(rclone_env(aio, bob_ak, bob_sk))
    r = bob("lsf", "iol:rcl", ok=False)
    expect((r.returncode != 0, "AccessDenied" in r.stderr), (True, True),
           "another user's rclone: AccessDenied")
    # --no-check-dest: straight to the PUT, whose refusal has a body (a
    # HEAD's 403 has none: rclone prints "Forbidden", as against AWS).
    r = bob("copyto", vf, "iol:rcl/bobs", "--s3-no-check-bucket", "--no-check-dest",
            "--retries", "1", ok=False)
    expect((r.returncode != 0, "AccessDenied" in r.stderr), (True, True),
           "another user's rclone cannot write")
    bad = make_rclone(rclone_env(aio, AK, SK[:-1] + "x"))
    r = bad("copyto", vf, "iol:rcl/bad", "--s3-no-check-bucket", "--no-check-dest",
            "--retries", "1", ok=False)
    expect((r.returncode != 0, "SignatureDoesNotMatch" in r.stderr), (True, True),
           "a wrong secret key: SignatureDoesNotMatch")
    listed = set(rclone("lsf", "-R", "--files-only", "iol:rcl").stdout.split("\n"))
    expect(("bobs" in listed, "bad" in listed), (False, False), "neither refused write landed")

    rclone("purge", "iol:rcl2")
    buckets = [ln.split()[-1] for ln in rclone("lsd", "iol:").stdout.splitlines()]
    expect(buckets, ["rcl"], "purge removes the bucket")


if __name__ == "__main__":
    if not shutil.which("rclone"):
        print("SKIP test_rclone: rclone not installed (scripts/deps.sh installs it)")
        sys.exit(0)
    run_with_aio(run, checks)
