#!/usr/bin/python3
"""test_sdk_go.py — the AWS SDKs for Go, v2 and v1, against iolake-aio.

tests/sdk-go/main.go (v2) and tests/sdk-go/v1/main.go (v1) are built
offline against Debian's golang-github-aws-aws-sdk-go-v2-dev and
golang-github-aws-aws-sdk-go-dev (GOPATH mode, GOPROXY=off, the build
cache in $IOLAKE_BUILD/sdk-go) and run against one fresh aio.
v2: PutObject with
metadata and a CRC32 flexible checksum, GetObject validating it
(ChecksumMode ENABLED), ranges, the SDK's NoSuchKey type and HeadObject's
NotFound, the transfer manager's multipart upload (21 MiB in 5 MiB parts,
3 at a time) and parallel ranged download, CopyObject of the multipart
object, ListObjectsV2Paginator over 1,100 keys, DeleteObjects of 1,000,
versioning, a presigned GET with net/http, a wrong key's
SignatureDoesNotMatch, BucketAlreadyOwnedByYou.
v1 (signs every body's SHA-256 over plain HTTP, Expect: 100-continue over
2 MiB): a 3 MiB PutObject, an open range, s3manager's upload in signed
parts and ranged download, ListObjectsPages (v1 listing) over 1,010 keys,
DeleteObjects, a presigned PUT through net/http, NoSuchKey, a wrong key.
SKIP (exit 0 with a line) without go or the SDKs' sources."""
import os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import BUILD, run_programs  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
GOPATH_DEB = "/usr/share/gocode"
SDKS = [os.path.join(GOPATH_DEB, "src/github.com/aws", p, "service/s3")
        for p in ("aws-sdk-go-v2", "aws-sdk-go")]


def build(name, rel):
    """The test program tests/sdk-go/REL/main.go, built where make's
    outputs go."""
    d = os.path.join(os.path.abspath(BUILD), "sdk-go")
    for pkg, f in ((name, os.path.join(rel, "main.go")), ("sdkcheck", "check/check.go")):
        os.makedirs(os.path.join(d, "src", pkg), exist_ok=True)
        shutil.copy(os.path.join(TOP, "tests/sdk-go", f), os.path.join(d, "src", pkg))
    src = os.path.join(d, "src", name)
    exe = os.path.join(d, name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GO")}
    env.update(GO111MODULE="off", GOPATH=d + ":" + GOPATH_DEB, GOPROXY="off",
               GOCACHE=os.path.join(d, "cache"), GOFLAGS="")
    subprocess.run(["go", "build", "-o", exe, "."], cwd=src, env=env, check=True, timeout=900)
    return exe


def main():
    if not shutil.which("go") or not all(os.path.isdir(s) for s in SDKS):
        print("SKIP test_sdk_go: go or the AWS SDKs for Go missing (scripts/deps.sh installs "
              "golang-go, golang-github-aws-aws-sdk-go-v2-dev and -go-dev)")
        return
    run_programs("test_sdk_go", [[build("sdk-go-v2", "")], [build("sdk-go-v1", "v1")]])


if __name__ == "__main__":
    main()
