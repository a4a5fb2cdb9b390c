#!/usr/bin/python3
"""test_sdk_ruby.py — the AWS SDK for Ruby v3 (Debian's ruby-aws-sdk-s3)
against iolake-aio: tests/sdk-ruby/sdk_test.rb puts with metadata and a
CRC32 flexible checksum, gets with the SDK validating it, ranges, the
error codes of a missing key, upload_file (20 MiB in 5 MiB parts on
threads), download_file in parallel ranges, copy_to with multipart_copy
(UploadPartCopy), list_objects_v2 pages over 1,050 keys, delete_objects of
1,000, a presigned GET through Net::HTTP, tagging, versions, a wrong key's
SignatureDoesNotMatch.
SKIP (exit 0 with a line) without ruby or the SDK."""
import os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))


def main():
    if not shutil.which("ruby") or subprocess.run(["ruby", "-e", "require 'aws-sdk-s3'"],
                                                  capture_output=True).returncode:
        print("SKIP test_sdk_ruby: ruby or aws-sdk-s3 missing (scripts/deps.sh installs ruby-aws-sdk-s3)")
        return
    aio = Aio(osd_size="512M")
    aio.start()
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_") and not k.lower().endswith("_proxy")}
        env.update(IOLAKE_EP=aio.ep, IOLAKE_AK=AK, IOLAKE_SK=SK)
        r = subprocess.run(["ruby", os.path.join(TOP, "tests/sdk-ruby/sdk_test.rb")], env=env,
                           timeout=600)
        if r.returncode != 0:
            sys.exit("FAIL: sdk_test.rb exited %d (aio log %s)" % (r.returncode, aio.log.name))
        rc, _ = aio.stop(limit=15)
        if rc != 0:
            sys.exit("FAIL: iolake-aio exited %d on SIGTERM" % rc)
        print("PASS test_sdk_ruby")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
