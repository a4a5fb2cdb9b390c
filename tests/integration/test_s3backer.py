#!/usr/bin/python3
"""test_s3backer.py — s3backer (Debian's 1.5.4: a FUSE block device whose
blocks are objects, on libcurl with a SigV4 signer of its own) on
iolake-aio, unchanged, with an ext4 filesystem on it:

- `s3backer --listBlocks` mounts a 64 MiB device of 64 KiB blocks from
  an empty bucket; mkfs.ext4 on it, mounted through a loop device;
- a tree of files (one of 5 MiB, 40 small ones), unmounted: s3backer
  writes its cached blocks back, one object per non-zero block;
- mounted again (block size and size auto-detected from the bucket,
  non-zero blocks listed): `fsck.ext4 -n -f` finds nothing, every file
  reads back byte for byte;
- a file deleted and another written, unmounted and mounted again: the
  same holds;
- a wrong secret key: s3backer refuses to mount.
Cleans up its mounts and the loop devices it used by their backing
file. SKIP (exit 0 with a line) when s3backer, /dev/fuse or loop
devices are missing.
"""
import os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, keys_of, run_with_aio  # noqa: E402

checks = Checks()
expect = checks.expect
BUCKET = "s3backer"


def sh(*argv, ok=True):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    if ok and r.returncode:
        raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(argv), r.returncode,
                                                    r.stdout[-2000:], r.stderr[-2000:]))
    return r


class Device:
    """s3backer's device file at DIR/dev/file, ext4 on it at DIR/fs."""

    def __init__(self, aio, sk=SK, keys="keys"):
        self.dev = os.path.join(aio.tmp, "dev")
        self.fs = os.path.join(aio.tmp, "fs")
        for d in (self.dev, self.fs):
            os.makedirs(d, exist_ok=True)
        self.keys = os.path.join(aio.tmp, keys)
        with open(self.keys, "w") as f:
            f.write("%s:%s\n" % (AK, sk))
        os.chmod(self.keys, 0o600)
        self.base = ["s3backer", "--accessFile=" + self.keys, "--baseURL=%s/" % aio.ep,
                     "--listBlocks", "--blockSize=64K"]
        self.file = os.path.join(self.dev, "file")

    def attach(self, first=False, ok=True):
        # The first mount names the size; later ones find it in the bucket.
        argv = self.base + (["--size=64M"] if first else []) + [BUCKET, self.dev]
        r = sh(*argv, ok=ok)
        if r.returncode == 0:
            for _ in range(100):   # the FUSE mount is up once its file is
                if os.path.exists(self.file):
                    break
                time.sleep(0.05)
        return r

    def mount(self):
        sh("mount", "-o", "loop", self.file, self.fs)

    def unmount_all(self):
        """ext4, its loop device, then s3backer (which writes its cache back
        before it exits)."""
        if os.path.ismount(self.fs):
            sh("umount", self.fs, ok=False)
        for line in sh("losetup", "-j", self.file, ok=False).stdout.splitlines():
            sh("losetup", "-d", line.split(":")[0], ok=False)
        if os.path.ismount(self.dev):
            sh("fusermount3", "-u", self.dev, ok=False)
            for _ in range(200):   # s3backer's write-back, then its exit
                if sh("pgrep", "-f", "s3backer.*" + self.dev, ok=False).returncode:
                    break
                time.sleep(0.05)


def read_tree(root):
    out = {}
    for dp, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dp, f)
            if "lost+found" not in p:
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
    return out


def check_mounted(dev, want, what):
    dev.attach()
    r = sh("fsck.ext4", "-n", "-f", dev.file, ok=False)
    expect(r.returncode, 0, "%s: fsck.ext4 -n -f finds nothing" % what)
    dev.mount()
    expect(read_tree(dev.fs) == want, True, "%s: every file reads back byte for byte" % what)


def run(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket=BUCKET)
    dev = Device(aio)
    try:
        dev.attach(first=True)
        sh("mkfs.ext4", "-q", "-F", dev.file)
        dev.mount()
        want = {"big": os.urandom(5 << 20)}
        os.makedirs(os.path.join(dev.fs, "d"))
        for i in range(40):
            want["d/f%02d" % i] = os.urandom(i * 997)
        for name, data in want.items():
            with open(os.path.join(dev.fs, name), "wb") as f:
                f.write(data)
        dev.unmount_all()
        keys = keys_of(s3, BUCKET)
        expect(90 <= len(keys) <= 1024, True, "one object per non-zero 64 KiB block (%d)" % len(keys))

        check_mounted(dev, want, "mounted again")
        os.unlink(os.path.join(dev.fs, "d/f07"))
        del want["d/f07"]
        want["d/new"] = os.urandom(300000)
        with open(os.path.join(dev.fs, "d/new"), "wb") as f:
            f.write(want["d/new"])
        dev.unmount_all()
        check_mounted(dev, want, "after a delete and a write")
        dev.unmount_all()

        bad = Device(aio, sk=SK[:-1] + "x", keys="bad-keys")
        r = bad.attach(ok=False)
        expect(r.returncode != 0 and not os.path.ismount(bad.dev), True,
               "a wrong secret key: s3backer does not mount")
        bad.unmount_all()
    finally:
        dev.unmount_all()


if __name__ == "__main__":
    why = None
    if not shutil.which("s3backer"):
        why = "s3backer not installed (scripts/deps.sh installs it)"
    elif not os.path.exists("/dev/fuse"):
        why = "no /dev/fuse"
    elif not os.path.exists("/dev/loop-control"):
        why = "no loop devices (/dev/loop-control)"
    if why:
        print("SKIP test_s3backer: " + why)
        sys.exit(0)
    run_with_aio(run, checks)
