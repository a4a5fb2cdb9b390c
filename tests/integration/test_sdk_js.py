#!/usr/bin/env python3
"""test_sdk_js.py — the AWS SDK for JavaScript v3 against iolake-aio.

@aws-sdk/client-s3, pinned in tests/sdk-js/package-lock.json, is installed
with `npm ci` into $IOLAKE_BUILD/sdk-js (once; later runs reuse it) and
runs tests/sdk-js/sdk_test.mjs under Debian's node: multipart uploads with
per-part checksums, CRC64NVME and CRC32 full-object checksums (checked by
the store at Complete and by the SDK itself on GetObject with ChecksumMode
ENABLED, which must also refuse a spoiled value), a SHA256 composite one,
GetObject with PartNumber, HeadObject, GetObjectAttributes with
ObjectParts; SSE-C (PutObject, GetObject with a range, HeadObject,
multipart; no key 400, another key 403)."""
import os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))


def npm_ci():
    """@aws-sdk/client-s3, as pinned, into the build directory."""
    dst = os.path.join(os.path.abspath(BUILD), "sdk-js")
    os.makedirs(dst, exist_ok=True)
    lock = os.path.join(TOP, "tests/sdk-js/package-lock.json")
    stamp = os.path.join(dst, "node_modules/.iolake-lock")
    want = open(lock, "rb").read()
    for f in ("package.json", "package-lock.json", "sdk_test.mjs"):
        shutil.copy(os.path.join(TOP, "tests/sdk-js", f), dst)
    if not (os.path.exists(stamp) and open(stamp, "rb").read() == want):
        subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=dst, check=True, timeout=600)
        with open(stamp, "wb") as f:
            f.write(want)
    return dst


def main():
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            sys.exit("FAIL: %s not found (scripts/deps.sh installs nodejs and npm)" % tool)
    print("node", subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip())
    d = npm_ci()
    aio = Aio(osd_size="512M")
    aio.start()
    try:
        env = dict(os.environ, IOLAKE_EP=aio.ep, IOLAKE_AK=AK, IOLAKE_SK=SK)
        # no proxy, no stray AWS settings from the caller
        for k in list(env):
            if k.startswith("AWS_") or k.lower().endswith("_proxy"):
                del env[k]
        r = subprocess.run(["node", os.path.join(d, "sdk_test.mjs")], cwd=d, env=env, timeout=600)
        if r.returncode != 0:
            sys.exit("FAIL: sdk_test.mjs exited %d (aio log %s)" % (r.returncode, aio.log.name))
        print("PASS test_sdk_js")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
