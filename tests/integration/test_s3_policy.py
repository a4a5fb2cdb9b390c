#!/usr/bin/env python3
"""test_s3_policy.py — bucket policies and PublicAccessBlock (issue 16), with
real clients (boto3 and aws-cli from Debian) against a real iolake-aio.

Users: root (admin, aio's), alice (owns every bucket here) and bob (made
with `iolake-admin user add`), and an anonymous client (botocore UNSIGNED:
no Authorization header at all).

What AWS documents, and this checks (S3 User Guide, "Bucket policies",
"How Amazon S3 authorizes a request", "Blocking public access to your
Amazon S3 storage", "The meaning of public"; IAM User Guide, "Policy
evaluation logic"):
  - Put/Get/DeleteBucketPolicy, GetBucketPolicyStatus, and their errors
    (MalformedPolicy 400 with nothing stored, NoSuchBucketPolicy 404);
    only the owner (or an admin) may call them, and the owner always may,
    even under a Deny;
  - a policy granting anonymous s3:GetObject on one prefix allows exactly
    that (other prefixes, listing, PUT: 403);
  - an explicit Deny beats an ACL grant and a policy Allow, for the owner
    too;
  - a policy may grant another user what ACLs cannot express
    (s3:PutObject / s3:DeleteObject on a prefix; DeleteObjects per key);
  - conditions: aws:SourceIp (127.0.0.1/32 vs 10.0.0.0/8), s3:prefix on
    ListBucket, aws:SecureTransport (a Deny when false refuses plain HTTP);
  - PublicAccessBlock: each of the four settings against a public ACL or a
    public policy; Get/Put/DeletePublicAccessBlock and
    NoSuchPublicAccessBlockConfiguration;
  - aws-cli's s3api commands for all of it, unchanged.
"""
import hashlib, json, os, subprocess, sys, tempfile, urllib.request, urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

OK = "OK"
D = "AccessDenied"
ALLUSERS = "http://acs.amazonaws.com/groups/global/AllUsers"
FAILS = []


def cid(user):
    return hashlib.sha256(("iolake-user:" + user).encode()).hexdigest()


def code(fn, **kw):
    try:
        fn(**kw)
        return OK
    except ClientError as e:
        c = e.response["Error"]["Code"]
        return {"403": D, "404": "NoSuchKey"}.get(c, c)


def err(fn, **kw):
    """(code, HTTP status, message) of a failing call; (OK, 200, "") else."""
    try:
        fn(**kw)
        return OK, 200, ""
    except ClientError as e:
        return (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"],
                e.response["Error"].get("Message", ""))


def expect(got, want, what):
    if got != want:
        FAILS.append("%s: got %r, want %r" % (what, got, want))
        print("FAIL %s: got %r, want %r" % (what, got, want))


def policy(bucket, *stmts):
    return json.dumps({"Version": "2012-10-17", "Statement": list(stmts)})


def stmt(effect, principal, action, resource, cond=None, sid=None):
    s = {"Effect": effect, "Principal": principal, "Action": action, "Resource": resource}
    if cond:
        s["Condition"] = cond
    if sid:
        s["Sid"] = sid
    return s


def arn(bucket, key=None):
    return "arn:aws:s3:::" + bucket + ("" if key is None else "/" + key)


def main():
    aio = Aio()
    aio.start()
    try:
        run(aio)
        rc, took = aio.stop(limit=15)
        if rc != 0:
            aio.log.flush()
            print(open(aio.log.name, errors="replace").read()[-4000:])
        expect(rc, 0, "iolake-aio exits 0 on SIGTERM")
    finally:
        aio.close()
    if FAILS:
        print("%d failures" % len(FAILS))
        sys.exit(1)
    print("PASS")


def run(aio):
    root = aio.client()
    ak_a, sk_a = aio.add_user("alice")
    ak_b, sk_b = aio.add_user("bob")
    alice = aio.client(ak=ak_a, sk=sk_a)
    bob = aio.client(ak=ak_b, sk=sk_b)
    anon = boto3.client("s3", endpoint_url=aio.ep, region_name="us-east-1",
                        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))
    api(alice, bob, anon, root)
    prefix_grant(alice, bob, anon)
    explicit_deny(alice, bob, anon, root)
    user_grant(alice, bob, anon)
    conditions(alice, bob, anon)
    pab_block_public_acls(alice, bob, anon)
    pab_ignore_public_acls(alice, bob, anon)
    pab_block_public_policy(alice, bob, anon)
    pab_restrict_public_buckets(alice, bob, anon)
    concurrent_changes(aio, alice, ak_a, sk_a)
    awscli(aio, ak_a, sk_a, alice, anon)


