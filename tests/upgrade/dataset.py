"""dataset.py — the objects an upgrade fixture holds, written by one IOLake
build and checked by another (imported by tests/upgrade/make_fixture.py
and tests/integration/test_upgrade.py; not run itself).

write(s3, alice) stores a fixed set through the S3 API of the build
that makes the fixture and returns its manifest (JSON-able); check(s3,
alice_s3, manifest, expect) reads every part of it back through
the build under test. Every body is derived from its name and size
(body()), so the manifest holds no data.

What it covers, the parts of the on-disk format an upgrade must read:
- objects inline in their meta record (0 B, 1 B, 4 KiB at the default
  --inline-max-size) and erasure-coded ones (100 KiB, 3 MiB: more than one segment), keys with
  spaces, unicode and slashes; content type, user metadata, tags;
- a multipart object (two 160 KiB parts and a small one, CRC32C checksums:
  part rows and the part list), read whole and by part number;
- a versioned bucket: three versions of a key, a delete marker on
  another, each version by id;
- SSE-S3 by bucket default (the data keys wrapped by DIR/sse.key, which
  the fixture keeps) and an SSE-C object (its key is in the manifest);
- object lock: a bucket with lock enabled and a version under GOVERNANCE
  retention; a legal hold;
- bucket settings: a policy granting a second user (alice) reads under
  shared/, CORS, lifecycle, tagging; a user with its own key;
- an object written and deleted (nothing of it may come back).
"""
import hashlib, json

from aio_py import error_code, keys_of   # tests/integration, on the importer's path

SSEC_KEY = bytes(range(32))
PART = 160 << 10   # the fixture's aio runs with --debug-min-part-size 1


def body(name, size):
    """size bytes, a function of name alone: lines naming the object's
    hash and their own offset, so a byte from another object or another
    place differs, yet the fixture's archive compresses them well."""
    tag = hashlib.sha256(name.encode()).hexdigest()[:12]
    out, off = bytearray(), 0
    while len(out) < size:
        out += b"%s %012d\n" % (tag.encode(), off)
        off += 26
    return bytes(out[:size])


def ssec_args():
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": SSEC_KEY}


PLAIN = [  # key, size
    ("empty", 0), ("one", 1), ("inline-4k", 4096), ("ec-100k", 100 * 1024),
    ("ec-3m", 3 << 20), ("dir/with space/ünïcødé ✓", 3000), ("shared/public-ish", 2048),
]


