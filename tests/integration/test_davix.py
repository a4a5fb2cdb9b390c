#!/usr/bin/python3
"""test_davix.py — davix (Debian's 0.8.4: CERN's HTTP/WebDAV/S3 client
library and tools, C++ on its own fork of neon, a SigV4 signer of its
own) against iolake-aio, unchanged: the s3:// scheme with path-style
requests (--s3alternate), the keys and region as options, as the grid
storage tools that use it configure it.

- davix-put of a 3 MiB file and of a small one, davix-get of both byte
  for byte, and a range of the large one through davix-get's
  --header Range (S3's partial GET);
- davix-ls of the bucket (common prefixes as directories) and -l of a
  prefix (sizes as stored);
- davix-mkdir (an empty "dir/" object, S3's folder) and davix-rm of an
  object, both seen by boto3;
- a wrong secret key: davix-get fails and nothing is written by its put.
SKIP (exit 0 with a line) when davix is not installed.
"""
import os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, keys_of, run_with_aio  # noqa: E402

checks = Checks()
expect = checks.expect
BUCKET = "davix"


def davix(aio, tool, *args, sk=SK, ok=True):
    argv = [tool, "--s3accesskey", AK, "--s3secretkey", sk, "--s3region", "us-east-1",
            "--s3alternate"] + list(args)
    r = subprocess.run(argv, capture_output=True, timeout=120)
    if ok and r.returncode:
        raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(argv[:1] + list(args)), r.returncode,
                                                    r.stdout[-2000:], r.stderr[-2000:]))
    return r


def run(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket=BUCKET)
    url = aio.ep.replace("http://", "s3://") + "/" + BUCKET
    tmp = aio.tmp
    big, small = os.urandom(3 << 20), b"davix small object\n"
    for name, data in (("big", big), ("small", small)):
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(data)
    davix(aio, "davix-put", os.path.join(tmp, "big"), url + "/a/big")
    davix(aio, "davix-put", os.path.join(tmp, "small"), url + "/a/b/small")
    expect(s3.get_object(Bucket=BUCKET, Key="a/big")["Body"].read() == big, True,
           "davix-put: the 3 MiB object stored byte for byte")
    for key, data in (("a/big", big), ("a/b/small", small)):
        out = os.path.join(tmp, "got")
        davix(aio, "davix-get", url + "/" + key, out)
        with open(out, "rb") as f:
            expect(f.read() == data, True, "davix-get %s: byte for byte" % key)
    r = davix(aio, "davix-get", "--header", "Range: bytes=1000-1999", url + "/a/big")
    expect(r.stdout == big[1000:2000], True, "davix-get with a Range header: those bytes")

    r = davix(aio, "davix-ls", url + "/")
    expect(r.stdout.decode().split(), ["a"], "davix-ls of the bucket: the prefix a")
    r = davix(aio, "davix-ls", "-l", url + "/a/")
    rows = {ln.split()[-1]: ln.split() for ln in r.stdout.decode().splitlines() if ln.strip()}
    expect((sorted(rows), str(len(big)) in rows.get("big", [])), (["b", "big"], True),
           "davix-ls -l a/: the object with its size, and the prefix b")

    davix(aio, "davix-mkdir", url + "/newdir")
    keys = keys_of(s3, BUCKET)
    expect("newdir/" in keys, True, "davix-mkdir: the folder object newdir/")
    davix(aio, "davix-rm", url + "/a/b/small")
    keys = keys_of(s3, BUCKET)
    expect(sorted(keys), ["a/big", "newdir/"], "davix-rm: the object gone")

    bad = SK[:-1] + "x"
    r = davix(aio, "davix-get", url + "/a/big", os.path.join(tmp, "bad"), sk=bad, ok=False)
    expect(r.returncode != 0, True, "a wrong secret key: davix-get fails")
    r = davix(aio, "davix-put", os.path.join(tmp, "small"), url + "/bad", sk=bad, ok=False)
    keys = keys_of(s3, BUCKET)
    expect((r.returncode != 0, "bad" in keys), (True, False),
           "a wrong secret key: davix-put fails and stores nothing")


if __name__ == "__main__":
    if not shutil.which("davix-put"):
        print("SKIP test_davix: davix not installed (scripts/deps.sh installs it)")
        sys.exit(0)
    run_with_aio(run, checks)
