#!/usr/bin/env python3
"""test_bucket_cache.py — a gateway's cached bucket record never lets a PUT
commit on a bucket setting that changed (issue 19, gateway/gw_bcache.h):
three iolake-meta members, three iolake-osd (EC 2+1; every object here is
inline, at most 4 KiB), two iolake-gw (A and B, each with its own cache),
boto3.

Each step warms B's cache with a PUT through B, changes the bucket
through A, then sends the very next PUT through B, which must obey the
change although B's cache still holds the old record:

  1. A bucket policy granting bob s3:PutObject, then deleted: bob's next
     PUT through B is refused 403 and writes nothing (the commit carries
     the cached record's digest; meta refuses it; B reads and decides
     again).
  2. The same with a bucket ACL granting bob WRITE, then made private.
  3. A grant where B's cache says "refused": bob's next PUT passes (a
     refusal is never taken from the cache).
  4. Versioning enabled: the next PUT keeps the older version (two
     versions listed) and answers a version id.
  5. Object lock default retention set: the next PUT gets it.
  6. A user quota set on the owner (objects: one more than stored): the
     next PUT passes, the one after is refused 403 QuotaExceeded.
  7. The bucket deleted: the next PUT answers NoSuchBucket.

B's /metrics must show cache hits and stale commits (the path was taken).
Every process is killed and the temp dir removed, pass or fail.
"""
import hashlib, os, re, sys, urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import free_port  # noqa: E402
from procs_py import Procs, admin, expect, free_pair, wait_for  # noqa: E402

P = Procs("iolake-bcache.")
TMP = P.tmp


def client(ep, ak, sk):
    return boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def cid(user):
    """IOLake's canonical user id (as test_s3_acl.py)."""
    return hashlib.sha256(("iolake-user:" + user).encode()).hexdigest()


def err(fn, **kw):
    try:
        fn(**kw)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


def metric(ep, name):
    text = urllib.request.urlopen(ep + "/metrics", timeout=5).read().decode()
    m = re.search(r"^%s (\d+)" % name, text, re.M)
    return int(m.group(1)) if m else 0


