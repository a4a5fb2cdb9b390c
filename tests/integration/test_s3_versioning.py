#!/usr/bin/env python3
"""test_s3_versioning.py — bucket versioning (issue 17) on iolake-aio with
Debian's boto3:

- Put/GetBucketVersioning (Enabled, Suspended; MalformedXML for a bad
  Status); PUT answers x-amz-version-id.
- Overwrite, then restore an older version byte for byte (GET ?versionId
  and PUT it back).
- DELETE makes a delete marker (x-amz-delete-marker, a version id); GET
  is 404, GET ?versionId of the old version still works, GET ?versionId
  of the marker is 405; ListObjectsV2 skips the key; deleting the marker
  (DELETE ?versionId) restores the object.
- Suspended: writes the `null` version, which replaces the previous
  `null` (its bytes gone), and keeps the versioned ones.
- DELETE ?versionId of each version removes exactly that version.
- ListObjectVersions paging (must-show 4): KEYS keys x VERS versions,
  paged 100 at a time (and with a delimiter), returns every version once
  and in order (keys ascending, newest version first).
- DeleteObjects of every version of that bucket (1,000 per request), and
  it can be deleted.
- Space (aio's admin API, GET osds): versions keep their shards (overwrites and
  a marker free nothing, GC rounds pass), every version reads back byte
  for byte; after every version is deleted the GC queue drains and the
  used bytes return to the empty bucket's.
- CopyObject from a versionId (restore), DeleteObjects with VersionId,
  tagging and ACL of one version; keys that need url encoding.
- A user allowed only to list may list versions but not read, or tag, a
  version of a deleted key (the gate does not decide those as ListBucket).
- aws-cli s3api: versioning on, put three versions, list them, get one by
  id, delete (a marker) and delete the marker.

Run it also with IOLAKE_AIO_EXTRA_ARGS="--range-groups 4" (listings
across key ranges)."""
import json, os, subprocess, sys, time

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402

B = "verb"
FAILS = []
KEYS = int(os.environ.get("VER_KEYS", "1000"))
VERS = int(os.environ.get("VER_VERSIONS", "10"))


def expect(got, want, what):
    if got != want:
        FAILS.append(what)
        print("FAIL: %s: got %r want %r" % (what, got, want))
    else:
        print("ok:", what)


