#!/usr/bin/env python3
"""test_s3_acl.py — owners, ACLs and the one authorization point (issue 16),
with real clients against a real iolake-aio.

Users: root (admin, aio's), alice and bob (made with `iolake-admin user add`
against aio's meta member), and an anonymous client (botocore UNSIGNED: no
Authorization header at all).

The expected answers are AWS's (S3 User Guide, "Access control list (ACL)
overview": canned ACLs and "Mapping of ACL permissions and access policy
permissions"; "Controlling ownership of objects"):
  - bucket READ = ListBucket (ListObjects*), WRITE = PutObject and
    DeleteObject of any key; READ_ACP / WRITE_ACP = Get/PutBucketAcl, and
    the bucket owner always has those two;
  - object READ = GetObject (HeadObject); READ_ACP / WRITE_ACP =
    Get/PutObjectAcl, the object owner always has those two; object WRITE
    does not exist (overwrite and delete are the bucket's WRITE);
  - bucket-owner-read / bucket-owner-full-control on a bucket are ignored
    (private);
  - a missing key answers NoSuchKey only to whoever may list the bucket,
    else AccessDenied.
Where AWS's answer depends on Object Ownership: under BucketOwnerEnforced
(the default of a new bucket, as AWS since April 2023) ACLs are disabled:
setting one that does not come to full control for the bucket owner
alone (anything but private, bucket-owner-full-control or such grants)
fails with AccessControlListNotSupported (CreateBucket with one:
InvalidBucketAclWithObjectOwnership), and the bucket owner owns every
object. The ACL matrices below therefore run on buckets created with
ObjectOwnership=ObjectWriter, where the writer owns what it writes.
"""
import os, re, subprocess, sys, time, urllib.parse, urllib.request, urllib.error, hashlib, json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio, BUILD  # noqa: E402
import s3sign  # noqa: E402

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

OK = "OK"
ALLUSERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTHUSERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
FAILS = []


def cid(user):
    """IOLake's canonical user id: SHA-256 of "iolake-user:" + name."""
    return hashlib.sha256(("iolake-user:" + user).encode()).hexdigest()


def code(fn, **kw):
    try:
        fn(**kw)
        return OK
    except ClientError as e:
        c = e.response["Error"]["Code"]
        # HEAD answers have no body: botocore reports the status.
        return {"403": "AccessDenied", "404": "NoSuchKey"}.get(c, c)


def expect(got, want, what):
    if got != want:
        FAILS.append("%s: got %s, want %s" % (what, got, want))
        print("FAIL %s: got %s, want %s" % (what, got, want))


