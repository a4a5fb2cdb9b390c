#!/usr/bin/env python3
"""test_s3_object_lock.py — S3 Object Lock (issue 17, must-show 2) on
iolake-aio with Debian's boto3 (1.26: it has every object lock call):

- Buckets: CreateBucket with ObjectLockEnabledForBucket turns versioning
  on, and it can no longer be suspended (InvalidBucketState); Get/Put
  ObjectLockConfiguration (ObjectLockConfigurationNotFoundError on a bucket
  without; enabling on an existing bucket needs versioning Enabled:
  InvalidBucketState; then it works); lock headers, retention and legal
  hold on a bucket without lock: InvalidRequest; bad headers:
  InvalidArgument; a PUT with lock headers but neither Content-MD5 nor a
  checksum: InvalidRequest (a hand-signed request: s3sign.py).
- COMPLIANCE (a retain-until 4 s ahead) survives its owner and root, with
  and without x-amz-bypass-governance-retention, through DeleteObject
  ?versionId, DeleteObjects with VersionIds, an overwrite of the key, a
  multipart upload over the key that is aborted and one that completes,
  the null version of a key locked after the fact, and the op the
  lifecycle worker sends (a DeleteObject of that version id: the same
  meta op, decided in the same place) — with its bytes intact through GC
  rounds; a DELETE without a version id only adds a marker; its retention
  can be extended, not shortened nor turned to GOVERNANCE nor removed;
  after its date it deletes fine and its shards are freed.
- GOVERNANCE: bob, with a write grant, is refused with the bypass header
  (no s3:BypassGovernanceRetention) and without; alice (the owner)
  without the header is refused, with it succeeds; a bucket policy
  allowing bob s3:BypassGovernanceRetention lets him too; shortening it
  needs the bypass.
- Legal hold (a header on PUT, and Put/GetObjectLegalHold): blocks every
  delete, bypass or not, until removed.
- The bucket default (Days) applies to a PUT without headers, a COPY and
  a multipart upload; explicit headers on COPY and CreateMultipartUpload;
  GET/HEAD answer x-amz-object-lock-mode, -retain-until-date and
  -legal-hold; Get/PutObjectRetention by version id.
- aws-cli s3api: get-object-lock-configuration, put-object-retention,
  get-object-retention."""
import base64, datetime, hashlib, json, os, subprocess, sys, time

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402
import s3sign  # noqa: E402

FAILS = []
OK = "OK"
D = "AccessDenied"
LOCK_S = 4   # the COMPLIANCE retention, seconds ahead


def expect(got, want, what):
    if got != want:
        FAILS.append("%s: got %r want %r" % (what, got, want))
        print("FAIL: %s: got %r want %r" % (what, got, want))
    else:
        print("ok:", what)


def code(fn, **kw):
    try:
        fn(**kw)
        return OK
    except ClientError as e:
        return e.response["Error"]["Code"]


def md5(b):
    return base64.b64encode(hashlib.md5(b).digest()).decode()


def utc(sec_ahead):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=sec_ahead)


def put(c, b, k, body, **kw):
    return c.put_object(Bucket=b, Key=k, Body=body, ContentMD5=md5(body), **kw)["VersionId"]


def admin_run(admin, *args):
    r = subprocess.run(admin + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        FAILS.append("iolake-admin %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def api(aio, path):
    env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK)
    p = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data, "api", "GET",
                        path], capture_output=True, text=True, check=True, env=env)
    return json.loads(p.stdout)