def err(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPHeaders"]
    return "OK", {}


def basics(s3):
    s3.create_bucket(Bucket=B)
    expect(s3.get_bucket_versioning(Bucket=B).get("Status"), None, "new bucket: no Status")
    r = s3.put_object(Bucket=B, Key="pre", Body=b"before versioning")
    expect(r.get("VersionId"), None, "unversioned PUT: no version id")
    s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
    expect(s3.get_bucket_versioning(Bucket=B).get("Status"), "Enabled", "Enabled")

    v1 = s3.put_object(Bucket=B, Key="k", Body=b"one" * 1000)["VersionId"]
    v2 = s3.put_object(Bucket=B, Key="k", Body=b"two" * 3000)["VersionId"]
    expect(v1 != v2 and len(v1) == 16, True, "PUT answers distinct version ids")
    expect(s3.get_object(Bucket=B, Key="k")["Body"].read(), b"two" * 3000, "GET: newest")
    old = s3.get_object(Bucket=B, Key="k", VersionId=v1)
    expect(old["Body"].read(), b"one" * 1000, "GET ?versionId: the older version")
    expect(old["VersionId"], v1, "GET ?versionId answers its id")
    # restore: the old bytes become the newest version
    v3 = s3.put_object(Bucket=B, Key="k", Body=s3.get_object(Bucket=B, Key="k", VersionId=v1)["Body"].read())["VersionId"]
    expect(s3.get_object(Bucket=B, Key="k")["Body"].read(), b"one" * 1000, "restored byte for byte")
    expect(s3.get_object(Bucket=B, Key="k", VersionId=v2)["Body"].read(), b"two" * 3000,
           "the overwritten version is still there")

    # a big (erasure-coded) object: overwrite keeps its shards
    big1 = os.urandom(300000)
    b1 = s3.put_object(Bucket=B, Key="big", Body=big1)["VersionId"]
    s3.put_object(Bucket=B, Key="big", Body=os.urandom(200000))
    time.sleep(1.5)
    expect(s3.get_object(Bucket=B, Key="big", VersionId=b1)["Body"].read() == big1, True,
           "overwritten EC version readable (shards kept)")

    # delete: a marker
    d = s3.delete_object(Bucket=B, Key="k")
    expect(d.get("DeleteMarker"), True, "DELETE: a delete marker")
    mk = d.get("VersionId")
    code, hdr = err(s3.get_object, Bucket=B, Key="k")
    expect((code, hdr.get("x-amz-delete-marker")), ("NoSuchKey", "true"), "GET after delete: 404 + marker")
    expect(s3.get_object(Bucket=B, Key="k", VersionId=v2)["Body"].read(), b"two" * 3000,
           "GET ?versionId of an old version after delete")
    code, hdr = err(s3.get_object, Bucket=B, Key="k", VersionId=mk)
    expect(code, "MethodNotAllowed", "GET ?versionId of the marker: 405")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=B).get("Contents", [])]
    expect("k" in keys, False, "ListObjectsV2 skips a deleted key")
    d = s3.delete_object(Bucket=B, Key="k", VersionId=mk)
    expect(d.get("DeleteMarker"), True, "DELETE ?versionId of the marker")
    expect(s3.get_object(Bucket=B, Key="k")["Body"].read(), b"one" * 1000,
           "deleting the marker restores the object")
    expect(err(s3.get_object, Bucket=B, Key="k", VersionId="0000000000000001")[0], "NoSuchVersion",
           "unknown version: NoSuchVersion")
    expect(err(s3.get_object, Bucket=B, Key="k", VersionId="zz")[0], "InvalidArgument",
           "malformed version id: InvalidArgument")

    # the object written before versioning is the null version
    vs = s3.list_object_versions(Bucket=B, Prefix="pre")["Versions"]
    expect([v["VersionId"] for v in vs], ["null"], "pre-versioning object: version null")

    # suspended: null replaces null
    s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Suspended"})
    expect(s3.get_bucket_versioning(Bucket=B).get("Status"), "Suspended", "Suspended")
    n1 = s3.put_object(Bucket=B, Key="k", Body=b"null-one")
    expect(n1.get("VersionId"), "null", "suspended PUT: version null")
    s3.put_object(Bucket=B, Key="k", Body=b"null-two")
    vs = [v for v in s3.list_object_versions(Bucket=B, Prefix="k")["Versions"] if v["Key"] == "k"]
    ids = [v["VersionId"] for v in vs]
    expect(ids.count("null"), 1, "one null version after two suspended PUTs")
    expect(ids[0], "null", "the null version is the newest")
    expect(set([v1, v2, v3]) <= set(ids), True, "versioned ones kept while suspended")
    expect(s3.get_object(Bucket=B, Key="k", VersionId="null")["Body"].read(), b"null-two",
           "the null version is the second one")
    d = s3.delete_object(Bucket=B, Key="k")
    expect((d.get("DeleteMarker"), d.get("VersionId")), (True, "null"), "suspended DELETE: null marker")
    s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
    code = err(s3.put_bucket_versioning, Bucket=B, VersioningConfiguration={"Status": "Bogus"})[0]
    expect(code, "MalformedXML", "bad Status: MalformedXML")

    # version delete removes exactly that version
    s3.delete_object(Bucket=B, Key="k", VersionId=v2)
    ids = [v["VersionId"] for v in s3.list_object_versions(Bucket=B, Prefix="k").get("Versions", [])
           if v["Key"] == "k"]
    expect(v2 in ids, False, "DELETE ?versionId removes that version")
    expect(set([v1, v3]) <= set(ids), True, "and only that one")

    # restore by CopyObject from a version id
    c1 = s3.put_object(Bucket=B, Key="c", Body=b"first " * 2000)["VersionId"]
    s3.put_object(Bucket=B, Key="c", Body=b"second")
    r = s3.copy_object(Bucket=B, Key="c", CopySource={"Bucket": B, "Key": "c", "VersionId": c1})
    expect(r.get("CopySourceVersionId"), c1, "CopyObject: x-amz-copy-source-version-id")
    expect(r.get("VersionId") not in (None, c1), True, "CopyObject: a new version")
    expect(s3.get_object(Bucket=B, Key="c")["Body"].read(), b"first " * 2000,
           "CopyObject from a versionId restores byte for byte")
    mk = s3.delete_object(Bucket=B, Key="c")["VersionId"]
    expect(err(s3.copy_object, Bucket=B, Key="c2", CopySource={"Bucket": B, "Key": "c", "VersionId": mk})[0],
           "InvalidRequest", "CopyObject from a delete marker: InvalidRequest")
    expect(err(s3.copy_object, Bucket=B, Key="c2", CopySource={"Bucket": B, "Key": "c"})[0],
           "NoSuchKey", "CopyObject of a deleted key: NoSuchKey")
    s3.copy_object(Bucket=B, Key="c2", CopySource={"Bucket": B, "Key": "c", "VersionId": c1})
    expect(s3.get_object(Bucket=B, Key="c2")["Body"].read(), b"first " * 2000,
           "CopyObject from a version of a deleted key")

    # keys that need escaping, listed with encoding-type=url (boto3 asks for it)
    odd = "odd key+&<%\u00e9/x"
    s3.put_object(Bucket=B, Key=odd, Body=b"o")
    vs = s3.list_object_versions(Bucket=B, Prefix="odd ")["Versions"]
    expect([v["Key"] for v in vs], [odd], "ListObjectVersions: an odd key round-trips")
    s3.delete_object(Bucket=B, Key=odd, VersionId=vs[0]["VersionId"])

    # tagging and ACLs of one version
    t1 = s3.put_object(Bucket=B, Key="t", Body=b"a")["VersionId"]
    s3.put_object(Bucket=B, Key="t", Body=b"b")
    s3.put_object_tagging(Bucket=B, Key="t", VersionId=t1,
                          Tagging={"TagSet": [{"Key": "v", "Value": "old"}]})
    r = s3.get_object_tagging(Bucket=B, Key="t", VersionId=t1)
    expect((r["TagSet"], r.get("VersionId")), ([{"Key": "v", "Value": "old"}], t1),
           "PutObjectTagging ?versionId tags that version")
    expect(s3.get_object_tagging(Bucket=B, Key="t")["TagSet"], [], "the current version untouched")
    expect(err(s3.get_object_tagging, Bucket=B, Key="t", VersionId="00000000000000ff")[0],
           "NoSuchVersion", "tagging of an unknown version: NoSuchVersion")
    r = s3.get_object_acl(Bucket=B, Key="t", VersionId=t1)
    expect(r["ResponseMetadata"]["HTTPStatusCode"], 200, "GetObjectAcl ?versionId")

    # DeleteObjects with versions
    m = [s3.put_object(Bucket=B, Key="m", Body=b"m%d" % i)["VersionId"] for i in range(3)]
    r = s3.delete_objects(Bucket=B, Delete={"Objects": [
        {"Key": "m", "VersionId": m[0]}, {"Key": "m", "VersionId": m[1]}, {"Key": "m2"},
        {"Key": "m", "VersionId": "bogus"}]})
    dl = sorted((d["Key"], d.get("VersionId"), d.get("DeleteMarker", False)) for d in r.get("Deleted", []))
    expect(dl, sorted([("m", m[0], False), ("m", m[1], False), ("m2", None, True)]),
           "DeleteObjects: two versions and a marker")
    expect(all(d.get("DeleteMarkerVersionId") for d in r["Deleted"] if d["Key"] == "m2"), True,
           "DeleteObjects: DeleteMarkerVersionId of the marker made")
    expect([e["Code"] for e in r.get("Errors", [])], ["InvalidArgument"], "DeleteObjects: a bad VersionId")
    ids = [v["VersionId"] for v in s3.list_object_versions(Bucket=B, Prefix="m").get("Versions", [])
           if v["Key"] == "m"]
    expect(ids, [m[2]], "DeleteObjects removed exactly the versions named")


