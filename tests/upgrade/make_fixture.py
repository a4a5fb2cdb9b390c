#!/usr/bin/python3
"""make_fixture.py — an upgrade fixture: the data dir of an iolake-aio of
an older build holding tests/upgrade/dataset.py's objects, with its
manifest, as one tar.xz (tests/integration/test_upgrade.py opens it with
the build under test).

    tests/upgrade/make_fixture.py --build OLD_BUILD --commit HASH --out FILE
                                  [--flags "--range-groups 4"] [--kill]

OLD_BUILD holds that commit's iolake-aio and iolake-admin (`git worktree
add DIR HASH && make -C DIR build/iolake-aio build/iolake-admin`). The
aio runs with aio_py's defaults (256 MiB OSD files, /dev/shm) and small
multipart parts allowed (--debug-min-part-size 1), and it is
stopped with SIGTERM before its dir is packed; the OSD files stay sparse
in the archive. --flags: more aio flags, kept in the manifest
(aio_args): the test starts the new build with them too. --kill: after
the data set, eight writers PUT objects under inflight/ and the aio is
killed (SIGKILL) while they do; the manifest lists what was acknowledged
(`acked`) and what was attempted (`attempted`): the new build must
recover the old one's unclean logs.
"""
import argparse, json, os, signal, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))


def kill_under_writes(aio, dataset, writers=8, secs=0.6):
    """PUTs of inflight/W-N (sizes cycling 777 B .. 120 KB: inline and
    erasure-coded) from `writers` threads; SIGKILL after secs. Returns
    {"acked": [[key, size]...], "attempted": [[key, size]...]}."""
    acked, attempted, lock = [], [], threading.Lock()
    stop = threading.Event()
    sizes = [1024, 4096, 20000, 120000, 777]

    def writer(w):
        s3 = aio.client()
        n = 0
        while not stop.is_set():
            key, size = "inflight/%d-%05d" % (w, n), sizes[(w + n) % len(sizes)]
            with lock:
                attempted.append([key, size])
            try:
                s3.put_object(Bucket="plain", Key=key, Body=dataset.body(key, size))
            except Exception:
                return   # the aio is gone
            with lock:
                acked.append([key, size])
            n += 1
    ts = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in ts:
        t.start()
    time.sleep(secs)
    with lock:   # no PUT answered after this point counts as acknowledged
        aio.proc.send_signal(signal.SIGKILL)
        aio.proc.wait()
        stop.set()
        got = list(acked)
    for t in ts:
        t.join()
    if len(got) < 50:
        raise SystemExit("only %d PUTs acknowledged before the kill" % len(got))
    return {"acked": got, "attempted": attempted}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--flags", default="")
    ap.add_argument("--kill", action="store_true")
    a = ap.parse_args()
    os.environ["IOLAKE_BUILD"] = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(HERE, "..", "integration"))
    sys.path.insert(0, HERE)
    import aio_py  # noqa: E402  (reads IOLAKE_BUILD)
    import dataset  # noqa: E402
    os.environ.pop("IOLAKE_AIO_EXTRA_ARGS", None)
    flags = a.flags.split()
    aio = aio_py.Aio(args=["--debug-min-part-size", "1"] + flags)   # dataset.PART
    try:
        aio.start()
        ak, sk = aio.add_user("alice")
        m = dataset.write(aio.client(), "alice")
        m.update(made_by=a.commit, osd_size=aio.osd_size, aio_args=flags,
                 root=[aio_py.AK, aio_py.SK],
                 alice_keys=[ak, sk])
        if a.kill:
            m.update(kill_under_writes(aio, dataset))
        else:
            rc, _ = aio.stop(limit=15)
            if rc:
                raise SystemExit("iolake-aio exited %d on SIGTERM:\n%s" % (rc, aio.log_tail()))
        with open(os.path.join(aio.tmp, "manifest.json"), "w") as f:
            json.dump(m, f, indent=1, sort_keys=True)
        subprocess.run(["tar", "-C", aio.tmp, "--sparse", "-cJf", os.path.abspath(a.out),
                        "data", "manifest.json"], check=True)
        print("%s: %d bytes" % (a.out, os.path.getsize(a.out)))
    finally:
        aio.close()


if __name__ == "__main__":
    main()
