#!/usr/bin/env python3
"""disk_full.py — what iolake-aio does when its file system fills (docs/
architecture.md, aio "Deviations and gaps"; docs/operations.md, "A full
disk"). Root: mounts a tmpfs of --size at --mnt, starts a fresh aio with
its data there (six --osd-size sparse OSD files, larger than the file
system), PUTs 4 KiB and 256 KiB objects until a PUT fails, then reports:
PUTs acknowledged, whether aio still runs (its exit status), whether it
restarts on the full file system, and, with the file system grown to
--grow, whether every acknowledged object reads back byte for byte and
DELETEs and new PUTs work. Figures only; nothing asserts.

    bench/disk_full.py [--build DIR] [--size 1200M] [--grow 2G] [--osd-size 1G]
"""
import argparse, hashlib, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--mnt", default="/mnt/iolake-full")
    ap.add_argument("--size", default="1200M")
    ap.add_argument("--grow", default="2G")
    ap.add_argument("--osd-size", default="1G")
    a = ap.parse_args()
    os.environ["IOLAKE_BUILD"] = os.path.abspath(a.build)
    from aio_py import Aio   # reads IOLAKE_BUILD
    os.makedirs(a.mnt, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + a.size, "tmpfs", a.mnt], check=True)
    aio = Aio(osd_size=a.osd_size)
    aio.data = os.path.join(a.mnt, "data")
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="full")
        acked, i, err = {}, 0, None
        while err is None:
            body = os.urandom(256 << 10 if i % 2 else 4096)
            try:
                s3.put_object(Bucket="full", Key="k%05d" % i, Body=body)
                acked["k%05d" % i] = hashlib.md5(body).hexdigest()
            except Exception as e:
                err = str(e)[:120]
            i += 1
        print("PUTs acknowledged: %d; first failure: %s" % (len(acked), err))
        print(subprocess.run(["df", "-h", a.mnt], capture_output=True, text=True).stdout)
        print("aio running: %s (exit status %s)" % (aio.proc.poll() is None, aio.proc.poll()))
        if aio.proc.poll() is not None:
            try:
                aio.start(timeout=60)
                print("restart on the full file system: started")
            except Exception:
                errs = [ln for ln in aio.log_tail(60).splitlines() if "level=error" in ln]
                print("restart on the full file system: failed (%s)"
                      % (errs[-1][:200] if errs else "no error line"))
                subprocess.run(["mount", "-o", "remount,size=" + a.grow, a.mnt], check=True)
                aio.start(timeout=60)
                print("restart with the file system grown to %s: started" % a.grow)
        s3 = aio.client()
        bad = [k for k, h in acked.items()
               if hashlib.md5(s3.get_object(Bucket="full", Key=k)["Body"].read()).hexdigest() != h]
        print("acknowledged objects that do not read back: %d of %d" % (len(bad), len(acked)))
        for k in list(acked)[::2]:
            s3.delete_object(Bucket="full", Key=k)
        ok = sum(1 for j in range(50) if s3.put_object(Bucket="full", Key="after%d" % j,
                                                       Body=os.urandom(4096)))
        print("after deleting half: %d of 50 new PUTs acknowledged" % ok)
    finally:
        aio.close()
        subprocess.run(["umount", a.mnt])


if __name__ == "__main__":
    main()
