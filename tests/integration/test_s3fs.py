#!/usr/bin/python3
"""test_s3fs.py — a bucket of iolake-aio mounted with s3fs-fuse (Debian's),
used as a file system by ordinary tools, then mounted again to read it
back: what an application that only knows files sees.

s3fs turns file operations into S3 calls IOLake must answer as S3 does:
- writes of new files, a 20 MiB one in multipart uploads;
- mkdir (a `dir/` marker object), rename of a file and of a directory
  (CopyObject of each object, then DeleteObject);
- an append, a 7-byte write into the middle of the 20 MiB file (uploaded
  again, in parts), a rewrite through O_TRUNC;
- chmod and a symlink (CopyObject onto itself with new x-amz-meta-* under
  the REPLACE directive; the link's target as the object's body);
- rm -r.
Every file read back after a remount equals what was written locally;
the objects boto3 lists are the file system's.
SKIP (exit 0 with a line) without s3fs or /dev/fuse.
"""
import hashlib, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, run_with_aio  # noqa: E402

checks = Checks()
expect = checks.expect
BUCKET = "s3fs-bucket"


class Mount:
    """s3fs BUCKET on dir, in the foreground as a child (so it is ended by
    PID); unmounted with fusermount -u, else killed."""

    def __init__(self, aio, tmp, mnt):
        self.mnt = mnt
        self.pw = os.path.join(tmp, "passwd")
        with open(self.pw, "w") as f:
            f.write("%s:%s\n" % (AK, SK))
        os.chmod(self.pw, 0o600)
        self.log = open(os.path.join(tmp, "s3fs.log"), "ab")
        self.proc = subprocess.Popen(
            ["s3fs", BUCKET, mnt, "-f", "-o", "passwd_file=" + self.pw, "-o", "url=" + aio.ep,
             "-o", "use_path_request_style", "-o", "endpoint=us-east-1",
             "-o", "dbglevel=warn", "-o", "retries=1", "-o", "stat_cache_expire=1"],
            stdout=self.log, stderr=self.log)
        end = time.time() + 30
        while not os.path.ismount(mnt):
            if self.proc.poll() is not None or time.time() > end:
                raise RuntimeError("s3fs did not mount; see %s" % self.log.name)
            time.sleep(0.1)

    def close(self):
        subprocess.run(["fusermount", "-u", self.mnt], capture_output=True)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.run(["fusermount", "-uz", self.mnt], capture_output=True)
        self.log.close()


def md5_file(p):
    h = hashlib.md5()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def tree(root):
    """{relative path: md5, or '->target' for a symlink, or '/' for a dir}."""
    d = {}
    for dp, dirs, files in os.walk(root):
        for n in dirs:
            p = os.path.join(dp, n)
            d[os.path.relpath(p, root)] = "->" + os.readlink(p) if os.path.islink(p) else "/"
        for n in files:
            p = os.path.join(dp, n)
            d[os.path.relpath(p, root)] = ("->" + os.readlink(p)) if os.path.islink(p) \
                else md5_file(p)
    return d


def ops(root):
    """The same file operations on root (the mount, or a local twin)."""
    big = os.urandom(20 << 20) if not hasattr(ops, "big") else ops.big
    ops.big = big
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("hello\n")
    os.mkdir(os.path.join(root, "d"))
    with open(os.path.join(root, "d", "y"), "w") as f:
        f.write("y\n")
    with open(os.path.join(root, "d", "big"), "wb") as f:
        f.write(big)
    os.rename(os.path.join(root, "d", "big"), os.path.join(root, "d", "big2"))
    with open(os.path.join(root, "a.txt"), "a") as f:
        f.write("more\n")
    with open(os.path.join(root, "d", "big2"), "r+b") as f:
        f.seek(7_000_000)
        f.write(b"PATCHED")
    os.mkdir(os.path.join(root, "gone"))
    with open(os.path.join(root, "gone", "z"), "w") as f:
        f.write("z\n")
    os.rename(os.path.join(root, "d"), os.path.join(root, "d2"))
    os.chmod(os.path.join(root, "a.txt"), 0o600)
    os.symlink("a.txt", os.path.join(root, "link"))
    # Not truncate(2) to a smaller size: s3fs 1.90 uploads zeros for it
    # without reading the object (s3fs-fuse PR #1919, fixed in 1.91).
    with open(os.path.join(root, "t.txt"), "w") as f:
        f.write("0123456789\n")
    with open(os.path.join(root, "t.txt"), "w") as f:   # O_TRUNC, then a write
        f.write("0123\n")
    shutil.rmtree(os.path.join(root, "gone"))


def run(aio):
    # Scratch files beside the aio's data (its dir goes when it is
    # closed); the mount is undone first, whatever happened.
    tmp = os.path.join(aio.tmp, "s3fs")
    os.mkdir(tmp)
    try:
        body(aio, tmp)
    finally:
        subprocess.run(["fusermount", "-uz", os.path.join(tmp, "mnt")], capture_output=True)


def body(aio, tmp):
    aio.client().create_bucket(Bucket=BUCKET)
    local, mnt = os.path.join(tmp, "local"), os.path.join(tmp, "mnt")
    os.mkdir(local)
    os.mkdir(mnt)
    ops(local)
    want = tree(local)

    m = Mount(aio, tmp, mnt)
    try:
        ops(mnt)
        got = tree(mnt)
        expect({k: v for k, v in got.items() if want.get(k) != v}, {},
               "the operations through s3fs, as on a local file system")
        expect(oct(os.stat(os.path.join(mnt, "a.txt")).st_mode & 0o777), "0o600", "chmod")
    finally:
        m.close()

    m = Mount(aio, tmp, mnt)   # nothing cached: everything from the store
    try:
        got = tree(mnt)
        expect({k: v for k, v in got.items() if want.get(k) != v}, {},
               "after a remount: every file, link and directory")
        expect(sorted(got), sorted(want), "after a remount: the same names")
        with open(os.path.join(mnt, "d2", "big2"), "rb") as f:
            f.seek(7_000_000 - 3)
            expect(f.read(13), ops.big[7_000_000 - 3:7_000_000] + b"PATCHED" +
                   ops.big[7_000_007:7_000_010], "the patched bytes in place")
        expect(oct(os.stat(os.path.join(mnt, "a.txt")).st_mode & 0o777), "0o600",
               "chmod kept in the object's metadata")
    finally:
        m.close()

    keys = sorted(o["Key"] for o in aio.client().list_objects_v2(Bucket=BUCKET)["Contents"])
    expect(keys, ["a.txt", "d2/", "d2/big2", "d2/y", "link", "t.txt"],
           "the bucket holds the file system's objects, the renamed and removed ones gone")


if __name__ == "__main__":
    if not shutil.which("s3fs") or not os.path.exists("/dev/fuse"):
        print("SKIP test_s3fs: s3fs or /dev/fuse missing (scripts/deps.sh installs s3fs)")
        sys.exit(0)
    run_with_aio(run, checks)
