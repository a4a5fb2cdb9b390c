#!/usr/bin/env python3
"""test_s3_api_doc.py — docs/s3-api.md stays true.

  - every operation of S3_OPS (gateway/s3_req.h) is a row of the page,
    with status yes or unset, and every yes/unset row names one of them;
  - every NotImplemented row's request (`METHOD /BUCKET[/KEY]?QUERY`) is
    sent, SigV4-signed by the root key, to a live iolake-aio with that
    bucket and key present, and answered 501 with code NotImplemented;
  - every unset row's GET is answered as the page says (200, or the 404
    code it names).
"""
import os, re, sys
import xml.etree.ElementTree as ET

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
import urllib.error, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, run_with_aio  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DOC = os.path.join(ROOT, "docs", "s3-api.md")
OPS_H = os.path.join(ROOT, "gateway", "s3_req.h")
CHECKS = Checks()
expect = CHECKS.expect


def s3_ops():
    s = open(OPS_H).read()
    block = s[s.index("#define S3_OPS(X)"):s.index("enum s3_op {")]
    return set(re.findall(r"X\((\w+)\)", block))


def doc_rows():
    rows = {}
    for line in open(DOC):
        m = re.match(r"^\| (\w+) \| (yes|unset|NotImplemented) \|(.*)\|$", line.rstrip("\n"))
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3))
    return rows


def signed(aio, method, path):
    """The answer to METHOD path (with its query), signed with SigV4."""
    url = aio.ep + path
    req = AWSRequest(method=method, url=url, data=b"" if method in ("PUT", "POST") else None,
                     headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(url, data=req.body, method=method, headers=dict(req.headers))
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def code_of(body):
    try:
        return ET.fromstring(body).findtext("Code")
    except ET.ParseError:
        return None


def run(aio):
    ops, rows = s3_ops(), doc_rows()
    expect(sorted(op for op in ops if op not in rows), [], "every S3_OPS operation is a row")
    expect(sorted(n for n, (st, _) in rows.items() if st != "NotImplemented" and n not in ops),
           [], "every yes/unset row is an operation of S3_OPS")
    expect(sorted(n for n, (st, _) in rows.items() if st == "NotImplemented" and n in ops), [],
           "no operation IOLake serves is called NotImplemented")

    s3 = aio.client()
    s3.create_bucket(Bucket="apidoc")
    s3.put_object(Bucket="apidoc", Key="k", Body=b"x")
    for name, (st, notes) in sorted(rows.items()):
        if st != "NotImplemented":
            continue
        m = re.search(r"`(GET|PUT|POST|DELETE) (/BUCKET(?:/KEY)?\?[^`]+)`", notes)
        expect(m is not None, True, "%s: the row names its request" % name)
        if not m:
            continue
        path = m.group(2).replace("/BUCKET", "/apidoc").replace("/KEY", "/k")
        status, body = signed(aio, m.group(1), path)
        expect((status, code_of(body)), (501, "NotImplemented"),
               "%s (%s %s): 501 NotImplemented" % (name, m.group(1), path))

    unset_get = {
        "GetBucketAccelerateConfiguration": ("?accelerate", 200, None),
        "GetBucketRequestPayment": ("?requestPayment", 200, None),
        "GetBucketLogging": ("?logging", 200, None),
        "GetBucketNotificationConfiguration": ("?notification", 200, None),
        "GetBucketWebsite": ("?website", 404, "NoSuchWebsiteConfiguration"),
        "GetBucketReplication": ("?replication", 404, "ReplicationConfigurationNotFoundError"),
    }
    for name, (q, want_st, want_code) in sorted(unset_get.items()):
        expect(rows.get(name, ("",))[0], "unset", "%s is an unset row" % name)
        if want_code:
            expect(want_code in rows.get(name, ("", ""))[1], True,
                   "%s's row names %s" % (name, want_code))
        status, body = signed(aio, "GET", "/apidoc" + q)
        expect((status, code_of(body) if want_code else None), (want_st, want_code),
               "%s: %d%s as the page says" % (name, want_st, " " + want_code if want_code else ""))


def main():
    run_with_aio(run, CHECKS)


if __name__ == "__main__":
    main()
