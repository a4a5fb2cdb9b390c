#!/usr/bin/python3
"""test_rclone_crash.py — iolake-aio killed with SIGKILL while rclone copies
a tree into it, then started again on the same data dir and the copy
resumed: what an operator sees when the store's host dies mid-sync.

The tree: 400 small files and six 16 MiB ones (multipart in 5 MiB parts,
8 transfers at a time). The kill comes once rclone has logged files as
copied and a multipart upload is open. After the restart:
- every file rclone logged "Copied" before the kill is in the bucket with
  its bytes (rclone's acknowledgement is the store's: each PUT or
  CompleteMultipartUpload answered 200);
- nothing in the bucket is partial: every object listed has a source
  file's exact bytes (an upload cut off mid-way is not an object);
- `rclone copy` again finishes the job, `rclone check` finds 0
  differences, and `rclone backend cleanup` aborts the multipart uploads
  the kill left open, leaving none.
SKIP (exit 0 with a line) when rclone is not installed.
"""
import hashlib, os, re, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio, Checks  # noqa: E402
from test_rclone import rclone_env  # noqa: E402

checks = Checks()
expect = checks.expect
BUCKET = "rclone-crash"


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def write_tree(src):
    for i in range(400):
        d = os.path.join(src, "s%02d" % (i % 9))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%04d" % i), "wb") as f:
            f.write(os.urandom(1000 + 37 * i))
    os.makedirs(os.path.join(src, "big"))
    for i in range(6):
        with open(os.path.join(src, "big", "b%d" % i), "wb") as f:
            f.write(os.urandom(16 << 20))


def stored(aio):
    """{key: md5 of the object's bytes} of everything the bucket lists."""
    c = aio.client()
    out = {}
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for o in page.get("Contents", []):
            body = c.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            out[o["Key"]] = hashlib.md5(body).hexdigest()
    return out


def main():
    aio = Aio(osd_size="512M")
    tmp = os.path.join(aio.tmp, "rclone")   # goes with the aio's dir
    os.mkdir(tmp)
    try:
        src = os.path.join(tmp, "src")
        write_tree(src)
        want = {os.path.relpath(os.path.join(dp, f), src): md5(os.path.join(dp, f))
                for dp, _, fs in os.walk(src) for f in fs}
        aio.start()
        aio.client().create_bucket(Bucket=BUCKET)
        env = rclone_env(aio, AK, SK)
        log_path = os.path.join(tmp, "rclone.log")
        with open(log_path, "wb") as log:
            r = subprocess.Popen(
                # --bwlimit keeps the large files' uploads open for
                # seconds on any machine: the kill finds one open.
                ["rclone", "copy", src, "iol:" + BUCKET, "-v", "--transfers", "8",
                 "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "--bwlimit", "30M"],
                env=env, stdout=log, stderr=log)
            # The kill: once some files are acknowledged and a multipart
            # upload is open (ListMultipartUploads), else after 60 s.
            c = aio.client()
            end = time.time() + 60
            while time.time() < end and r.poll() is None:
                with open(log_path, errors="replace") as f:
                    copied = re.findall(r"INFO  : (.+): Copied \(new\)$", f.read(), re.M)
                if copied and c.list_multipart_uploads(Bucket=BUCKET).get("Uploads"):
                    break
                time.sleep(0.02)
            # The store's host dies; rclone, which would back off and retry
            # every file left, is stopped too. A "Copied" line in its log
            # came after the store's 200, so before the kill.
            aio.kill9()
            r.kill()
            r.wait()
        with open(log_path, errors="replace") as f:
            acked = re.findall(r"INFO  : (.+): Copied \(new\)$", f.read(), re.M)
        print("rclone logged %d of %d files copied before the kill" % (len(acked), len(want)))
        expect(0 < len(acked) < len(want), True, "the kill came mid-copy")

        aio.start()
        have = stored(aio)
        lost = [k for k in acked if have.get(k) != want[k]]
        expect(lost, [], "every file rclone logged copied is stored, byte for byte")
        partial = [k for k, h in have.items() if want.get(k) != h]
        expect(partial, [], "no object in the bucket is partial or foreign")
        print("%d objects stored after the restart" % len(have))

        r = subprocess.run(["rclone", "copy", src, "iol:" + BUCKET, "--transfers", "8",
                            "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"],
                           env=env, capture_output=True, text=True, timeout=300)
        expect(r.returncode, 0, "rclone copy again finishes")
        r = subprocess.run(["rclone", "check", src, "iol:" + BUCKET], env=env,
                           capture_output=True, text=True, timeout=300)
        expect((r.returncode, "0 differences found" in r.stderr), (0, True), "rclone check")
        open_before = len(aio.client().list_multipart_uploads(Bucket=BUCKET).get("Uploads", []))
        print("multipart uploads the kill left open: %d" % open_before)
        r = subprocess.run(["rclone", "backend", "cleanup", "iol:" + BUCKET, "-o", "max-age=0s"],
                           env=env, capture_output=True, text=True, timeout=120)
        expect(r.returncode, 0, "rclone backend cleanup -o max-age=0s")
        c = aio.client()
        expect(c.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []), [],
               "no multipart upload left open")
        expect(stored(aio) == want, True, "the bucket is the tree")
        rc, _ = aio.stop(limit=15)
        expect(rc, 0, "iolake-aio exits 0 on SIGTERM")
    finally:
        aio.close()
    checks.finish()


if __name__ == "__main__":
    if not shutil.which("rclone"):
        print("SKIP test_rclone_crash: rclone not installed (scripts/deps.sh installs it)")
        sys.exit(0)
    main()
