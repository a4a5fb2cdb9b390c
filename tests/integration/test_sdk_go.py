#!/usr/bin/python3
"""test_sdk_go.py — the AWS SDK for Go v2 against iolake-aio.

tests/sdk-go/main.go is built offline against Debian's
golang-github-aws-aws-sdk-go-v2-dev (GOPATH mode, GOPROXY=off, the build
cache in $IOLAKE_BUILD/sdk-go) and run against a fresh aio: PutObject with
metadata and a CRC32 flexible checksum, GetObject validating it
(ChecksumMode ENABLED), ranges, the SDK's NoSuchKey type and HeadObject's
NotFound, the transfer manager's multipart upload (21 MiB in 5 MiB parts,
3 at a time) and parallel ranged download, CopyObject of the multipart
object, ListObjectsV2Paginator over 1,100 keys, DeleteObjects of 1,000,
versioning, a presigned GET with net/http, a wrong key's
SignatureDoesNotMatch, BucketAlreadyOwnedByYou.
SKIP (exit 0 with a line) without go or the SDK's sources."""
import os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
GOPATH_DEB = "/usr/share/gocode"
SDK = os.path.join(GOPATH_DEB, "src/github.com/aws/aws-sdk-go-v2/service/s3")


def build():
    """The test program, built where make's outputs go."""
    d = os.path.join(os.path.abspath(BUILD), "sdk-go")
    src = os.path.join(d, "src", "sdkgo")
    os.makedirs(src, exist_ok=True)
    shutil.copy(os.path.join(TOP, "tests/sdk-go/main.go"), src)
    exe = os.path.join(d, "sdk-go")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
    env.update(GO111MODULE="off", GOPATH=d + ":" + GOPATH_DEB, GOPROXY="off",
               GOCACHE=os.path.join(d, "cache"), GOFLAGS="")
    subprocess.run(["go", "build", "-o", exe, "."], cwd=src, env=env, check=True, timeout=900)
    return exe


def main():
    if not shutil.which("go") or not os.path.isdir(SDK):
        print("SKIP test_sdk_go: go or the AWS SDK for Go v2 missing (scripts/deps.sh installs "
              "golang-go and golang-github-aws-aws-sdk-go-v2-dev)")
        return
    exe = build()
    aio = Aio(osd_size="512M")
    aio.start()
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_") and not k.lower().endswith("_proxy")}
        env.update(IOLAKE_EP=aio.ep, IOLAKE_AK=AK, IOLAKE_SK=SK)
        r = subprocess.run([exe], env=env, timeout=600)
        if r.returncode != 0:
            sys.exit("FAIL: the Go SDK program exited %d (aio log %s)" % (r.returncode, aio.log.name))
        rc, _ = aio.stop(limit=15)
        if rc != 0:
            sys.exit("FAIL: iolake-aio exited %d on SIGTERM" % rc)
        print("PASS test_sdk_go")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