def wait_for(what, fn, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if fn():
            print("ok:", what)
            return True
        time.sleep(0.2)
    FAILS.append(what)
    print("FAIL:", what)
    return False


def buckets(alice, root, aio):
    b = "lockb"
    alice.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    expect(alice.get_bucket_versioning(Bucket=b).get("Status"), "Enabled",
           "a lock bucket has versioning Enabled")
    expect(code(alice.put_bucket_versioning, Bucket=b,
                VersioningConfiguration={"Status": "Suspended"}), "InvalidBucketState",
           "versioning of a lock bucket cannot be suspended")
    cfg = alice.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    expect((cfg.get("ObjectLockEnabled"), cfg.get("Rule")), ("Enabled", None),
           "GetObjectLockConfiguration: Enabled, no default")

    p = "plainb"
    alice.create_bucket(Bucket=p)
    expect(code(alice.get_object_lock_configuration, Bucket=p),
           "ObjectLockConfigurationNotFoundError", "no lock: ObjectLockConfigurationNotFoundError")
    expect(code(alice.put_object, Bucket=p, Key="x", Body=b"x", ContentMD5=md5(b"x"),
                ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=utc(60)),
           "InvalidRequest", "lock headers on a bucket without lock: InvalidRequest")
    alice.put_object(Bucket=p, Key="x", Body=b"x")
    expect(code(alice.put_object_retention, Bucket=p, Key="x",
                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(60)}),
           "InvalidRequest", "PutObjectRetention on a bucket without lock: InvalidRequest")
    expect(code(alice.put_object_legal_hold, Bucket=p, Key="x", LegalHold={"Status": "ON"}),
           "InvalidRequest", "PutObjectLegalHold on a bucket without lock: InvalidRequest")
    lockcfg = {"ObjectLockEnabled": "Enabled"}
    expect(code(alice.put_object_lock_configuration, Bucket=p, ObjectLockConfiguration=lockcfg),
           "InvalidBucketState", "enabling lock without versioning: InvalidBucketState")
    alice.put_bucket_versioning(Bucket=p, VersioningConfiguration={"Status": "Enabled"})
    expect(code(alice.put_object_lock_configuration, Bucket=p, ObjectLockConfiguration=lockcfg),
           OK, "enabling lock on an existing versioned bucket")
    expect(code(alice.put_object_lock_configuration, Bucket=p, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 0}}}),
        "InvalidArgument", "a default of 0 days: InvalidArgument")
    time.sleep(1.2)   # the gateway's bucket record may be a second old
    expect(code(alice.put_bucket_versioning, Bucket=p,
                VersioningConfiguration={"Status": "Suspended"}), "InvalidBucketState",
           "versioning cannot be suspended once lock is on")

    # bad headers
    for kw, want, what in (
            ({"ObjectLockMode": "GOVERNANCE"}, "InvalidArgument", "a mode without a date"),
            ({"ObjectLockRetainUntilDate": utc(60)}, "InvalidArgument", "a date without a mode"),
            ({"ObjectLockMode": "FOREVER", "ObjectLockRetainUntilDate": utc(60)},
             "InvalidArgument", "an unknown mode"),
            ({"ObjectLockMode": "COMPLIANCE", "ObjectLockRetainUntilDate": utc(-60)},
             "InvalidArgument", "a date in the past"),
            ({"ObjectLockLegalHoldStatus": "MAYBE"}, "InvalidArgument", "a bad legal hold")):
        expect(code(alice.put_object, Bucket=b, Key="bad", Body=b"x", ContentMD5=md5(b"x"), **kw),
               want, "PUT with %s: %s" % (what, want))

    # lock headers need Content-MD5 or a checksum (hand-signed: no MD5)
    body = b"no integrity header"
    signer = s3sign.Signer(AK, SK)
    host = "127.0.0.1:%d" % aio.port
    hdrs = {"host": host, "content-length": str(len(body)),
            "x-amz-object-lock-mode": "GOVERNANCE",
            "x-amz-object-lock-retain-until-date": utc(60).strftime("%Y-%m-%dT%H:%M:%SZ")}
    h, _, _ = signer.sign_headers("PUT", "/%s/nomd5" % b, hdrs, hashlib.sha256(body).hexdigest())
    st, _, rb = s3sign.request(aio.port, "PUT", "/%s/nomd5" % b, h, body)
    expect((st, s3sign.error_code(rb)), (400, "InvalidRequest"),
           "PUT with lock headers and no Content-MD5: 400 InvalidRequest")
    hdrs["content-md5"] = md5(body)
    h, _, _ = signer.sign_headers("PUT", "/%s/nomd5" % b, hdrs, hashlib.sha256(body).hexdigest())
    st, _, rb = s3sign.request(aio.port, "PUT", "/%s/nomd5" % b, h, body)
    expect(st, 200, "the same PUT with Content-MD5: 200")
    return b


