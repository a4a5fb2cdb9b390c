#!/usr/bin/env python3
"""test_s3_unset.py — the bucket configurations IOLake cannot set
(gateway/s3_unset.c), read as S3 reads them on a bucket that never set
one, with Debian's boto3, aws-cli and raw HTTP on iolake-aio:

- GetBucketAccelerateConfiguration (no Status), GetBucketRequestPayment
  (Payer BucketOwner), GetBucketLogging (no LoggingEnabled),
  GetBucketNotificationConfiguration (empty): 200 with those bodies;
  GetBucketWebsite 404 NoSuchWebsiteConfiguration, GetBucketReplication
  404 ReplicationConfigurationNotFoundError; DeleteBucketWebsite and
  DeleteBucketReplication 204; the same through aws-cli's s3api.
- Each Put stays NotImplemented (nothing is silently ignored), as does
  any of them on an object; a missing bucket is NoSuchBucket; another
  user and an anonymous caller get AccessDenied; a bucket policy naming
  two of the actions lets that user read those two."""
import http.client, json, os, subprocess, sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, run_with_aio, error_code as code  # noqa: E402

B = "unsetb"
CHECKS = Checks()
expect = CHECKS.expect


def raw(aio, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", aio.port, timeout=10)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data


def strip(d):
    d.pop("ResponseMetadata", None)
    return d


def reads(s3, who, bucket=B):
    """Every read and delete as `who`: the error codes, or OK."""
    return {
        "accelerate": code(s3.get_bucket_accelerate_configuration, Bucket=bucket),
        "requestPayment": code(s3.get_bucket_request_payment, Bucket=bucket),
        "logging": code(s3.get_bucket_logging, Bucket=bucket),
        "notification": code(s3.get_bucket_notification_configuration, Bucket=bucket),
        "website": code(s3.get_bucket_website, Bucket=bucket),
        "replication": code(s3.get_bucket_replication, Bucket=bucket),
        "delete website": code(s3.delete_bucket_website, Bucket=bucket),
        "delete replication": code(s3.delete_bucket_replication, Bucket=bucket),
    }


def run(aio):
    s3 = aio.client()
    s3.create_bucket(Bucket=B)

    # ------------------------------------------------ the owner's reads
    expect(strip(s3.get_bucket_accelerate_configuration(Bucket=B)), {},
           "GetBucketAccelerateConfiguration: no Status (never set)")
    expect(strip(s3.get_bucket_request_payment(Bucket=B)), {"Payer": "BucketOwner"},
           "GetBucketRequestPayment: BucketOwner")
    expect(strip(s3.get_bucket_logging(Bucket=B)), {}, "GetBucketLogging: no LoggingEnabled")
    expect(strip(s3.get_bucket_notification_configuration(Bucket=B)), {},
           "GetBucketNotificationConfiguration: empty")
    expect(code(s3.get_bucket_website, Bucket=B), "NoSuchWebsiteConfiguration",
           "GetBucketWebsite without one")
    expect(code(s3.get_bucket_replication, Bucket=B), "ReplicationConfigurationNotFoundError",
           "GetBucketReplication without one")
    for op in ("delete_bucket_website", "delete_bucket_replication"):
        r = getattr(s3, op)(Bucket=B)
        expect(r["ResponseMetadata"]["HTTPStatusCode"], 204, op + ": 204, nothing to delete")

    # The bodies as they go on the wire (raw HTTP on a presigned URL, so
    # no SDK parser forgives them first): root element, S3's namespace,
    # and what is inside. SigV4 presigned: Debian's botocore 1.29 presigns
    # these with SigV2 over the resource "/bucket?acl?acl" (the subresource
    # twice), which S3 refuses as we do.
    v4 = aio.client(signature_version="s3v4")
    ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
    for op, st_want, root, inside in (
            ("get_bucket_accelerate_configuration", 200, "AccelerateConfiguration", []),
            ("get_bucket_request_payment", 200, "RequestPaymentConfiguration",
             [(ns + "Payer", "BucketOwner")]),
            ("get_bucket_logging", 200, "BucketLoggingStatus", []),
            ("get_bucket_notification_configuration", 200, "NotificationConfiguration", []),
            ("get_bucket_website", 404, "Error", None)):
        url = v4.generate_presigned_url(op, Params={"Bucket": B}, ExpiresIn=60)
        st, body = raw(aio, "GET", url[url.index("/", 8):])
        doc = ET.fromstring(body)
        if inside is None:   # an S3 error document
            got = (st, doc.tag, doc.findtext("Code"))
            want = (st_want, root, "NoSuchWebsiteConfiguration")
        else:
            got = (st, doc.tag, [(c.tag, c.text) for c in doc])
            want = (st_want, ns + root, inside)
        expect(got, want, "raw %s: status, root, content" % op)

    # ------------------------------------------------ what stays refused
    expect(code(s3.put_bucket_website, Bucket=B,
                WebsiteConfiguration={"IndexDocument": {"Suffix": "index.html"}}),
           "NotImplemented", "PutBucketWebsite stays NotImplemented")
    expect(code(s3.put_bucket_accelerate_configuration, Bucket=B,
                AccelerateConfiguration={"Status": "Enabled"}),
           "NotImplemented", "PutBucketAccelerateConfiguration stays NotImplemented")
    expect(code(s3.put_bucket_request_payment, Bucket=B,
                RequestPaymentConfiguration={"Payer": "Requester"}),
           "NotImplemented", "PutBucketRequestPayment stays NotImplemented")
    expect(code(s3.put_bucket_logging, Bucket=B, BucketLoggingStatus={}),
           "NotImplemented", "PutBucketLogging stays NotImplemented")
    expect(code(s3.put_bucket_notification_configuration, Bucket=B,
                NotificationConfiguration={}),
           "NotImplemented", "PutBucketNotificationConfiguration stays NotImplemented")
    s3.put_object(Bucket=B, Key="k", Body=b"x")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": B, "Key": "k"}, ExpiresIn=60)
    st, body = raw(aio, "GET", url[url.index("/", 8):].replace("/k?", "/k?website&", 1))
    expect((st, "<Code>NotImplemented</Code>" in body), (501, True),
           "?website on an object: NotImplemented")
    expect(reads(s3, "root", bucket="nosuchunset"), dict.fromkeys(reads_keys(), "NoSuchBucket"),
           "a missing bucket: NoSuchBucket for each")

    # ------------------------------------------------ who may
    alice = aio.client(*aio.add_user("alice"))
    anon = aio.anonymous_client()
    expect(reads(alice, "alice"), dict.fromkeys(reads_keys(), "AccessDenied"),
           "alice, not the owner: AccessDenied for each")
    expect(reads(anon, "anonymous"), dict.fromkeys(reads_keys(), "AccessDenied"),
           "anonymous: AccessDenied for each")
    s3.put_bucket_policy(Bucket=B, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": ["alice"]},
                       "Action": ["s3:GetBucketWebsite", "s3:GetBucketLogging"],
                       "Resource": "arn:aws:s3:::" + B}]}))
    got = reads(alice, "alice")
    expect((got["website"], got["logging"], got["accelerate"]),
           ("NoSuchWebsiteConfiguration", "OK", "AccessDenied"),
           "a policy naming s3:GetBucketWebsite and s3:GetBucketLogging lets alice read those two")

    # ------------------------------------------------ aws-cli
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    cli = ["aws", "--endpoint-url", aio.ep, "s3api"]
    r = subprocess.run(cli + ["get-bucket-request-payment", "--bucket", B], env=env,
                       capture_output=True, text=True)
    expect((r.returncode, json.loads(r.stdout or "{}").get("Payer")), (0, "BucketOwner"),
           "aws s3api get-bucket-request-payment")
    r = subprocess.run(cli + ["get-bucket-website", "--bucket", B], env=env,
                       capture_output=True, text=True)
    expect((r.returncode != 0, "NoSuchWebsiteConfiguration" in r.stderr), (True, True),
           "aws s3api get-bucket-website: NoSuchWebsiteConfiguration")
    r = subprocess.run(cli + ["get-bucket-accelerate-configuration", "--bucket", B], env=env,
                       capture_output=True, text=True)
    expect(r.returncode, 0, "aws s3api get-bucket-accelerate-configuration")


def reads_keys():
    return ("accelerate", "requestPayment", "logging", "notification", "website", "replication",
            "delete website", "delete replication")


def main():
    run_with_aio(run, CHECKS)


if __name__ == "__main__":
    main()