# ---------------------------------------------------------------- the API

def api(alice, bob, anon, root):
    b = "pol-api"
    alice.create_bucket(Bucket=b)
    expect(err(alice.get_bucket_policy, Bucket=b)[:2], ("NoSuchBucketPolicy", 404),
           "GetBucketPolicy without a policy")
    expect(err(alice.get_bucket_policy_status, Bucket=b)[:2], ("NoSuchBucketPolicy", 404),
           "GetBucketPolicyStatus without a policy")
    expect(code(alice.delete_bucket_policy, Bucket=b), OK, "DeleteBucketPolicy without a policy")
    # Malformed documents: MalformedPolicy 400 with the engine's text, and
    # nothing stored.
    bad = [
        ("not json", "Policies must be valid JSON and the first byte must be '{'"),
        ('{"Statement": [', "This policy contains invalid Json"),
        (policy(b, stmt("Allow", "*", "s3:Frobnicate", arn(b, "*"))), "Policy has invalid action"),
        (policy(b, stmt("Allow", "*", "s3:GetObject", arn("other-bucket", "*"))),
         "Policy has invalid resource"),
        (policy(b, stmt("Permit", "*", "s3:GetObject", arn(b, "*"))), "Invalid effect: Permit"),
        (json.dumps({"Version": "2012-10-17", "Statement": []}),
         "Could not parse the policy: Statement is empty!"),
        (policy(b, stmt("Allow", "*", "s3:ListBucket", arn(b, "*"))),
         "Action does not apply to any resource(s) in statement"),
        # A user that does not exist (AWS refuses unknown principals too).
        (policy(b, stmt("Allow", {"AWS": ["bob", "nobody"]}, "s3:GetObject", arn(b, "*"))),
         "Invalid principal in policy"),
        (policy(b, stmt("Allow", {"AWS": "arn:aws:iam::123456789012:user/ghost"}, "s3:GetObject",
                        arn(b, "*"))), "Invalid principal in policy"),
        (policy(b, stmt("Allow", {"AWS": "arn:aws:iam::123456789012:role/r"}, "s3:GetObject",
                        arn(b, "*"))), "Invalid principal in policy"),
    ]
    for doc, msg in bad:
        c, st, m = err(alice.put_bucket_policy, Bucket=b, Policy=doc)
        expect((c, st, m), ("MalformedPolicy", 400, msg), "PutBucketPolicy %r" % doc[:40])
    expect(err(alice.get_bucket_policy, Bucket=b)[0], "NoSuchBucketPolicy",
           "a malformed policy stored nothing")
    # 20 KiB, counted without whitespace (as AWS): indentation is free.
    big = policy(b, *[stmt("Allow", {"AWS": "bob"}, "s3:GetObject", arn(b, "k%05d/*" % i),
                           sid="s%d" % i) for i in range(400)])
    expect(len(big) > 20480, True, "the large policy is over 20 KiB")
    expect(err(alice.put_bucket_policy, Bucket=b, Policy=big)[:2], ("MalformedPolicy", 400),
           "a policy over 20 KiB is refused")
    pretty = json.dumps(json.loads(policy(b, *[stmt("Allow", {"AWS": "bob"}, "s3:GetObject",
                                                    arn(b, "p%03d/*" % i)) for i in range(60)])),
                        indent=40)
    expect(len(pretty) > 20480, True, "the indented policy is over 20 KiB with its spaces")
    expect(code(alice.put_bucket_policy, Bucket=b, Policy=pretty), OK,
           "a policy under 20 KiB without its whitespace is accepted")
    got = alice.get_bucket_policy(Bucket=b)["Policy"]
    expect(json.loads(got), json.loads(pretty), "GetBucketPolicy: the same document")
    # As sent, byte for byte, when it fits.
    doc = policy(b, stmt("Allow", {"AWS": "bob"}, "s3:GetObject", arn(b, "x/*"), sid="Bob"))
    doc = doc.replace(", ", ",  ")
    expect(code(alice.put_bucket_policy, Bucket=b, Policy=doc), OK, "PutBucketPolicy")
    expect(alice.get_bucket_policy(Bucket=b)["Policy"], doc, "GetBucketPolicy: as sent")
    expect(alice.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], False,
           "a policy for one user is not public")
    # Only the owner (and admins).
    for who, c in (("bob", bob), ("anonymous", anon)):
        expect(code(c.get_bucket_policy, Bucket=b), D, "%s GetBucketPolicy" % who)
        expect(code(c.put_bucket_policy, Bucket=b, Policy=doc), D, "%s PutBucketPolicy" % who)
        expect(code(c.delete_bucket_policy, Bucket=b), D, "%s DeleteBucketPolicy" % who)
        expect(code(c.get_bucket_policy_status, Bucket=b), D, "%s GetBucketPolicyStatus" % who)
        expect(code(c.get_public_access_block, Bucket=b), D, "%s GetPublicAccessBlock" % who)
        expect(code(c.put_public_access_block, Bucket=b, PublicAccessBlockConfiguration={
            "BlockPublicAcls": False}), D, "%s PutPublicAccessBlock" % who)
        expect(code(c.delete_public_access_block, Bucket=b), D, "%s DeletePublicAccessBlock" % who)
    expect(alice.get_bucket_policy(Bucket=b)["Policy"], doc, "others changed nothing")
    expect(root.get_bucket_policy(Bucket=b)["Policy"], doc, "an admin reads the policy")
    # A policy may give another user the policy's own operations (AWS
    # lets a policy grant s3:GetBucketPolicy).
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", {"AWS": "bob"}, "s3:GetBucketPolicy", arn(b))))
    expect(code(bob.get_bucket_policy, Bucket=b), OK, "a policy grants bob GetBucketPolicy")
    expect(code(bob.delete_bucket_policy, Bucket=b), D, "... not DeleteBucketPolicy")
    expect(code(alice.delete_bucket_policy, Bucket=b), OK, "DeleteBucketPolicy")
    expect(err(alice.get_bucket_policy, Bucket=b)[0], "NoSuchBucketPolicy", "deleted")
    expect(err(alice.get_bucket_policy, Bucket="no-such-bucket-here")[0], "NoSuchBucket",
           "GetBucketPolicy of a missing bucket")
    # PublicAccessBlock's own API.
    expect(err(alice.get_public_access_block, Bucket=b)[:2],
           ("NoSuchPublicAccessBlockConfiguration", 404), "GetPublicAccessBlock without one")
    alice.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "RestrictPublicBuckets": True})
    expect(alice.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"],
           {"BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
            "RestrictPublicBuckets": True}, "GetPublicAccessBlock: left out is false")
    expect(code(alice.delete_public_access_block, Bucket=b), OK, "DeletePublicAccessBlock")
    expect(err(alice.get_public_access_block, Bucket=b)[0],
           "NoSuchPublicAccessBlockConfiguration", "deleted")
    print("ok: the API, its errors, owner only")