def main():
    ports = [free_pair() for _ in range(3)]
    while len(set(ports)) < 3 or any(abs(a - b) < 2 for a in ports for b in ports if a != b):
        ports = [free_pair() for _ in range(3)]
    addrs = ["127.0.0.1:%d" % p for p in ports]
    peers = ",".join("%d@%s" % (i + 1, a) for i, a in enumerate(addrs))
    meta = ",".join(addrs)
    for i, a in enumerate(addrs):
        P.start("meta%d" % (i + 1), ["iolake-meta", "--id", str(i + 1), "--data-dir",
                                     os.path.join(TMP, "m%d" % (i + 1)), "--listen", a,
                                     "--peers", peers, "--election-timeout", "500ms",
                                     "--ec", "2+1"])

    def leader():
        st = admin(meta, "cluster", "status")
        return sum(1 for m in st["members"] if m.get("role") == "leader") == 1
    wait_for("a meta leader", leader)
    for i in range(1, 4):
        d = os.path.join(TMP, "osd%d" % i)
        os.makedirs(d)
        P.start("osd%d" % i, ["iolake-osd", "--id", str(i), "--device", os.path.join(d, "dev"),
                              "--size", "64M", "--meta-dir", os.path.join(d, "idx"),
                              "--listen", "127.0.0.1:0", "--meta", meta, "--host", "h%d" % i,
                              "--format"])
    root = admin(meta, "user", "add", "root")
    bob = admin(meta, "user", "add", "bob")

    def gateway(name):
        port = free_port()
        ep = "http://127.0.0.1:%d" % port
        P.start(name, ["iolake-gw", "--s3-listen", "127.0.0.1:%d" % port, "--meta", meta,
                       "--ec", "2+1", "--gc-interval", "0"])
        wait_for(name + " ready",
                 lambda: urllib.request.urlopen(ep + "/health/ready", timeout=1).status == 200)
        return ep

    epa, epb = gateway("gwA"), gateway("gwB")
    a = client(epa, root["access_key"], root["secret_key"])
    b = client(epb, root["access_key"], root["secret_key"])
    bob_b = client(epb, bob["access_key"], bob["secret_key"])
    body = b"x" * 1000

    def warm(bucket):
        """B's cache holds bucket now (a PUT through B just read it)."""
        b.put_object(Bucket=bucket, Key="warm", Body=body)

    a.create_bucket(Bucket="cbk")
    policy = ('{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":'
              '{"AWS":["bob"]},"Action":"s3:PutObject","Resource":"arn:aws:s3:::cbk/*"}]}')

    # 1. Policy granted, then deleted.
    a.put_bucket_policy(Bucket="cbk", Policy=policy)
    warm("cbk")
    expect(err(bob_b.put_object, Bucket="cbk", Key="p1", Body=body) is None,
           "bob's PUT through B under the policy passes")
    stale0 = metric(epb, "iolake_gw_bucket_cache_stale_total")
    warm("cbk")
    a.delete_bucket_policy(Bucket="cbk")
    expect(err(bob_b.put_object, Bucket="cbk", Key="p2", Body=body) == "AccessDenied",
           "the very next PUT through B after the policy's deletion through A: AccessDenied")
    expect(err(a.head_object, Bucket="cbk", Key="p2") in ("404", "NoSuchKey"),
           "the refused PUT wrote nothing")

    # 2. ACL granting WRITE, then private (ACLs need an ownership other
    # than BucketOwnerEnforced).
    a.put_bucket_ownership_controls(Bucket="cbk", OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    a.put_bucket_acl(Bucket="cbk", GrantWrite='id="%s"' % cid("bob"),
                     GrantFullControl='id="%s"' % cid("root"))
    warm("cbk")
    expect(err(bob_b.put_object, Bucket="cbk", Key="a1", Body=body) is None,
           "bob's PUT through B under a WRITE grant passes")
    warm("cbk")
    a.put_bucket_acl(Bucket="cbk", ACL="private")
    expect(err(bob_b.put_object, Bucket="cbk", Key="a2", Body=body) == "AccessDenied",
           "the very next PUT through B after the ACL went private: AccessDenied")
    expect(err(a.head_object, Bucket="cbk", Key="a2") in ("404", "NoSuchKey"),
           "the refused PUT wrote nothing")

    # 3. B's cache says refused (private); A grants: the next PUT passes.
    warm("cbk")
    a.put_bucket_policy(Bucket="cbk", Policy=policy)
    expect(err(bob_b.put_object, Bucket="cbk", Key="p3", Body=body) is None,
           "the very next PUT through B after a grant through A passes")
    a.delete_bucket_policy(Bucket="cbk")

    # 4. Versioning.
    b.put_object(Bucket="cbk", Key="v", Body=b"old")
    a.put_bucket_versioning(Bucket="cbk", VersioningConfiguration={"Status": "Enabled"})
    r = b.put_object(Bucket="cbk", Key="v", Body=b"new")
    vid = r.get("VersionId")
    expect(vid and vid != "null", "the very next PUT through B after versioning was enabled "
           "answers a version id (%s)" % vid)
    vers = a.list_object_versions(Bucket="cbk", Prefix="v").get("Versions", [])
    expect(len(vers) == 2, "the older version stayed (%d versions)" % len(vers))

    # 5. Object lock: default retention.
    a.create_bucket(Bucket="lkb", ObjectLockEnabledForBucket=True)
    warm("lkb")
    a.put_object_lock_configuration(Bucket="lkb", ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    b.put_object(Bucket="lkb", Key="l", Body=body)
    h = a.head_object(Bucket="lkb", Key="l")
    expect(h.get("ObjectLockMode") == "GOVERNANCE",
           "the very next PUT through B after a default retention was set has it (%s)"
           % h.get("ObjectLockMode"))

    # 6. A quota on the owner.
    a.create_bucket(Bucket="qbk")
    warm("qbk")
    st = subprocess_admin(meta, "quota", "get", "--user", "root")
    objs = (st or {}).get("usage", {}).get("objects")
    expect(objs is not None, "the owner's usage is readable (%s)" % st)
    rc = subprocess_admin(meta, "quota", "set", "--user", "root", "--max-objects", str(objs + 1))
    expect(rc is not None, "quota set --user root --max-objects %d" % (objs + 1))
    expect(err(b.put_object, Bucket="qbk", Key="q1", Body=body) is None,
           "the very next PUT through B after the owner's quota was set passes (one left)")
    expect(err(b.put_object, Bucket="qbk", Key="q2", Body=body) == "QuotaExceeded",
           "the one after is refused QuotaExceeded")
    subprocess_admin(meta, "quota", "clear", "--user", "root")

    # 7. The bucket deleted.
    a.create_bucket(Bucket="gone")
    warm("gone")
    a.delete_object(Bucket="gone", Key="warm")
    a.delete_bucket(Bucket="gone")
    expect(err(b.put_object, Bucket="gone", Key="g", Body=body) == "NoSuchBucket",
           "the very next PUT through B after the bucket's deletion: NoSuchBucket")

    hits = metric(epb, "iolake_gw_bucket_cache_hits_total")
    stale = metric(epb, "iolake_gw_bucket_cache_stale_total")
    expect(hits > 0, "B served PUT gates from its cache (%d hits)" % hits)
    expect(stale > stale0, "B's commits found cached records stale and read again "
           "(%d stale)" % stale)


def subprocess_admin(meta, *args):
    try:
        return admin(meta, *args)
    except Exception as e:  # noqa: BLE001
        print("admin %s: %s" % (" ".join(args), e))
        return None


if __name__ == "__main__":
    P.run(main)
    print("PASS")