def compliance(aio, alice, root, b):
    big = os.urandom(300000)   # erasure-coded: shards the GC would free
    until = utc(LOCK_S)
    v1 = put(alice, b, "c", big, ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)
    h = alice.head_object(Bucket=b, Key="c", VersionId=v1)
    expect((h.get("ObjectLockMode"), h.get("ObjectLockLegalHoldStatus")), ("COMPLIANCE", None),
           "HEAD: x-amz-object-lock-mode COMPLIANCE")
    # (botocore sends header dates in whole seconds)
    expect(int(h["ObjectLockRetainUntilDate"].timestamp()), int(until.timestamp()),
           "HEAD: x-amz-object-lock-retain-until-date")
    r = alice.get_object_retention(Bucket=b, Key="c", VersionId=v1)["Retention"]
    expect(r["Mode"], "COMPLIANCE", "GetObjectRetention by version id")

    for who, c in (("owner", alice), ("root", root)):
        for bypass in (False, True):
            kw = {"BypassGovernanceRetention": True} if bypass else {}
            tag = "%s%s" % (who, " with the bypass header" if bypass else "")
            expect(code(c.delete_object, Bucket=b, Key="c", VersionId=v1, **kw), D,
                   "COMPLIANCE: DeleteObject ?versionId by %s: AccessDenied" % tag)
            r = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "c", "VersionId": v1}]}, **kw)
            expect([(e["Key"], e["Code"]) for e in r.get("Errors", [])], [("c", D)],
                   "COMPLIANCE: DeleteObjects with the VersionId by %s: AccessDenied" % tag)
    # the lifecycle worker's expiry of a version is this same meta op
    # (DeleteObject with the version id, no bypass, stamped now)
    expect(code(root.delete_object, Bucket=b, Key="c", VersionId=v1), D,
           "COMPLIANCE: the lifecycle worker's op (DeleteObject of the version): AccessDenied")
    # retention only extends
    for ret, what in (({"Mode": "COMPLIANCE", "RetainUntilDate": utc(1)}, "shortened"),
                      ({"Mode": "GOVERNANCE", "RetainUntilDate": utc(LOCK_S + 60)}, "to GOVERNANCE")):
        for c in (alice, root):
            expect(code(c.put_object_retention, Bucket=b, Key="c", VersionId=v1, Retention=ret,
                        BypassGovernanceRetention=True), D,
                   "COMPLIANCE retention %s (bypass header): AccessDenied" % what)
    expect(code(root.put_object_retention, Bucket=b, Key="c", VersionId=v1, Retention={},
                BypassGovernanceRetention=True), D, "COMPLIANCE retention removed: AccessDenied")
    until = until + datetime.timedelta(seconds=1)
    expect(code(alice.put_object_retention, Bucket=b, Key="c", VersionId=v1,
                Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until}), OK,
           "COMPLIANCE retention extended by 1 s")
    # a DELETE without a version id: a marker, the version stays
    d = alice.delete_object(Bucket=b, Key="c")
    expect(d.get("DeleteMarker"), True, "DELETE without a version id: a delete marker (allowed)")
    alice.delete_object(Bucket=b, Key="c", VersionId=d["VersionId"])
    # overwrite: a new version on top
    v2 = put(alice, b, "c", b"over")
    expect(v2 != v1, True, "an overwrite makes a new version")
    # multipart over the key: aborted, and completed
    for finish in ("abort", "complete"):
        u = alice.create_multipart_upload(Bucket=b, Key="c")["UploadId"]
        e = alice.upload_part(Bucket=b, Key="c", UploadId=u, PartNumber=1, Body=b"mp" * 1000)["ETag"]
        if finish == "abort":
            alice.abort_multipart_upload(Bucket=b, Key="c", UploadId=u)
        else:
            alice.complete_multipart_upload(Bucket=b, Key="c", UploadId=u, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": e}]})
    time.sleep(1.2)   # GC rounds (--gc-interval 300ms)
    expect(alice.get_object(Bucket=b, Key="c", VersionId=v1)["Body"].read() == big, True,
           "COMPLIANCE version byte for byte after deletes, overwrite, abort, complete, GC rounds")
    expect(api(aio, "cluster")["members"][0]["gc_queue"], 0, "nothing of it queued for GC")

    # the null version of a key written before versioning and lock, locked
    # after the fact
    p = "nullb"
    alice.create_bucket(Bucket=p)
    alice.put_object(Bucket=p, Key="n", Body=b"null version")
    alice.put_bucket_versioning(Bucket=p, VersioningConfiguration={"Status": "Enabled"})
    alice.put_object_lock_configuration(Bucket=p, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled"})
    time.sleep(1.2)   # the gateway's bucket record may be a second old
    expect(code(alice.put_object_retention, Bucket=p, Key="n", VersionId="null",
                Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until}), OK,
           "COMPLIANCE on the null version")
    expect(code(root.delete_object, Bucket=p, Key="n", VersionId="null",
                BypassGovernanceRetention=True), D,
           "COMPLIANCE null version: DELETE ?versionId=null by root: AccessDenied")
    put(alice, p, "n", b"over the null one")
    expect(alice.get_object(Bucket=p, Key="n", VersionId="null")["Body"].read(), b"null version",
           "COMPLIANCE null version survives an overwrite")

    # until its date; then it goes
    time.sleep(max(0.0, until.timestamp() - time.time()) + 0.3)
    expect(code(alice.delete_object, Bucket=b, Key="c", VersionId=v1), OK,
           "after its date: DeleteObject ?versionId succeeds")
    expect(code(alice.get_object, Bucket=b, Key="c", VersionId=v1), "NoSuchVersion",
           "the version is gone")
    expect(code(alice.delete_object, Bucket=p, Key="n", VersionId="null"), OK,
           "after its date: the null version deletes")
    wait_for("its shards freed (GC queue drained)",
             lambda: api(aio, "cluster")["members"][0]["gc_queue"] == 0)


def governance(alice, bob, b):
    until = utc(600)
    vs = [put(alice, b, "g%d" % i, b"gov", ObjectLockMode="GOVERNANCE",
              ObjectLockRetainUntilDate=until) for i in range(3)]
    expect(code(bob.delete_object, Bucket=b, Key="g0", VersionId=vs[0],
                BypassGovernanceRetention=True), D,
           "GOVERNANCE: bob (write grant, no bypass right) with the header: AccessDenied")
    expect(code(bob.delete_object, Bucket=b, Key="g0", VersionId=vs[0]), D,
           "GOVERNANCE: bob without the header: AccessDenied")
    r = bob.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "g0", "VersionId": vs[0]}]},
                           BypassGovernanceRetention=True)
    expect([e["Code"] for e in r.get("Errors", [])], [D],
           "GOVERNANCE: bob's DeleteObjects with the header: AccessDenied")
    expect(code(alice.delete_object, Bucket=b, Key="g0", VersionId=vs[0]), D,
           "GOVERNANCE: the owner without the header: AccessDenied")
    expect(code(alice.put_object_retention, Bucket=b, Key="g1", VersionId=vs[1],
                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(300)}), D,
           "GOVERNANCE shortened without the header: AccessDenied")
    expect(code(alice.put_object_retention, Bucket=b, Key="g1", VersionId=vs[1],
                Retention={"Mode": "GOVERNANCE", "RetainUntilDate": utc(300)},
                BypassGovernanceRetention=True), OK, "GOVERNANCE shortened with the header")
    expect(code(alice.delete_object, Bucket=b, Key="g0", VersionId=vs[0],
                BypassGovernanceRetention=True), OK, "GOVERNANCE: the owner with the header: deleted")
    r = alice.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "g1", "VersionId": vs[1]}]},
                             BypassGovernanceRetention=True)
    expect(([d["Key"] for d in r.get("Deleted", [])], r.get("Errors", [])), (["g1"], []),
           "GOVERNANCE: the owner's DeleteObjects with the header: deleted")
    # a policy giving bob the right
    alice.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3:BypassGovernanceRetention",
        "Resource": "arn:aws:s3:::%s/*" % b}]}))
    time.sleep(1.2)   # the gateway's bucket record may be a second old
    expect(code(bob.delete_object, Bucket=b, Key="g2", VersionId=vs[2]), D,
           "GOVERNANCE: bob with the right but no header: AccessDenied")
    expect(code(bob.delete_object, Bucket=b, Key="g2", VersionId=vs[2],
                BypassGovernanceRetention=True), OK,
           "GOVERNANCE: bob with a policy allowing s3:BypassGovernanceRetention and the header")
    alice.delete_bucket_policy(Bucket=b)