# ---------------------------------------------------------------- evaluation

def prefix_grant(alice, bob, anon):
    """A policy granting anonymous s3:GetObject on one prefix allows exactly that."""
    b = "pol-prefix"
    alice.create_bucket(Bucket=b)
    for k in ("pub/a", "priv/b"):
        alice.put_object(Bucket=b, Key=k, Body=k.encode())
    expect(code(anon.get_object, Bucket=b, Key="pub/a"), D, "before the policy: private")
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", "*", "s3:GetObject", arn(b, "pub/*"), sid="PublicRead")))
    expect(anon.get_object(Bucket=b, Key="pub/a")["Body"].read(), b"pub/a", "anon GET pub/a")
    expect(code(anon.head_object, Bucket=b, Key="pub/a"), OK, "anon HEAD pub/a")
    expect(code(anon.get_object, Bucket=b, Key="priv/b"), D, "anon GET priv/b")
    expect(code(anon.list_objects_v2, Bucket=b), D, "anon list")
    expect(code(anon.list_objects_v2, Bucket=b, Prefix="pub/"), D, "anon list pub/")
    expect(code(anon.put_object, Bucket=b, Key="pub/new", Body=b"x"), D, "anon PUT pub/new")
    expect(code(anon.delete_object, Bucket=b, Key="pub/a"), D, "anon DELETE pub/a")
    expect(code(anon.get_object_acl, Bucket=b, Key="pub/a"), D, "anon GetObjectAcl pub/a")
    expect(code(anon.get_object, Bucket=b, Key="pub/missing"), D,
           "anon GET of a missing key: AccessDenied (no s3:ListBucket)")
    expect(code(bob.get_object, Bucket=b, Key="pub/a"), OK, "'*' includes bob")
    expect(code(bob.get_object, Bucket=b, Key="priv/b"), D, "bob GET priv/b")
    expect(alice.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], True,
           "GetBucketPolicyStatus: public")
    r = urllib.request.urlopen("http://%s/%s/pub/a" % (
        anon.meta.endpoint_url.split("//")[1], b)).read()
    expect(r, b"pub/a", "a plain anonymous HTTP GET")
    print("ok: anonymous s3:GetObject on one prefix allows exactly that")


def explicit_deny(alice, bob, anon, root):
    """An explicit Deny beats an ACL grant and a policy Allow."""
    b = "pol-deny"
    alice.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter", ACL="public-read")
    for k in ("open/x", "closed/x"):
        alice.put_object(Bucket=b, Key=k, Body=b"v", ACL="public-read")
    expect(code(anon.get_object, Bucket=b, Key="closed/x"), OK, "public-read ACL: anon reads")
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", {"AWS": "bob"}, "s3:*", [arn(b), arn(b, "*")]),
        stmt("Deny", "*", "s3:GetObject", arn(b, "closed/*"))))
    expect(code(anon.get_object, Bucket=b, Key="open/x"), OK, "anon GET open/x (ACL)")
    expect(code(anon.get_object, Bucket=b, Key="closed/x"), D, "Deny beats the object's ACL")
    expect(code(bob.get_object, Bucket=b, Key="closed/x"), D, "Deny beats the policy's Allow")
    expect(code(bob.get_object, Bucket=b, Key="open/x"), OK, "bob's Allow elsewhere")
    expect(code(alice.get_object, Bucket=b, Key="closed/x"), D, "Deny binds the owner too")
    expect(code(root.get_object, Bucket=b, Key="closed/x"), OK, "not an admin")
    expect(code(anon.list_objects_v2, Bucket=b), OK, "the bucket ACL's READ still lists")
    # A Deny of everything to everyone: the owner can still manage the policy.
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Deny", "*", "s3:*", [arn(b), arn(b, "*")])))
    expect(code(alice.get_object, Bucket=b, Key="open/x"), D, "deny-all: owner GET")
    expect(code(alice.list_objects_v2, Bucket=b), D, "deny-all: owner list")
    expect(code(alice.get_bucket_acl, Bucket=b), D, "deny-all: owner GetBucketAcl")
    expect(code(alice.get_bucket_policy, Bucket=b), OK, "deny-all: owner GetBucketPolicy")
    expect(code(alice.delete_bucket_policy, Bucket=b), OK, "deny-all: owner DeleteBucketPolicy")
    expect(code(alice.get_object, Bucket=b, Key="closed/x"), OK, "policy gone: owner GET")
    expect(code(anon.get_object, Bucket=b, Key="closed/x"), OK, "policy gone: ACL again")
    print("ok: an explicit Deny beats ACL grants and policy Allows")


def user_grant(alice, bob, anon):
    """A policy grants bob s3:PutObject / s3:DeleteObject on a prefix."""
    b = "pol-user"
    alice.create_bucket(Bucket=b)
    alice.put_object(Bucket=b, Key="other/y", Body=b"y")
    alice.put_object(Bucket=b, Key="bob/old", Body=b"o")
    expect(code(bob.put_object, Bucket=b, Key="bob/x", Body=b"x"), D, "before: bob PUT")
    alice.put_bucket_policy(Bucket=b, Policy=policy(b, stmt(
        "Allow", {"AWS": "bob"}, ["s3:PutObject", "s3:DeleteObject"], arn(b, "bob/*"))))
    expect(code(bob.put_object, Bucket=b, Key="bob/x", Body=b"x"), OK, "bob PUT bob/x")
    expect(code(bob.put_object, Bucket=b, Key="other/x", Body=b"x"), D, "bob PUT other/x")
    expect(code(anon.put_object, Bucket=b, Key="bob/x", Body=b"x"), D, "anon PUT bob/x")
    expect(code(bob.get_object, Bucket=b, Key="bob/x"), D, "bob GET bob/x (not granted)")
    expect(alice.get_object(Bucket=b, Key="bob/x")["Body"].read(), b"x",
           "alice reads what bob wrote (BucketOwnerEnforced)")
    mp = bob.create_multipart_upload(Bucket=b, Key="bob/mp")
    part = bob.upload_part(Bucket=b, Key="bob/mp", UploadId=mp["UploadId"], PartNumber=1,
                           Body=b"p" * 100)
    expect(code(bob.complete_multipart_upload, Bucket=b, Key="bob/mp", UploadId=mp["UploadId"],
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}), OK,
           "bob's multipart upload under bob/")
    expect(code(bob.create_multipart_upload, Bucket=b, Key="other/mp"), D,
           "bob CreateMultipartUpload other/mp")
    expect(code(bob.delete_object, Bucket=b, Key="bob/x"), OK, "bob DELETE bob/x")
    expect(code(alice.head_object, Bucket=b, Key="bob/x"), "NoSuchKey", "bob/x is gone")
    expect(code(bob.delete_object, Bucket=b, Key="other/y"), D, "bob DELETE other/y")
    r = bob.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "bob/old"}, {"Key": "other/y"}]})
    expect([d["Key"] for d in r.get("Deleted", [])], ["bob/old"], "DeleteObjects: bob/old deleted")
    expect([(e["Key"], e["Code"]) for e in r.get("Errors", [])], [("other/y", D)],
           "DeleteObjects: other/y AccessDenied")
    expect(code(alice.head_object, Bucket=b, Key="other/y"), OK, "other/y is still there")
    expect(code(alice.head_object, Bucket=b, Key="bob/old"), "NoSuchKey", "bob/old is gone")
    print("ok: a policy grants another user PUT and DELETE on a prefix")


def conditions(alice, bob, anon):
    b = "pol-cond"
    alice.create_bucket(Bucket=b)
    for k in ("local/a", "ten/a", "home/bob/a", "home/alice/a"):
        alice.put_object(Bucket=b, Key=k, Body=b"v")
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b,
        stmt("Allow", "*", "s3:GetObject", arn(b, "local/*"),
             {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}),
        stmt("Allow", "*", "s3:GetObject", arn(b, "ten/*"),
             {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}),
        stmt("Allow", {"AWS": "bob"}, "s3:ListBucket", arn(b),
             {"StringLike": {"s3:prefix": ["home/bob/*", "home/bob/"]}})))
    expect(code(anon.get_object, Bucket=b, Key="local/a"), OK, "aws:SourceIp 127.0.0.1/32")
    expect(code(anon.get_object, Bucket=b, Key="ten/a"), D, "aws:SourceIp 10.0.0.0/8")
    expect(alice.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"], False,
           "Allows pinned to source addresses are not public")
    expect(code(bob.list_objects_v2, Bucket=b, Prefix="home/bob/"), OK, "s3:prefix home/bob/")
    r = bob.list_objects_v2(Bucket=b, Prefix="home/bob/")
    expect([o["Key"] for o in r.get("Contents", [])], ["home/bob/a"], "bob lists his prefix")
    expect(code(bob.list_objects_v2, Bucket=b, Prefix="home/alice/"), D, "s3:prefix home/alice/")
    expect(code(bob.list_objects_v2, Bucket=b), D, "no prefix: s3:prefix absent")
    expect(code(bob.list_objects, Bucket=b, Prefix="home/bob/"), OK, "ListObjects v1 too")
    # s3:max-keys and s3:x-amz-acl (AWS's examples: cap a listing; make
    # another user's uploads carry bucket-owner-full-control).
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b,
        stmt("Allow", {"AWS": "bob"}, "s3:ListBucket", arn(b),
             {"NumericLessThanEquals": {"s3:max-keys": "100"}}),
        stmt("Allow", {"AWS": "bob"}, "s3:PutObject", arn(b, "drop/*"),
             {"StringEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}})))
    expect(code(bob.list_objects_v2, Bucket=b, MaxKeys=50), OK, "s3:max-keys 50 <= 100")
    expect(code(bob.list_objects_v2, Bucket=b, MaxKeys=500), D, "s3:max-keys 500 > 100")
    expect(code(bob.put_object, Bucket=b, Key="drop/x", Body=b"x",
                ACL="bucket-owner-full-control"), OK, "s3:x-amz-acl bucket-owner-full-control")
    expect(code(bob.put_object, Bucket=b, Key="drop/y", Body=b"y"), D, "no x-amz-acl: refused")
    expect(code(bob.put_object, Bucket=b, Key="drop/z", Body=b"z", ACL="private"), D,
           "x-amz-acl private: refused")
    # aws:SecureTransport: a Deny when false refuses plain HTTP, even the owner.
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Deny", "*", "s3:*", [arn(b), arn(b, "*")],
                {"Bool": {"aws:SecureTransport": "false"}}, sid="TLSOnly")))
    expect(code(alice.get_object, Bucket=b, Key="local/a"), D, "TLS required: plain-HTTP GET")
    expect(code(alice.put_object, Bucket=b, Key="n", Body=b"n"), D, "TLS required: plain PUT")
    expect(code(alice.list_objects_v2, Bucket=b), D, "TLS required: plain list")
    # The control: the same Deny on "true" does not touch plain HTTP.
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Deny", "*", "s3:*", [arn(b), arn(b, "*")],
                {"Bool": {"aws:SecureTransport": "true"}})))
    expect(code(alice.get_object, Bucket=b, Key="local/a"), OK, "Deny on TLS: plain GET passes")
    alice.delete_bucket_policy(Bucket=b)
    print("ok: aws:SourceIp, s3:prefix, s3:max-keys, s3:x-amz-acl, aws:SecureTransport")


# ---------------------------------------------------------------- PublicAccessBlock

def pab(c, b, **kw):
    conf = {k: kw.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls",
                                          "BlockPublicPolicy", "RestrictPublicBuckets")}
    c.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=conf)


def pab_block_public_acls(alice, bob, anon):
    b = "pab-block-acls"
    alice.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")
    alice.put_object(Bucket=b, Key="o", Body=b"o")
    pab(alice, b, BlockPublicAcls=True)
    expect(code(alice.put_bucket_acl, Bucket=b, ACL="public-read"), D, "PutBucketAcl public-read")
    expect(code(alice.put_bucket_acl, Bucket=b, GrantRead="uri=" + ALLUSERS), D,
           "PutBucketAcl granting AllUsers")
    expect(code(alice.put_bucket_acl, Bucket=b, ACL="private"), OK, "PutBucketAcl private")
    expect(code(alice.put_object_acl, Bucket=b, Key="o", ACL="public-read"), D,
           "PutObjectAcl public-read")
    expect(code(alice.put_object_acl, Bucket=b, Key="o", ACL="authenticated-read"), D,
           "PutObjectAcl authenticated-read")
    expect(code(alice.put_object, Bucket=b, Key="p", Body=b"p", ACL="public-read"), D,
           "PutObject with public-read")
    expect(code(alice.put_object, Bucket=b, Key="p", Body=b"p", GrantRead="uri=" + ALLUSERS), D,
           "PutObject granting AllUsers")
    expect(code(alice.head_object, Bucket=b, Key="p"), "NoSuchKey", "nothing was written")
    expect(code(alice.create_multipart_upload, Bucket=b, Key="m", ACL="public-read-write"), D,
           "CreateMultipartUpload with public-read-write")
    expect(code(alice.copy_object, Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "o"},
                ACL="public-read"), D, "CopyObject with public-read")
    expect(code(alice.put_object, Bucket=b, Key="p", Body=b"p", ACL="private"), OK,
           "PutObject private")
    pab(alice, b)
    expect(code(alice.put_object_acl, Bucket=b, Key="o", ACL="public-read"), OK,
           "all off: PutObjectAcl public-read")
    expect(code(anon.get_object, Bucket=b, Key="o"), OK, "... and it is public")
    print("ok: BlockPublicAcls")


def pab_ignore_public_acls(alice, bob, anon):
    b = "pab-ignore-acls"
    alice.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter", ACL="public-read")
    alice.put_object(Bucket=b, Key="o", Body=b"o", ACL="public-read")
    alice.put_object(Bucket=b, Key="a", Body=b"a", ACL="authenticated-read")
    expect(code(anon.get_object, Bucket=b, Key="o"), OK, "public-read object")
    expect(code(anon.list_objects_v2, Bucket=b), OK, "public-read bucket")
    expect(code(bob.get_object, Bucket=b, Key="a"), OK, "authenticated-read object")
    pab(alice, b, IgnorePublicAcls=True)
    expect(code(anon.get_object, Bucket=b, Key="o"), D, "IgnorePublicAcls: anon GET")
    expect(code(anon.list_objects_v2, Bucket=b), D, "IgnorePublicAcls: anon list")
    expect(code(bob.get_object, Bucket=b, Key="a"), D, "IgnorePublicAcls: AuthenticatedUsers")
    expect(code(alice.get_object, Bucket=b, Key="o"), OK, "the owner still reads")
    # The ACLs are kept, only ignored.
    acl = alice.get_object_acl(Bucket=b, Key="o")
    expect(any(g["Grantee"].get("URI") == ALLUSERS for g in acl["Grants"]), True,
           "the stored ACL is unchanged")
    alice.delete_public_access_block(Bucket=b)
    expect(code(anon.get_object, Bucket=b, Key="o"), OK, "PAB deleted: public again")
    print("ok: IgnorePublicAcls")


def pab_block_public_policy(alice, bob, anon):
    b = "pab-block-policy"
    alice.create_bucket(Bucket=b)
    pab(alice, b, BlockPublicPolicy=True)
    pub = policy(b, stmt("Allow", "*", "s3:GetObject", arn(b, "*")))
    expect(err(alice.put_bucket_policy, Bucket=b, Policy=pub)[:2], (D, 403),
           "BlockPublicPolicy: a public policy")
    expect(err(alice.get_bucket_policy, Bucket=b)[0], "NoSuchBucketPolicy", "nothing stored")
    mine = policy(b, stmt("Allow", {"AWS": "bob"}, "s3:GetObject", arn(b, "*")))
    expect(code(alice.put_bucket_policy, Bucket=b, Policy=mine), OK,
           "BlockPublicPolicy: a policy for one user")
    pinned = policy(b, stmt("Allow", "*", "s3:GetObject", arn(b, "*"),
                            {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}))
    expect(code(alice.put_bucket_policy, Bucket=b, Policy=pinned), OK,
           "BlockPublicPolicy: an Allow pinned to one address is not public")
    pab(alice, b)
    expect(code(alice.put_bucket_policy, Bucket=b, Policy=pub), OK, "all off: public policy")
    print("ok: BlockPublicPolicy")


def pab_restrict_public_buckets(alice, bob, anon):
    b = "pab-restrict"
    alice.create_bucket(Bucket=b)
    alice.put_object(Bucket=b, Key="o", Body=b"o")
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", "*", "s3:GetObject", arn(b, "*"))))
    expect(code(anon.get_object, Bucket=b, Key="o"), OK, "public policy: anon GET")
    expect(code(bob.get_object, Bucket=b, Key="o"), OK, "public policy: bob GET")
    pab(alice, b, RestrictPublicBuckets=True)
    expect(code(anon.get_object, Bucket=b, Key="o"), D, "RestrictPublicBuckets: anon GET")
    expect(code(bob.get_object, Bucket=b, Key="o"), D, "RestrictPublicBuckets: bob GET")
    expect(code(alice.get_object, Bucket=b, Key="o"), OK, "RestrictPublicBuckets: owner GET")
    # A policy that is not public is not restricted.
    alice.put_bucket_policy(Bucket=b, Policy=policy(
        b, stmt("Allow", {"AWS": "bob"}, "s3:GetObject", arn(b, "*"))))
    expect(code(bob.get_object, Bucket=b, Key="o"), OK,
           "RestrictPublicBuckets: a non-public policy still grants bob")
    alice.delete_public_access_block(Bucket=b)
    print("ok: RestrictPublicBuckets")


# ---------------------------------------------------------------- aws-cli

def concurrent_changes(aio, alice, ak, sk):
    """Policy, PublicAccessBlock and ownership changes of one bucket at the
    same time from 12 clients: each commits on the bucket generation it
    read, so many race (CONFLICT in meta); the gateway reads the bucket
    again, decides again and retries, up to 8 commits, then answers 409
    OperationAborted as S3 does. Every request must succeed or be
    OperationAborted (never another error), most must succeed, and the
    bucket must end with a value whose request succeeded."""
    import threading
    b = "pol-race"
    alice.create_bucket(Bucket=b)
    n, per_kind = 8, 4
    errors, aborted, ok_docs = [], [], []
    start = threading.Barrier(3 * per_kind)

    def doc(w, i):
        return policy(b, stmt("Deny", "*", "s3:GetObject", arn(b, "race-%d-%d/*" % (w, i))))

    def writer(kind, w):
        c = aio.client(ak=ak, sk=sk)
        start.wait()
        for i in range(n):
            try:
                if kind == "policy":
                    c.put_bucket_policy(Bucket=b, Policy=doc(w, i))
                    ok_docs.append(json.loads(doc(w, i)))
                elif kind == "pab":
                    c.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
                        "BlockPublicAcls": False, "IgnorePublicAcls": w % 2 == 1,
                        "BlockPublicPolicy": False, "RestrictPublicBuckets": False})
                else:
                    c.put_bucket_ownership_controls(Bucket=b, OwnershipControls={"Rules": [
                        {"ObjectOwnership": "ObjectWriter" if w % 2 == 0 else "BucketOwnerPreferred"}]})
            except ClientError as e:
                code = e.response["Error"]["Code"]
                (aborted if code == "OperationAborted" else errors).append(
                    "%s %d #%d: %s" % (kind, w, i, code))

    ts = [threading.Thread(target=writer, args=(k, w))
          for k in ("policy", "pab", "own") for w in range(per_kind)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    total = 3 * per_kind * n
    expect(errors, [], "concurrent bucket changes: no error but OperationAborted")
    expect(len(aborted) <= total // 2, True,
           "most concurrent bucket changes succeed (%d of %d aborted)" % (len(aborted), total))
    got = json.loads(alice.get_bucket_policy(Bucket=b)["Policy"])
    expect(got in ok_docs, True, "the policy is one whose PutBucketPolicy succeeded")
    pabc = alice.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"]
    expect(pabc["BlockPublicAcls"], False, "the PAB is some writer's")
    own = alice.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"][0]
    expect(own["ObjectOwnership"] in ("ObjectWriter", "BucketOwnerPreferred"), True,
           "the ownership is some writer's")
    alice.delete_bucket_policy(Bucket=b)
    alice.delete_bucket(Bucket=b)
    print("ok: %d concurrent policy, PAB and ownership changes of one bucket: %d succeeded, "
          "%d OperationAborted after 8 tries" % (total, total - len(aborted), len(aborted)))


def awscli(aio, ak, sk, alice, anon):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null",
               AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    cli = ["aws", "--endpoint-url", aio.ep, "s3api"]
    b = "pol-cli"
    alice.create_bucket(Bucket=b)
    alice.put_object(Bucket=b, Key="pub/i", Body=b"hi")

    def aws(*args, ok=True):
        r = subprocess.run(cli + list(args), env=env, capture_output=True, text=True)
        if ok and r.returncode != 0:
            FAILS.append("aws %s: %s" % (" ".join(args), r.stderr.strip()))
            print("FAIL aws %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    doc = policy(b, stmt("Allow", "*", "s3:GetObject", arn(b, "pub/*")))
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir="/dev/shm") as f:
        f.write(doc)
        f.flush()
        aws("put-bucket-policy", "--bucket", b, "--policy", "file://" + f.name)
    r = aws("get-bucket-policy", "--bucket", b)
    expect(json.loads(r.stdout or "{}").get("Policy"), doc, "aws-cli get-bucket-policy")
    r = aws("get-bucket-policy-status", "--bucket", b)
    expect(json.loads(r.stdout or "{}").get("PolicyStatus"), {"IsPublic": True},
           "aws-cli get-bucket-policy-status")
    expect(code(anon.get_object, Bucket=b, Key="pub/i"), OK, "aws-cli's policy is in force")
    r = aws("put-bucket-policy", "--bucket", b, "--policy", '{"Statement": 3}', ok=False)
    expect((r.returncode != 0, "MalformedPolicy" in r.stderr), (True, True),
           "aws-cli put-bucket-policy of a malformed document: MalformedPolicy")
    aws("put-public-access-block", "--bucket", b, "--public-access-block-configuration",
        "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,"
        "RestrictPublicBuckets=true")
    r = aws("get-public-access-block", "--bucket", b)
    expect(json.loads(r.stdout or "{}").get("PublicAccessBlockConfiguration"),
           {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True}, "aws-cli get-public-access-block")
    expect(code(anon.get_object, Bucket=b, Key="pub/i"), D, "aws-cli's PAB is in force")
    aws("delete-public-access-block", "--bucket", b)
    r = aws("get-public-access-block", "--bucket", b, ok=False)
    expect("NoSuchPublicAccessBlockConfiguration" in r.stderr, True,
           "aws-cli get-public-access-block after delete")
    aws("delete-bucket-policy", "--bucket", b)
    r = aws("get-bucket-policy", "--bucket", b, ok=False)
    expect("NoSuchBucketPolicy" in r.stderr, True, "aws-cli get-bucket-policy after delete")
    try:
        urllib.request.urlopen(aio.ep + "/" + b + "/pub/i")
        st = 200
    except urllib.error.HTTPError as e:
        st = e.code
    expect(st, 403, "policy deleted: anonymous GET refused")
    print("ok: aws-cli put/get/delete-bucket-policy, get-bucket-policy-status, "
          "put/get/delete-public-access-block")


if __name__ == "__main__":
    main()