def access(aio, s3):
    """A reader of the listing is not a reader of a deleted key's versions."""
    meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
    out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json", "user",
                          "add", "alice"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    alice = aio.client(ak=j["access_key"], sk=j["secret_key"])
    bk = "veracc"
    s3.create_bucket(Bucket=bk)
    s3.put_bucket_versioning(Bucket=bk, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_policy(Bucket=bk, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["*"]},
         "Action": ["s3:ListBucket", "s3:ListBucketVersions"],
         "Resource": ["arn:aws:s3:::%s" % bk]}]}))
    v = s3.put_object(Bucket=bk, Key="secret", Body=b"s")["VersionId"]
    expect(err(alice.get_object, Bucket=bk, Key="secret", VersionId=v)[0], "AccessDenied",
           "alice (ListBucket only): GET ?versionId of a live key denied")
    s3.delete_object(Bucket=bk, Key="secret")
    expect([x["VersionId"] for x in alice.list_object_versions(Bucket=bk).get("Versions", [])], [v],
           "alice may list the versions")
    expect(err(alice.get_object, Bucket=bk, Key="secret", VersionId=v)[0], "AccessDenied",
           "alice: GET ?versionId of a deleted key denied")
    expect(err(alice.put_object_tagging, Bucket=bk, Key="secret", VersionId=v,
               Tagging={"TagSet": []})[0], "AccessDenied", "alice: tagging a deleted key's version denied")
    expect(s3.get_object(Bucket=bk, Key="secret", VersionId=v)["Body"].read(), b"s",
           "the owner reads it")