def write(s3, alice):
    """alice: the second user's name (a policy principal)."""
    m = {"plain": [], "versions": [], "mpu": None, "deleted": [], "alice": alice}
    s3.create_bucket(Bucket="plain")
    for key, size in PLAIN:
        s3.put_object(Bucket="plain", Key=key, Body=body(key, size),
                      ContentType="application/x-iolake-%d" % size,
                      Metadata={"origin": "fixture", "size": str(size)},
                      Tagging="k=%d&name=fixture" % size)
        m["plain"].append({"key": key, "size": size})
    s3.put_object(Bucket="plain", Key="gone", Body=body("gone", 70000))
    s3.delete_object(Bucket="plain", Key="gone")
    m["deleted"].append(["plain", "gone"])
    s3.put_bucket_policy(Bucket="plain", Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": [alice]},
                       "Action": "s3:GetObject", "Resource": "arn:aws:s3:::plain/shared/*"}]}))
    s3.put_bucket_cors(Bucket="plain", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["https://example.test"], "AllowedMethods": ["GET"],
         "AllowedHeaders": ["*"], "MaxAgeSeconds": 600}]})
    s3.put_bucket_lifecycle_configuration(Bucket="plain", LifecycleConfiguration={"Rules": [
        {"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"},
         "Expiration": {"Days": 30}}]})
    s3.put_bucket_tagging(Bucket="plain", Tagging={"TagSet": [{"Key": "team", "Value": "io"}]})

    s3.create_bucket(Bucket="mpu")
    up = s3.create_multipart_upload(Bucket="mpu", Key="big", ChecksumAlgorithm="CRC32C")
    sizes = [PART, PART, 12345]
    parts = []
    for n, size in enumerate(sizes, 1):
        r = s3.upload_part(Bucket="mpu", Key="big", UploadId=up["UploadId"], PartNumber=n,
                           Body=body("big-part-%d" % n, size), ChecksumAlgorithm="CRC32C")
        parts.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumCRC32C": r["ChecksumCRC32C"]})
    s3.complete_multipart_upload(Bucket="mpu", Key="big", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})
    m["mpu"] = {"key": "big", "sizes": sizes}

    s3.create_bucket(Bucket="versioned")
    s3.put_bucket_versioning(Bucket="versioned", VersioningConfiguration={"Status": "Enabled"})
    for i in range(3):
        name = "doc-v%d" % i
        r = s3.put_object(Bucket="versioned", Key="doc", Body=body(name, 1000 + 50000 * i))
        m["versions"].append({"key": "doc", "version": r["VersionId"], "name": name,
                              "size": 1000 + 50000 * i})
    r = s3.put_object(Bucket="versioned", Key="erased", Body=body("erased", 777))
    m["versions"].append({"key": "erased", "version": r["VersionId"], "name": "erased",
                          "size": 777})
    d = s3.delete_object(Bucket="versioned", Key="erased")
    m["erased_marker"] = d["VersionId"]

    s3.create_bucket(Bucket="secret")
    s3.put_bucket_encryption(Bucket="secret", ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    for key, size in (("s3-small", 1000), ("s3-large", 300000)):
        s3.put_object(Bucket="secret", Key=key, Body=body(key, size))
    s3.put_object(Bucket="secret", Key="c-key", Body=body("c-key", 40000), **ssec_args())
    m["secret"] = [["s3-small", 1000], ["s3-large", 300000]]
    m["ssec"] = ["c-key", 40000]

    s3.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
    r = s3.put_object(Bucket="locked", Key="kept", Body=body("kept", 9000),
                      ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate="2099-01-01T00:00:00Z")
    m["locked"] = {"key": "kept", "version": r["VersionId"], "size": 9000}
    r = s3.put_object(Bucket="locked", Key="held", Body=body("held", 500),
                      ObjectLockLegalHoldStatus="ON")
    m["held"] = {"key": "held", "version": r["VersionId"]}
    return m


def check(s3, alice, m, expect):
    """Reads the manifest's data back through s3 (the root user) and alice
    (the second user), calling expect(got, want, what) for each fact.
    Written since the manifest (listed, not read here): m["plain_extra"],
    keys of bucket plain; m["versions_extra"], versions in bucket
    versioned; m["doc_current"], (name, size) of versioned/doc's body."""
    for o in m["plain"]:
        key, size = o["key"], o["size"]
        r = s3.get_object(Bucket="plain", Key=key)
        expect(r["Body"].read() == body(key, size), True, "plain/%s: bytes" % key)
        expect((r["ContentType"], r["Metadata"]),
               ("application/x-iolake-%d" % size, {"origin": "fixture", "size": str(size)}),
               "plain/%s: content type and metadata" % key)
        tags = {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket="plain", Key=key)["TagSet"]}
        expect(tags, {"k": str(size), "name": "fixture"}, "plain/%s: tags" % key)
    listed = set(keys_of(s3, "plain"))
    want = set([o["key"] for o in m["plain"]] + m.get("plain_extra", []))
    expect((sorted(want - listed), sorted(listed - want)), ([], []),
           "plain: the listing, %d keys: none missing, none more (the deleted one not in it)"
           % len(want))
    for b, k in m["deleted"]:
        expect(error_code(s3.head_object, Bucket=b, Key=k), "404", "%s/%s stays deleted" % (b, k))
    pol = json.loads(s3.get_bucket_policy(Bucket="plain")["Policy"])
    expect(pol["Statement"][0]["Principal"]["AWS"] in (m["alice"], [m["alice"]]), True,
           "plain: the policy names alice")
    got = alice.get_object(Bucket="plain", Key="shared/public-ish")["Body"].read()
    expect(got == body("shared/public-ish", 2048), True, "alice reads shared/ through the policy")
    expect(error_code(alice.get_object, Bucket="plain", Key="one"), "AccessDenied",
           "alice is refused outside shared/")
    cors = s3.get_bucket_cors(Bucket="plain")["CORSRules"][0]
    expect(cors["AllowedOrigins"], ["https://example.test"], "plain: CORS")
    lc = s3.get_bucket_lifecycle_configuration(Bucket="plain")["Rules"][0]
    expect((lc["ID"], lc["Expiration"]["Days"]), ("tmp", 30), "plain: lifecycle")
    expect(s3.get_bucket_tagging(Bucket="plain")["TagSet"], [{"Key": "team", "Value": "io"}],
           "plain: bucket tags")

    mp = m["mpu"]
    whole = b"".join(body("big-part-%d" % (n + 1), s) for n, s in enumerate(mp["sizes"]))
    r = s3.get_object(Bucket="mpu", Key=mp["key"], ChecksumMode="ENABLED")
    expect(r["Body"].read() == whole, True, "mpu/big: bytes")
    expect(r["ETag"].strip('"').endswith("-%d" % len(mp["sizes"])), True, "mpu/big: multipart ETag")
    p2 = s3.get_object(Bucket="mpu", Key=mp["key"], PartNumber=2)
    expect((p2["Body"].read() == body("big-part-2", mp["sizes"][1]), p2.get("PartsCount")),
           (True, len(mp["sizes"])), "mpu/big: part 2 by number")
    attrs = s3.get_object_attributes(Bucket="mpu", Key=mp["key"], ObjectAttributes=["ObjectParts"])
    expect(attrs["ObjectParts"]["TotalPartsCount"], len(mp["sizes"]), "mpu/big: its part list")

    for v in m["versions"]:
        r = s3.get_object(Bucket="versioned", Key=v["key"], VersionId=v["version"])
        expect(r["Body"].read() == body(v["name"], v["size"]), True,
               "versioned/%s version %s: bytes" % (v["key"], v["name"]))
    cur_name, cur_size = m.get("doc_current", ("doc-v2", 101000))
    cur = s3.get_object(Bucket="versioned", Key="doc")["Body"].read()
    expect(cur == body(cur_name, cur_size), True, "versioned/doc: the latest is current")
    expect(error_code(s3.get_object, Bucket="versioned", Key="erased"), "NoSuchKey",
           "versioned/erased: behind its delete marker")
    vs = s3.list_object_versions(Bucket="versioned")
    expect((len(vs.get("Versions", [])), [d["VersionId"] for d in vs.get("DeleteMarkers", [])]),
           (len(m["versions"]) + m.get("versions_extra", 0), [m["erased_marker"]]),
           "versioned: every version and the delete marker")
    expect(s3.get_bucket_versioning(Bucket="versioned").get("Status"), "Enabled",
           "versioned: versioning on")

    for key, size in m["secret"]:
        r = s3.get_object(Bucket="secret", Key=key)
        expect((r["Body"].read() == body(key, size), r.get("ServerSideEncryption")),
               (True, "AES256"), "secret/%s: SSE-S3 bytes" % key)
    key, size = m["ssec"]
    r = s3.get_object(Bucket="secret", Key=key, **ssec_args())
    expect(r["Body"].read() == body(key, size), True, "secret/%s: SSE-C bytes" % key)
    expect(error_code(s3.get_object, Bucket="secret", Key=key), "InvalidRequest",
           "secret/%s: refused without its key" % key)

    lk = m["locked"]
    ret = s3.get_object_retention(Bucket="locked", Key=lk["key"], VersionId=lk["version"])
    expect(ret["Retention"]["Mode"], "GOVERNANCE", "locked/kept: its retention")
    expect(error_code(s3.delete_object, Bucket="locked", Key=lk["key"], VersionId=lk["version"]),
           "AccessDenied", "locked/kept: its version cannot be deleted")
    h = m["held"]
    lh = s3.get_object_legal_hold(Bucket="locked", Key=h["key"], VersionId=h["version"])
    expect(lh["LegalHold"]["Status"], "ON", "locked/held: legal hold on")