def legal_hold(alice, root, b):
    v = put(alice, b, "h", b"held", ObjectLockLegalHoldStatus="ON")
    expect(alice.head_object(Bucket=b, Key="h").get("ObjectLockLegalHoldStatus"), "ON",
           "HEAD: x-amz-object-lock-legal-hold ON")
    expect(alice.get_object_legal_hold(Bucket=b, Key="h", VersionId=v)["LegalHold"]["Status"], "ON",
           "GetObjectLegalHold: ON")
    for c in (alice, root):
        expect(code(c.delete_object, Bucket=b, Key="h", VersionId=v,
                    BypassGovernanceRetention=True), D, "legal hold: delete with bypass: AccessDenied")
    alice.put_object_legal_hold(Bucket=b, Key="h", VersionId=v, LegalHold={"Status": "OFF"})
    expect(alice.get_object_legal_hold(Bucket=b, Key="h", VersionId=v)["LegalHold"]["Status"], "OFF",
           "GetObjectLegalHold: OFF")
    expect(code(alice.delete_object, Bucket=b, Key="h", VersionId=v), OK,
           "legal hold removed: the version deletes")


def defaults(alice, b):
    alice.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    cfg = alice.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    expect(cfg.get("Rule"), {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}},
           "GetObjectLockConfiguration: the default rule")
    time.sleep(1.2)   # the gateway's bucket record may be a second old
    t0 = time.time()
    v = alice.put_object(Bucket=b, Key="d", Body=b"default")["VersionId"]
    h = alice.head_object(Bucket=b, Key="d")
    ahead = h["ObjectLockRetainUntilDate"].timestamp() - t0
    expect((h.get("ObjectLockMode"), abs(ahead - 86400) < 5), ("GOVERNANCE", True),
           "a PUT without headers gets the default (GOVERNANCE, 1 day)")
    expect(code(alice.delete_object, Bucket=b, Key="d", VersionId=v), D,
           "the default retention holds")
    g = alice.get_object(Bucket=b, Key="d")
    expect(g.get("ObjectLockMode"), "GOVERNANCE", "GET: x-amz-object-lock-mode")
    # COPY: the default, or its own headers (never the source's)
    alice.copy_object(Bucket=b, Key="d2", CopySource={"Bucket": b, "Key": "d"})
    expect(alice.head_object(Bucket=b, Key="d2").get("ObjectLockMode"), "GOVERNANCE",
           "COPY: the default applies")
    until = utc(3600).replace(microsecond=0)
    alice.copy_object(Bucket=b, Key="d3", CopySource={"Bucket": b, "Key": "d"},
                      ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until)
    h = alice.head_object(Bucket=b, Key="d3")
    expect((h.get("ObjectLockMode"), h["ObjectLockRetainUntilDate"].timestamp()),
           ("COMPLIANCE", until.timestamp()), "COPY with lock headers")
    # multipart: headers on CreateMultipartUpload, and the default
    u = alice.create_multipart_upload(Bucket=b, Key="m", ObjectLockMode="COMPLIANCE",
                                      ObjectLockRetainUntilDate=until)["UploadId"]
    e = alice.upload_part(Bucket=b, Key="m", UploadId=u, PartNumber=1, Body=b"m" * 100)["ETag"]
    vm = alice.complete_multipart_upload(Bucket=b, Key="m", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})["VersionId"]
    h = alice.head_object(Bucket=b, Key="m")
    expect((h.get("ObjectLockMode"), h["ObjectLockRetainUntilDate"].timestamp()),
           ("COMPLIANCE", until.timestamp()), "multipart: CreateMultipartUpload's lock headers")
    expect(code(alice.delete_object, Bucket=b, Key="m", VersionId=vm, BypassGovernanceRetention=True),
           D, "the completed multipart object is locked")
    u = alice.create_multipart_upload(Bucket=b, Key="m2")["UploadId"]
    e = alice.upload_part(Bucket=b, Key="m2", UploadId=u, PartNumber=1, Body=b"m" * 100)["ETag"]
    alice.complete_multipart_upload(Bucket=b, Key="m2", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e}]})
    expect(alice.head_object(Bucket=b, Key="m2").get("ObjectLockMode"), "GOVERNANCE",
           "multipart: the default applies")
    alice.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled"})
    cfg = alice.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    expect((cfg.get("ObjectLockEnabled"), cfg.get("Rule")), ("Enabled", None), "the default removed")
    expect(code(alice.get_object_retention, Bucket=b, Key="nosuch"), "NoSuchKey",
           "GetObjectRetention of a missing key: NoSuchKey")
    put(alice, b, "none", b"x")
    time.sleep(1.2)
    v = put(alice, b, "none", b"y")
    expect(code(alice.get_object_retention, Bucket=b, Key="none", VersionId=v),
           "NoSuchObjectLockConfiguration", "GetObjectRetention of a version without one")