def cli_checks(aio, s3):
    """A few of the same with Debian's aws-cli (s3api)."""
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null",
               AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    cli = ["aws", "--endpoint-url", aio.ep, "s3api"]

    def run(*a):
        p = subprocess.run(cli + list(a), env=env, capture_output=True, text=True)
        if p.returncode:
            FAILS.append("aws s3api %s" % a[0])
            print("FAIL: aws s3api %s: %s" % (" ".join(a), p.stderr.strip()))
            return {}
        return json.loads(p.stdout) if p.stdout.strip() else {}
    bk = "vercli"
    run("create-bucket", "--bucket", bk)
    run("put-bucket-versioning", "--bucket", bk, "--versioning-configuration", "Status=Enabled")
    expect(run("get-bucket-versioning", "--bucket", bk).get("Status"), "Enabled",
           "aws-cli get-bucket-versioning")
    body = os.path.join(aio.tmp, "cli-body")
    ids = []
    for i in range(3):
        with open(body, "wb") as f:
            f.write(b"cli version %d" % i)
        ids.append(run("put-object", "--bucket", bk, "--key", "f", "--body", body).get("VersionId"))
    vs = run("list-object-versions", "--bucket", bk).get("Versions", [])
    expect([v["VersionId"] for v in vs], ids[::-1], "aws-cli list-object-versions: newest first")
    out = os.path.join(aio.tmp, "cli-out")
    run("get-object", "--bucket", bk, "--key", "f", "--version-id", ids[0], out)
    expect(open(out, "rb").read(), b"cli version 0", "aws-cli get-object --version-id")
    d = run("delete-object", "--bucket", bk, "--key", "f")
    expect(d.get("DeleteMarker"), True, "aws-cli delete-object: a marker")
    run("delete-object", "--bucket", bk, "--key", "f", "--version-id", d.get("VersionId", "x"))
    run("get-object", "--bucket", bk, "--key", "f", out)
    expect(open(out, "rb").read(), b"cli version 2", "aws-cli: the marker deleted, the object is back")


