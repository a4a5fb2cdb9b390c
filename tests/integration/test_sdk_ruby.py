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
from aio_py import run_programs  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))


def main():
    if not shutil.which("ruby") or subprocess.run(["ruby", "-e", "require 'aws-sdk-s3'"],
                                                  capture_output=True).returncode:
        print("SKIP test_sdk_ruby: ruby or aws-sdk-s3 missing "
              "(scripts/deps.sh installs ruby-aws-sdk-s3)")
        return
    run_programs("test_sdk_ruby", [["ruby", os.path.join(TOP, "tests/sdk-ruby/sdk_test.rb")]])


if __name__ == "__main__":
    main()