def main():
    aio = Aio()
    aio.start()
    try:
        run(aio)
        # A clean exit (under ASan: no leak, no error report).
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
    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
    admin = [os.path.join(BUILD, "iolake-admin"), "--meta", meta]
    root = aio.client()
    ak_a, sk_a = aio.add_user("alice")
    ak_b, sk_b = aio.add_user("bob")
    alice = aio.client(ak=ak_a, sk=sk_a)
    bob = aio.client(ak=ak_b, sk=sk_b)
    anon = boto3.client("s3", endpoint_url=aio.ep, region_name="us-east-1",
                        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))
    who = {"owner": alice, "other": bob, "anon": anon}

    # ---------------------------------------------------------------- owners
    alice.create_bucket(Bucket="al-default")
    r = alice.list_buckets()
    expect(r["Owner"]["ID"], cid("alice"), "ListBuckets Owner ID is alice's canonical id")
    expect(r["Owner"].get("DisplayName"), "alice", "ListBuckets Owner DisplayName")
    expect(alice.get_bucket_ownership_controls(Bucket="al-default")["OwnershipControls"]
           ["Rules"][0]["ObjectOwnership"], "BucketOwnerEnforced", "a new bucket is enforced")
    acl = alice.get_bucket_acl(Bucket="al-default")
    expect(acl["Owner"]["ID"], cid("alice"), "GetBucketAcl Owner")
    expect([(g["Grantee"].get("ID"), g["Permission"]) for g in acl["Grants"]],
           [(cid("alice"), "FULL_CONTROL")], "a new bucket's ACL: owner FULL_CONTROL")
    # Before issue 16 bob could read, overwrite and delete this.
    alice.put_object(Bucket="al-default", Key="secret", Body=b"alice's")
    expect(code(bob.get_object, Bucket="al-default", Key="secret"), "AccessDenied", "bob GET alice's")
    expect(code(bob.put_object, Bucket="al-default", Key="secret", Body=b"x"), "AccessDenied",
           "bob overwrites alice's")
    expect(code(bob.delete_object, Bucket="al-default", Key="secret"), "AccessDenied",
           "bob deletes alice's")
    expect(code(bob.delete_bucket, Bucket="al-default"), "AccessDenied", "bob deletes alice's bucket")
    expect(code(bob.list_objects_v2, Bucket="al-default"), "AccessDenied", "bob lists alice's")
    expect(code(bob.get_bucket_location, Bucket="al-default"), "AccessDenied", "bob's location")
    expect(code(bob.create_bucket, Bucket="al-default"), "BucketAlreadyExists",
           "bob creates alice's name")
    expect(code(alice.create_bucket, Bucket="al-default"), "BucketAlreadyOwnedByYou",
           "alice creates her own name")
    expect(root.get_object(Bucket="al-default", Key="secret")["Body"].read(), b"alice's",
           "root (admin) reads anything")
    expect(code(anon.list_buckets), "AccessDenied", "anonymous ListBuckets")
    expect(code(anon.get_object, Bucket="al-default", Key="secret"), "AccessDenied", "anonymous GET")
    expect(code(anon.get_object, Bucket="al-nope", Key="x"), "NoSuchBucket", "anonymous, no bucket")
    # A missing key: NoSuchKey only to whoever may list.
    expect(code(alice.get_object, Bucket="al-default", Key="nope"), "NoSuchKey", "owner, missing")
    expect(code(bob.get_object, Bucket="al-default", Key="nope"), "AccessDenied", "bob, missing")
    print("ok: owners, private by default, admin, missing keys")

    # ----------------------------------------------------------- ListBuckets
    names = ["al-list-%d" % i for i in range(5)]
    for n in names:
        alice.create_bucket(Bucket=n)
    mine = sorted(names + ["al-default"])
    expect(sorted(b["Name"] for b in alice.list_buckets()["Buckets"]), mine, "alice's own buckets")
    expect([b["Name"] for b in bob.list_buckets()["Buckets"]], [], "bob sees none of them")
    expect([b["Name"] for b in root.list_buckets()["Buckets"]], [], "root lists its own only")
    # Paging by hand-signed requests: Debian's botocore predates
    # ListBuckets' max-buckets / continuation-token / prefix parameters
    # (it would drop them without a word).
    def list_raw(ak, sk, query):
        h, _, _ = s3sign.Signer(ak, sk).sign_headers(
            "GET", "/", {"host": "127.0.0.1:%d" % aio.port}, s3sign.EMPTY_SHA, query=query)
        qs = "&".join("%s=%s" % (k, urllib.parse.quote(v, safe="-_.~")) for k, v in query.items())
        return s3sign.request(aio.port, "GET", "/?" + qs if qs else "/", h)

    def tag(body, name):
        return re.findall(r"<%s>([^<]*)</%s>" % (name, name), body.decode())

    pages, token = [], None
    while True:
        q = {"max-buckets": "2", "prefix": "al-list-"}
        if token:
            q["continuation-token"] = token
        st, _, body = list_raw(ak_a, sk_a, q)
        expect(st, 200, "ListBuckets page status")
        pages.append(tag(body, "Name"))
        token = (tag(body, "ContinuationToken") or [None])[0]
        expect(tag(body, "Prefix"), ["al-list-"], "Prefix echoed")
        if not token or len(pages) > 5:
            break
    expect(pages, [names[0:2], names[2:4], names[4:5]], "paged by 2 with a prefix")
    for bad in ("0", "10001"):
        st, _, body = list_raw(ak_a, sk_a, {"max-buckets": bad})
        expect(s3sign.error_code(body), "InvalidArgument", "max-buckets " + bad)
    out = subprocess.run(admin + ["--json", "bucket", "ls"], check=True, capture_output=True,
                         text=True).stdout
    for n in mine:
        expect(n in out, True, "iolake-admin bucket ls shows %s" % n)
    print("ok: ListBuckets: own buckets, paging, prefix; iolake-admin sees all")

    # --------------------------------------------- canned ACLs on buckets
    # Bucket ACL x operation x principal (ObjectWriter buckets of alice's;
    # "get" reads a private object of alice's, so only she may).
    A, D = OK, "AccessDenied"
    owner_only = {"owner": A, "other": D, "anon": D}
    everyone = {"owner": A, "other": A, "anon": A}
    users = {"owner": A, "other": A, "anon": D}
    bucket_matrix = {
        "private":            {"list": owner_only, "put": owner_only, "delete": owner_only},
        "public-read":        {"list": everyone,   "put": owner_only, "delete": owner_only},
        "public-read-write":  {"list": everyone,   "put": everyone,   "delete": everyone},
        "authenticated-read": {"list": users,      "put": owner_only, "delete": owner_only},
        # Ignored on buckets (AWS): private.
        "bucket-owner-read":  {"list": owner_only, "put": owner_only, "delete": owner_only},
        "bucket-owner-full-control": {"list": owner_only, "put": owner_only,
                                      "delete": owner_only},
    }
    for i, (canned, row) in enumerate(bucket_matrix.items()):
        b = "al-b%d" % i
        alice.create_bucket(Bucket=b, ACL=canned, ObjectOwnership="ObjectWriter")
        alice.put_object(Bucket=b, Key="obj", Body=b"o")
        for w, c in who.items():
            expect(code(c.list_objects_v2, Bucket=b), row["list"][w], "%s bucket: list as %s" % (canned, w))
            expect(code(c.head_bucket, Bucket=b), row["list"][w], "%s bucket: head as %s" % (canned, w))
            expect(code(c.put_object, Bucket=b, Key="new-" + w, Body=b"n"), row["put"][w],
                   "%s bucket: put as %s" % (canned, w))
            alice.put_object(Bucket=b, Key="del-" + w, Body=b"d")
            expect(code(c.delete_object, Bucket=b, Key="del-" + w), row["delete"][w],
                   "%s bucket: delete as %s" % (canned, w))
            expect(code(c.get_object, Bucket=b, Key="obj"), owner_only[w],
                   "%s bucket: get a private object as %s" % (canned, w))
            expect(code(c.get_bucket_acl, Bucket=b), owner_only[w],
                   "%s bucket: get ACL as %s" % (canned, w))
            expect(code(c.put_bucket_acl, Bucket=b, ACL=canned), owner_only[w],
                   "%s bucket: put ACL as %s" % (canned, w))
    print("ok: canned ACLs on buckets x list/head/put/delete/get/get-acl/put-acl x owner/other/anon")

    # --------------------------------------------- canned ACLs on objects
    # In alice's private ObjectWriter bucket, objects alice writes with each
    # canned ACL. Overwrite and delete are the bucket's WRITE (alice only).
    alice.create_bucket(Bucket="al-objs", ObjectOwnership="ObjectWriter")
    object_matrix = {
        "private":            {"get": owner_only},
        "public-read":        {"get": everyone},
        "public-read-write":  {"get": everyone},
        "authenticated-read": {"get": users},
        # alice owns both object and bucket: these are private.
        "bucket-owner-read":  {"get": owner_only},
        "bucket-owner-full-control": {"get": owner_only},
    }
    for canned, row in object_matrix.items():
        k = "o-" + canned
        alice.put_object(Bucket="al-objs", Key=k, Body=b"v", ACL=canned)
        for w, c in who.items():
            expect(code(c.get_object, Bucket="al-objs", Key=k), row["get"][w],
                   "%s object: get as %s" % (canned, w))
            expect(code(c.head_object, Bucket="al-objs", Key=k), row["get"][w],
                   "%s object: head as %s" % (canned, w))
            expect(code(c.get_object_acl, Bucket="al-objs", Key=k), owner_only[w],
                   "%s object: get ACL as %s" % (canned, w))
            expect(code(c.put_object_acl, Bucket="al-objs", Key=k, ACL=canned), owner_only[w],
                   "%s object: put ACL as %s" % (canned, w))
            expect(code(c.put_object, Bucket="al-objs", Key=k, Body=b"v", ACL=canned),
                   owner_only[w], "%s object: overwrite as %s" % (canned, w))
            expect(code(c.list_objects_v2, Bucket="al-objs"), owner_only[w],
                   "%s object: list as %s" % (canned, w))
        expect(code(bob.delete_object, Bucket="al-objs", Key=k), "AccessDenied",
               "%s object: delete as other" % canned)
        expect(code(anon.delete_object, Bucket="al-objs", Key=k), "AccessDenied",
               "%s object: delete as anon" % canned)
        expect(code(alice.delete_object, Bucket="al-objs", Key=k), OK,
               "%s object: delete as owner" % canned)
    g = alice.put_object(Bucket="al-objs", Key="pr", Body=b"v", ACL="public-read")
    acl = alice.get_object_acl(Bucket="al-objs", Key="pr")
    grants = sorted((x["Grantee"].get("ID") or x["Grantee"].get("URI"), x["Permission"])
                    for x in acl["Grants"])
    expect(grants, sorted([(cid("alice"), "FULL_CONTROL"), (ALLUSERS, "READ")]),
           "public-read object's ACL")
    print("ok: canned ACLs on objects x get/head/get-acl/put-acl/overwrite/list/delete x "
          "owner/other/anon")

    # ------------------------ objects written by another user (ObjectWriter)
    # alice's bucket lets everyone write; bob's objects are bob's, and the
    # bucket-owner-* ACLs are what let alice (the bucket owner) see them.
    alice.create_bucket(Bucket="al-shared", ACL="public-read-write", ObjectOwnership="ObjectWriter")
    for canned, get, getacl in (("private", D, D), ("bucket-owner-read", A, D),
                                ("bucket-owner-full-control", A, A)):
        bob.put_object(Bucket="al-shared", Key="b-" + canned, Body=b"bob's", ACL=canned)
        expect(code(alice.get_object, Bucket="al-shared", Key="b-" + canned), get,
               "bucket owner reads bob's %s object" % canned)
        expect(code(alice.get_object_acl, Bucket="al-shared", Key="b-" + canned), getacl,
               "bucket owner reads bob's %s object's ACL" % canned)
        expect(bob.get_object_acl(Bucket="al-shared", Key="b-" + canned)["Owner"]["ID"],
               cid("bob"), "bob owns what he wrote (%s)" % canned)
        # The bucket's WRITE lets its owner delete whatever is in it.
        expect(code(alice.delete_object, Bucket="al-shared", Key="b-" + canned), OK,
               "bucket owner deletes bob's %s object" % canned)
    # BucketOwnerPreferred: bucket-owner-full-control makes alice the owner.
    alice.put_bucket_ownership_controls(
        Bucket="al-shared",
        OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    bob.put_object(Bucket="al-shared", Key="pref", Body=b"x", ACL="bucket-owner-full-control")
    expect(alice.get_object_acl(Bucket="al-shared", Key="pref")["Owner"]["ID"], cid("alice"),
           "BucketOwnerPreferred + bucket-owner-full-control: the bucket owner owns it")
    bob.put_object(Bucket="al-shared", Key="pref2", Body=b"x")
    expect(bob.get_object_acl(Bucket="al-shared", Key="pref2")["Owner"]["ID"], cid("bob"),
           "BucketOwnerPreferred without that ACL: the writer owns it")
    print("ok: ObjectWriter and BucketOwnerPreferred ownership of other users' objects")

    # ----------------------------------------------------- explicit grants
    alice.create_bucket(Bucket="al-grants", ObjectOwnership="ObjectWriter")
    expect(code(bob.list_objects_v2, Bucket="al-grants"), D, "before a grant")
    alice.put_bucket_acl(Bucket="al-grants", GrantRead="id=" + cid("bob"),
                         GrantFullControl='id="%s"' % cid("alice"))
    expect(code(bob.list_objects_v2, Bucket="al-grants"), OK, "READ granted to bob by id")
    expect(code(bob.put_object, Bucket="al-grants", Key="x", Body=b"x"), D, "READ is not WRITE")
    expect(code(anon.list_objects_v2, Bucket="al-grants"), D, "bob's grant is not anyone's")
    # The document form: WRITE to bob, READ_ACP to all users.
    alice.put_bucket_acl(Bucket="al-grants", AccessControlPolicy={
        "Owner": {"ID": cid("alice")},
        "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": cid("alice")}, "Permission": "FULL_CONTROL"},
            {"Grantee": {"Type": "CanonicalUser", "ID": cid("bob")}, "Permission": "WRITE"},
            {"Grantee": {"Type": "Group", "URI": AUTHUSERS}, "Permission": "READ_ACP"},
        ]})
    expect(code(bob.put_object, Bucket="al-grants", Key="x", Body=b"x"), OK, "WRITE granted by XML")
    expect(code(bob.list_objects_v2, Bucket="al-grants"), D, "the XML replaced the READ")
    got = bob.get_bucket_acl(Bucket="al-grants")
    expect(sorted((x["Grantee"].get("ID") or x["Grantee"].get("URI"), x["Permission"])
                  for x in got["Grants"]),
           sorted([(cid("alice"), "FULL_CONTROL"), (cid("bob"), "WRITE"),
                   (AUTHUSERS, "READ_ACP")]), "GetBucketAcl by an AuthenticatedUsers grantee")
    expect(code(anon.get_bucket_acl, Bucket="al-grants"), D, "AuthenticatedUsers is not anonymous")
    # An object made public to AllUsers by a grant header.
    alice.put_object(Bucket="al-grants", Key="pub", Body=b"public bytes", GrantRead="uri=" + ALLUSERS)
    expect(anon.get_object(Bucket="al-grants", Key="pub")["Body"].read(), b"public bytes",
           "AllUsers READ by grant: anonymous GET")
    # Errors.
    expect(code(alice.put_bucket_acl, Bucket="al-grants", ACL="private",
                GrantRead="id=" + cid("bob")), "InvalidRequest", "canned and grants")
    expect(code(alice.put_bucket_acl, Bucket="al-grants", GrantRead="emailAddress=a@b.c"),
           "UnresolvableGrantByEmailAddress", "grant by e-mail")
    expect(code(alice.put_bucket_acl, Bucket="al-grants", GrantRead="id=123"), "InvalidArgument",
           "a malformed id")
    expect(code(alice.put_bucket_acl, Bucket="al-grants", AccessControlPolicy={
        "Owner": {"ID": cid("bob")},
        "Grants": [{"Grantee": {"Type": "Group", "URI": ALLUSERS}, "Permission": "READ"}]}),
        "AccessDenied", "an ACL naming another owner")
    expect(code(alice.put_bucket_acl, Bucket="al-grants"), "MissingSecurityHeader",
           "neither headers nor a body")
    print("ok: grants by id and group, headers and XML, and their errors")

    # ------------------------------------------------ BucketOwnerEnforced
    alice.create_bucket(Bucket="al-enf")
    expect(code(alice.put_object, Bucket="al-enf", Key="k", Body=b"x", ACL="public-read"),
           "AccessControlListNotSupported", "enforced: PUT with public-read")
    expect(code(alice.put_object, Bucket="al-enf", Key="k", Body=b"x",
                ACL="bucket-owner-full-control"), OK, "enforced: bucket-owner-full-control")
    # private comes to the same once the bucket owner owns the object:
    # rclone sends it on every PUT, copy and multipart upload.
    expect(code(alice.put_object, Bucket="al-enf", Key="kp", Body=b"x", ACL="private"), OK,
           "enforced: PUT with private")
    expect(code(alice.copy_object, Bucket="al-enf", Key="kp2", CopySource="al-enf/kp",
                ACL="private"), OK, "enforced: copy with private")
    up = alice.create_multipart_upload(Bucket="al-enf", Key="mp", ACL="private")
    alice.abort_multipart_upload(Bucket="al-enf", Key="mp", UploadId=up["UploadId"])
    expect(code(alice.put_object, Bucket="al-enf", Key="kg", Body=b"x",
                GrantRead="id=" + cid("bob")), "AccessControlListNotSupported",
           "enforced: PUT granting another user")
    expect(code(alice.put_bucket_acl, Bucket="al-enf", ACL="public-read"),
           "AccessControlListNotSupported", "enforced: PutBucketAcl public-read")
    expect(code(alice.put_object_acl, Bucket="al-enf", Key="k", ACL="public-read"),
           "AccessControlListNotSupported", "enforced: PutObjectAcl public-read")
    expect(code(alice.copy_object, Bucket="al-enf", Key="k2", CopySource="al-enf/k",
                ACL="public-read"), "AccessControlListNotSupported", "enforced: copy with ACL")
    expect(code(alice.create_multipart_upload, Bucket="al-enf", Key="m", ACL="authenticated-read"),
           "AccessControlListNotSupported", "enforced: CreateMultipartUpload with ACL")
    expect(code(alice.create_bucket, Bucket="al-enf2", ACL="public-read"),
           "InvalidBucketAclWithObjectOwnership", "CreateBucket: enforced with an ACL")
    expect(code(alice.put_bucket_ownership_controls, Bucket="al-b1",
                OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}),
           "InvalidBucketAclWithObjectOwnership", "enforce on a public-read bucket")
    # Enforcing makes the bucket owner the owner of objects others wrote.
    bob.put_object(Bucket="al-b2", Key="bobs", Body=b"b")   # public-read-write bucket
    expect(code(alice.get_object, Bucket="al-b2", Key="bobs"), D, "ObjectWriter: bob's own")
    alice.put_bucket_acl(Bucket="al-b2", ACL="private")
    alice.put_bucket_ownership_controls(
        Bucket="al-b2", OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    expect(code(alice.get_object, Bucket="al-b2", Key="bobs"), OK, "enforced: the bucket owner owns it")
    expect(code(bob.get_object, Bucket="al-b2", Key="bobs"), D, "enforced: the writer does not")
    expect(alice.get_object_acl(Bucket="al-b2", Key="bobs")["Owner"]["ID"], cid("alice"),
           "enforced: GetObjectAcl shows the bucket owner")
    alice.delete_bucket_ownership_controls(Bucket="al-b2")
    expect(code(alice.get_bucket_ownership_controls, Bucket="al-b2"),
           "OwnershipControlsNotFoundError", "deleted ownership controls")
    expect(code(bob.put_bucket_ownership_controls, Bucket="al-b2",
                OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]}), D,
           "ownership controls are the bucket owner's")
    print("ok: BucketOwnerEnforced, ownership controls")

    # ----------------------------------------------------- copies, uploads
    bob.create_bucket(Bucket="bo-dst")
    expect(code(bob.copy_object, Bucket="bo-dst", Key="c", CopySource="al-default/secret"), D,
           "copy needs READ on the source")
    expect(code(bob.copy_object, Bucket="bo-dst", Key="c", CopySource="al-objs/pr"), OK,
           "copy of a public-read source")
    expect(code(bob.copy_object, Bucket="al-default", Key="c", CopySource="bo-dst/c"), D,
           "copy needs WRITE on the destination")
    expect(code(bob.create_multipart_upload, Bucket="al-default", Key="m"), D,
           "multipart into someone else's bucket")
    u = alice.create_multipart_upload(Bucket="al-objs", Key="mp", ACL="public-read")
    p = alice.upload_part(Bucket="al-objs", Key="mp", UploadId=u["UploadId"], PartNumber=1,
                          Body=b"part")
    expect(code(bob.upload_part, Bucket="al-objs", Key="mp", UploadId=u["UploadId"],
                PartNumber=2, Body=b"x"), D, "bob uploads a part into alice's upload")
    expect(code(bob.list_parts, Bucket="al-objs", Key="mp", UploadId=u["UploadId"]), D,
           "bob lists alice's parts")
    expect(code(bob.abort_multipart_upload, Bucket="al-objs", Key="mp", UploadId=u["UploadId"]),
           D, "bob aborts alice's upload")
    alice.complete_multipart_upload(Bucket="al-objs", Key="mp", UploadId=u["UploadId"],
                                    MultipartUpload={"Parts": [{"ETag": p["ETag"], "PartNumber": 1}]})
    expect(anon.get_object(Bucket="al-objs", Key="mp")["Body"].read(), b"part",
           "the upload's canned ACL on the completed object")
    expect(code(bob.get_object_tagging, Bucket="al-objs", Key="mp"), D, "tagging is the owner's")
    expect(code(bob.delete_objects, Bucket="al-objs", Delete={"Objects": [{"Key": "mp"}]}), D,
           "DeleteObjects needs WRITE")
    print("ok: copies, multipart uploads, tagging, DeleteObjects")

    # --------------------------------------------------------------- aws-cli
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak_a, AWS_SECRET_ACCESS_KEY=sk_a,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null",
               AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    cli = ["aws", "--endpoint-url", aio.ep, "s3api"]
    alice.create_bucket(Bucket="al-cli", ObjectOwnership="ObjectWriter")
    alice.put_object(Bucket="al-cli", Key="web/index.html", Body=b"<h1>hi</h1>", ACL="public-read")
    subprocess.run(cli + ["put-bucket-acl", "--bucket", "al-cli", "--acl", "public-read"],
                   check=True, env=env, capture_output=True)
    out = subprocess.run(cli + ["get-object-acl", "--bucket", "al-cli", "--key", "web/index.html"],
                         check=True, env=env, capture_output=True, text=True).stdout
    j = json.loads(out)
    expect(j["Owner"]["ID"], cid("alice"), "aws-cli get-object-acl Owner")
    expect(any(g["Grantee"].get("URI") == ALLUSERS and g["Permission"] == "READ"
               for g in j["Grants"]), True, "aws-cli get-object-acl shows AllUsers READ")
    body = urllib.request.urlopen(aio.ep + "/al-cli/web/index.html").read()
    expect(body, b"<h1>hi</h1>", "anonymous curl-style GET of a public-read object")
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                        aio.ep + "/al-cli/web/index.html"], capture_output=True, text=True)
    expect(r.stdout, "200", "curl GET of a public-read object")
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                        aio.ep + "/al-default/secret"], capture_output=True, text=True)
    expect(r.stdout, "403", "curl GET of a private object")
    r = subprocess.run(["curl", "-s", aio.ep + "/al-cli?list-type=2"], capture_output=True,
                       text=True)
    expect("<Key>web/index.html</Key>" in r.stdout, True, "curl lists a public-read bucket")
    print("ok: aws-cli put-bucket-acl / get-object-acl, anonymous curl")


if __name__ == "__main__":
    main()