def all_versions(s3, **kw):
    out, prefixes, pages = [], [], 0
    km, vm = None, None
    while True:
        a = dict(Bucket=B, MaxKeys=100, **kw)
        if km is not None:
            a["KeyMarker"] = km
            if vm:
                a["VersionIdMarker"] = vm
        r = s3.list_object_versions(**a)
        pages += 1
        ents = [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
        ents += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("DeleteMarkers", [])]
        out += ents
        prefixes += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        if len(ents) + len(r.get("CommonPrefixes", [])) > 100:
            FAILS.append("page over MaxKeys")
        if not r["IsTruncated"]:
            return out, prefixes, pages
        km, vm = r["NextKeyMarker"], r.get("NextVersionIdMarker")


def paging(aio, s3):
    bk = "verpage"
    s3.create_bucket(Bucket=bk)
    if "--range-groups" in aio.args:
        # several key ranges (split while empty); "d4/" spans two of them
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        for k in ("d2/", "d4/key00500", "d6/"):
            p = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "range",
                                "split", bk, k], capture_output=True, text=True)
            expect(p.returncode, 0, "range split at %s %s" % (k, p.stderr.strip()))
    s3.put_bucket_versioning(Bucket=bk, VersioningConfiguration={"Status": "Enabled"})
    want = {}
    t0 = time.time()
    for v in range(VERS):
        for i in range(KEYS):
            k = "d%d/key%05d" % (i % 7, i)
            vid = s3.put_object(Bucket=bk, Key=k, Body=b"%d" % v)["VersionId"]
            want.setdefault(k, []).insert(0, vid)   # newest first
    print("put %d versions in %.1fs" % (KEYS * VERS, time.time() - t0))
    global B
    saved, B = B, bk
    got, _, pages = all_versions(s3)
    order = [(k, vid) for k in sorted(want) for vid in want[k]]
    expect([(k, v) for k, v, _ in got] == order, True,
           "%d versions in %d pages: every version once, in order" % (len(order), pages))
    expect(all(l == (i == 0 or got[i - 1][0] != k) for i, (k, _, l) in enumerate(got)), True,
           "IsLatest on each key's first version only")
    got, prefixes, pages = all_versions(s3, Delimiter="/")
    expect((got, prefixes), ([], ["d%d/" % i for i in range(7)]), "delimiter: 7 common prefixes, once each")
    got, _, pages = all_versions(s3, Prefix="d3/")
    expect([(k, v) for k, v, _ in got] == [(k, v) for k, v in order if k.startswith("d3/")], True,
           "prefix d3/: its versions in order")
    if "--range-groups" in aio.args:
        # A split of a range holding versions moves them with their keys
        # (meta/state_move.c MOVE_TABLES), then a merge brings them back.
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        admin = [os.path.join(BUILD, "iolake-admin"), "--meta", meta, "range"]
        for verb, k in (("split", "d3/"), ("merge", "d3/")):
            p = subprocess.run(admin + [verb, bk, k], capture_output=True, text=True)
            expect(p.returncode, 0, "range %s of versions at %s %s" % (verb, k, p.stderr.strip()))
            got, _, pages = all_versions(s3)
            expect([(k2, v) for k2, v, _ in got] == order, True,
                   "after the %s: every version once, in order" % verb)
            k3 = "d3/key%05d" % 3
            oldest = want[k3][-1]
            body = s3.get_object(Bucket=bk, Key=k3, VersionId=oldest)["Body"].read()
            expect(body, b"0", "after the %s: %s's oldest version reads back" % (verb, k3))
    B = saved
    return bk, want