def cli(aio, ak, sk, b):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk,
               AWS_DEFAULT_REGION="us-east-1", PATH="/usr/bin:/bin")
    base = ["aws", "--endpoint-url", aio.ep, "s3api"]

    def run(*a):
        return subprocess.run(base + list(a), capture_output=True, text=True, env=env)
    r = run("get-object-lock-configuration", "--bucket", b)
    expect((r.returncode, '"Enabled"' in r.stdout), (0, True), "aws s3api get-object-lock-configuration")
    body = os.path.join(aio.tmp, "clibody")
    open(body, "wb").write(b"cli")
    run("put-object", "--bucket", b, "--key", "cli", "--body", body)
    until = utc(3600).strftime("%Y-%m-%dT%H:%M:%SZ")
    r = run("put-object-retention", "--bucket", b, "--key", "cli", "--retention",
            "Mode=GOVERNANCE,RetainUntilDate=%s" % until)
    expect(r.returncode, 0, "aws s3api put-object-retention (%s)" % r.stderr.strip()[-200:])
    r = run("get-object-retention", "--bucket", b, "--key", "cli")
    expect((r.returncode, '"GOVERNANCE"' in r.stdout), (0, True), "aws s3api get-object-retention")


def main():
    aio = Aio(args=["--gc-interval", "300ms"])
    aio.start()
    try:
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        admin = [os.path.join(BUILD, "iolake-admin"), "--meta", meta]
        ak_a, sk_a = aio.add_user("alice")
        ak_b, sk_b = aio.add_user("bob")
        root = aio.client()
        alice = aio.client(ak=ak_a, sk=sk_a)
        bob = aio.client(ak=ak_b, sk=sk_b)
        b = buckets(alice, root, aio)
        admin_run(admin, "user", "grant", "bob", "--bucket", b, "--write")
        compliance(aio, alice, root, b)
        governance(alice, bob, b)
        legal_hold(alice, root, b)
        defaults(alice, b)
        cli(aio, ak_a, sk_a, b)
        rc, _ = aio.stop(limit=15)
        expect(rc, 0, "iolake-aio exits 0 on SIGTERM")
    finally:
        aio.close()
    if FAILS:
        print("%d failures" % len(FAILS))
        for f in FAILS:
            print("  " + f)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
