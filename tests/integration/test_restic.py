#!/usr/bin/python3
"""test_restic.py — restic (Debian's 0.14, on minio-go, the Go S3 SDK MinIO's
own tools use) backing up to iolake-aio and restoring, unchanged: the
repository is `s3:http://127.0.0.1:PORT/BUCKET` and the keys come from
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, as an operator sets them.

- init (restic creates the bucket: minio-go's GetBucketLocation and
  `PUT /bucket/`), two backups of a tree (a 24 MiB file, 150 small ones,
  a changed file between them), `snapshots`;
- `check --read-data`: restic reads back and verifies every pack;
- `restore latest` equal to the tree, file by file;
- `forget --keep-last 1 --prune` (listings, reads, deletes), then
  `check` again and a second restore;
- a wrong secret key: restic fails, and the repository is untouched.
SKIP (exit 0 with a line) when restic is not installed.
"""
import filecmp, json, os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, keys_of, run_with_aio  # noqa: E402

checks = Checks()
expect = checks.expect


def make_restic(aio, sk=SK):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=sk,
               RESTIC_PASSWORD="iolake-test", RESTIC_REPOSITORY="s3:%s/restic-repo" % aio.ep)
    env.pop("AWS_CA_BUNDLE", None)   # Go's TLS would try to load it
    env.pop("AWS_SESSION_TOKEN", None)

    def restic(*args, ok=True, cwd=None):
        r = subprocess.run(["restic", "--no-cache"] + list(args), env=env, capture_output=True,
                           text=True, timeout=300, cwd=cwd)
        if ok and r.returncode:
            raise RuntimeError("restic %s exited %d:\n%s%s" % (" ".join(args), r.returncode,
                                                               r.stdout[-2000:], r.stderr[-2000:]))
        return r
    return restic


def same_tree(a, b):
    """Every file under a is under b with the same bytes, and no more."""
    names_a, names_b = set(), set()
    for root, names in ((a, names_a), (b, names_b)):
        for dp, _, files in os.walk(root):
            names.update(os.path.relpath(os.path.join(dp, f), root) for f in files)
    if names_a != names_b:
        return False
    return all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)
               for n in names_a)


def run(aio):
    # Scratch files beside the aio's data: its dir goes when it is closed.
    tmp = os.path.join(aio.tmp, "restic")
    os.mkdir(tmp)
    restic = make_restic(aio)
    src = os.path.join(tmp, "src")
    os.makedirs(os.path.join(src, "a"))
    with open(os.path.join(src, "big"), "wb") as f:
        f.write(os.urandom(24 << 20))
    for i in range(150):
        with open(os.path.join(src, "a", "f%03d" % i), "wb") as f:
            f.write(os.urandom(i * 101))

    restic("init")
    # Backed up as "src" from tmp: restore writes it as OUT/src.
    restic("backup", "src", cwd=tmp)
    with open(os.path.join(src, "a", "f001"), "wb") as f:
        f.write(b"changed\n")
    restic("backup", "src", cwd=tmp)
    snaps = restic("snapshots", "--json").stdout
    expect(len(json.loads(snaps)), 2, "two snapshots")
    r = restic("check", "--read-data", ok=False)
    expect((r.returncode, "no errors were found" in r.stdout), (0, True),
           "check --read-data: every pack read back and verified")

    out = os.path.join(tmp, "out")
    restic("restore", "latest", "--target", out)
    expect(same_tree(src, os.path.join(out, "src")), True, "restore latest: the tree, byte for byte")

    restic("forget", "--keep-last", "1", "--prune")
    snaps = json.loads(restic("snapshots", "--json").stdout)
    expect(len(snaps), 1, "forget --keep-last 1 --prune leaves one snapshot")
    r = restic("check", "--read-data", ok=False)
    expect((r.returncode, "no errors were found" in r.stdout), (0, True), "check after prune")
    out2 = os.path.join(tmp, "out2")
    restic("restore", "latest", "--target", out2)
    expect(same_tree(src, os.path.join(out2, "src")), True, "restore after prune")

    keys_before = keys_of(aio.client(), "restic-repo")
    bad = make_restic(aio, sk=SK[:-1] + "x")
    r = bad("backup", "src", ok=False, cwd=tmp)
    expect(r.returncode != 0, True, "a wrong secret key: restic fails")
    keys_after = keys_of(aio.client(), "restic-repo")
    expect(keys_after == keys_before and len(keys_before) > 4, True,
           "the repository untouched by it")


if __name__ == "__main__":
    if not shutil.which("restic"):
        print("SKIP test_restic: restic not installed (scripts/deps.sh installs it)")
        sys.exit(0)
    run_with_aio(run, checks)