def api(aio, path):
    """aio's admin HTTP API (its OSDs answer only in its process)."""
    env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK)
    p = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data, "api", "GET",
                        path], capture_output=True, text=True, check=True, env=env)
    return json.loads(p.stdout)


def wait_for(what, fn, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if fn():
            return True
        time.sleep(0.2)
    FAILS.append(what)
    print("FAIL: timed out waiting for", what)
    return False


def drop_all(s3, bk, want):
    """Every version of the paging bucket, 1,000 per DeleteObjects."""
    objs = [{"Key": k, "VersionId": v} for k, vids in want.items() for v in vids]
    bad = 0
    for i in range(0, len(objs), 1000):
        r = s3.delete_objects(Bucket=bk, Delete={"Objects": objs[i:i + 1000], "Quiet": True})
        bad += len(r.get("Errors", []))
    expect(bad, 0, "DeleteObjects of %d versions, 1,000 a request: no errors" % len(objs))
    r = s3.list_object_versions(Bucket=bk)
    expect(r.get("Versions", []) + r.get("DeleteMarkers", []), [], "every version deleted")
    expect(err(s3.delete_bucket, Bucket=bk)[0], "OK", "the emptied bucket can be deleted")


def space(aio, s3):
    """Versions keep their shards; deleting every version frees them all."""
    bk = "verspace"
    s3.create_bucket(Bucket=bk)
    s3.put_bucket_versioning(Bucket=bk, VersioningConfiguration={"Status": "Enabled"})

    def used():
        return api(aio, "osds")["summary"]["used_bytes"]

    def gcq():
        return api(aio, "cluster")["members"][0]["gc_queue"]
    wait_for("GC queue empty before", lambda: gcq() == 0)
    base = used()
    bodies = {}
    for v in range(3):
        for k in ("a", "b", "c"):
            bodies.setdefault(k, []).append(os.urandom(400000 + v * 1000))
            s3.put_object(Bucket=bk, Key=k, Body=bodies[k][-1])
    s3.delete_object(Bucket=bk, Key="c")   # a marker: frees nothing
    full = used()
    expect(full > base, True, "nine versions hold space (%d -> %d bytes)" % (base, full))
    time.sleep(1.5)   # several GC rounds
    expect((gcq(), used()), (0, full), "overwrites and a marker in a versioned bucket free nothing")
    vs = s3.list_object_versions(Bucket=bk)
    for k in ("a", "b", "c"):
        got = [s3.get_object(Bucket=bk, Key=k, VersionId=v["VersionId"])["Body"].read()
               for v in vs["Versions"] if v["Key"] == k]
        expect(got == bodies[k][::-1], True, "key %s: every version byte for byte" % k)
    objs = [{"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in vs.get("Versions", []) + vs.get("DeleteMarkers", [])]
    s3.delete_objects(Bucket=bk, Delete={"Objects": objs})
    wait_for("GC queue drained", lambda: gcq() == 0)
    wait_for("used bytes back to %d" % base, lambda: used() == base)
    print("used bytes: base %d, with versions %d, after deleting them %d" % (base, full, used()))
    expect(err(s3.delete_bucket, Bucket=bk)[0], "OK", "the emptied bucket can be deleted")


def main():
    aio = Aio(args=["--gc-interval", "300ms"])
    aio.start()
    try:
        s3 = aio.client()
        basics(s3)
        cli_checks(aio, s3)
        access(aio, s3)
        bk, want = paging(aio, s3)
        drop_all(s3, bk, want)
        space(aio, s3)
        rc, _ = aio.stop(limit=15)
        expect(rc, 0, "iolake-aio exits 0 on SIGTERM")
    finally:
        aio.close()
    if FAILS:
        print("%d failures" % len(FAILS))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
