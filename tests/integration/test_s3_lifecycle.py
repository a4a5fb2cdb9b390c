#!/usr/bin/env python3
"""test_s3_lifecycle.py — bucket lifecycle (issue 17, must-show 3) on
iolake-aio started with the test clock (--debug-lifecycle-day-seconds 1:
one second is one lifecycle day), a lifecycle worker round every second
and a shard GC round every 500 ms, with Debian's boto3:

- Put/Get/DeleteBucketLifecycleConfiguration: the rules round-trip;
  NoSuchLifecycleConfiguration (404) without one; S3's refusals
  (MalformedXML: Days with ExpiredObjectDeleteMarker, more than 1,000
  rules, not XML; InvalidArgument: Days 0, a duplicate ID, a Date not at
  midnight; InvalidRequest: a rule without an action; NotImplemented:
  transitions).
- x-amz-expiration (expiry-date, rule-id) on PUT, HEAD and GET of an
  object a rule expires, none for one no rule matches.
- Must-show 3: 10,000 objects in 3 prefixes under different rules:
    lcp (unversioned) exp/  4,000 keys, Expiration Days 1: all go;
    lcp tag/  3,000 keys, And(Prefix tag/, Tag class=tmp,
              ObjectSizeGreaterThan 5000), Days 1: only those tagged tmp
              AND larger than 5,000 bytes go;
    lcv (versioned) nc/ 600 keys x 5 versions, NoncurrentVersionExpiration
              NoncurrentDays 1, NewerNoncurrentVersions 2: each key keeps
              its current version and the 2 newest noncurrent ones;
  plus lone delete markers under dm/ (ExpiredObjectDeleteMarker) removed,
  other/ (no rule) untouched, and incomplete uploads under mpu/old
  (AbortIncompleteMultipartUpload 20 days) aborted when older, those
  under mpu/young (100 days: the kill, restart and resumed pass may take
  20 s on a loaded machine) kept while younger. Listing afterwards
  equals the set the test computes, with
  aio killed -9 in the middle of the first pass: the restarted worker
  resumes from its committed cursor and redoes at most one batch.
- Space: once meta's GC queue has drained, the OSDs' used + inline bytes
  (iolake-admin osd df) are the live data's: deleting every remaining
  object and version by hand brings them back exactly to the empty
  cluster's, so nothing the lifecycle removed still holds a shard.
- /metrics counts what the worker did (expired, versions expired,
  uploads aborted, passes).

Every process is killed and the temp dir removed on exit, pass or fail."""
import concurrent.futures as cf
import datetime, json, os, re, subprocess, sys, time, urllib.request

from botocore.exceptions import ClientError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402

FAILS = []
T0 = time.time()


def expect(ok, what):
    if not ok:
        FAILS.append(what)
        print("FAIL:", what, flush=True)
    else:
        print("ok: %s (%.1f s)" % (what, time.time() - T0), flush=True)


def code(fn, *a, **kw):
    try:
        fn(*a, **kw)
        return "OK"
    except ClientError as e:
        return e.response["Error"]["Code"]


def wait_for(what, pred, timeout=40, step=0.25):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    expect(False, "timed out waiting for " + what)
    return False


def rule(rid, flt, **actions):
    r = {"ID": rid, "Status": "Enabled", "Filter": flt}
    r.update(actions)
    return r


def api_checks(s3):
    s3.create_bucket(Bucket="lca")
    expect(code(s3.get_bucket_lifecycle_configuration, Bucket="lca") ==
           "NoSuchLifecycleConfiguration", "no configuration: NoSuchLifecycleConfiguration")
    rules = [
        rule("a", {"Prefix": "logs/"}, Expiration={"Days": 7}),
        rule("b", {"And": {"Prefix": "t/", "Tags": [{"Key": "k", "Value": "v"}],
                           "ObjectSizeGreaterThan": 10, "ObjectSizeLessThan": 1000}},
             Expiration={"Date": datetime.datetime(2030, 1, 1)}),
        rule("c", {"Prefix": ""}, NoncurrentVersionExpiration={"NoncurrentDays": 3,
                                                               "NewerNoncurrentVersions": 4},
             AbortIncompleteMultipartUpload={"DaysAfterInitiation": 2}),
        rule("d", {"Tag": {"Key": "x", "Value": "y"}}, Expiration={"Days": 1}),
        {"ID": "e", "Status": "Disabled", "Prefix": "old/",
         "Expiration": {"ExpiredObjectDeleteMarker": True}},
    ]
    s3.put_bucket_lifecycle_configuration(Bucket="lca", LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket="lca")["Rules"]
    expect([r["ID"] for r in got] == ["a", "b", "c", "d", "e"], "rules round-trip in order")
    expect(got[0]["Filter"] == {"Prefix": "logs/"} and got[0]["Expiration"] == {"Days": 7},
           "rule a: prefix and Days")
    b = got[1]["Filter"]["And"]
    expect(b["Prefix"] == "t/" and b["Tags"] == [{"Key": "k", "Value": "v"}] and
           b["ObjectSizeGreaterThan"] == 10 and b["ObjectSizeLessThan"] == 1000,
           "rule b: And of prefix, tag and sizes")
    expect(got[1]["Expiration"]["Date"].year == 2030, "rule b: Date")
    expect(got[2]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 3,
                                                     "NewerNoncurrentVersions": 4} and
           got[2]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 2},
           "rule c: noncurrent and abort")
    expect(got[3]["Filter"] == {"Tag": {"Key": "x", "Value": "y"}}, "rule d: one tag")
    expect(got[4]["Status"] == "Disabled" and got[4].get("Prefix") == "old/" and
           got[4]["Expiration"] == {"ExpiredObjectDeleteMarker": True},
           "rule e: legacy Prefix, Disabled, ExpiredObjectDeleteMarker")

    def put(rs):
        return code(s3.put_bucket_lifecycle_configuration, Bucket="lca",
                    LifecycleConfiguration={"Rules": rs})
    expect(put([rule("z", {"Prefix": ""}, Expiration={"Days": 0})]) == "InvalidArgument",
           "Days 0: InvalidArgument")
    expect(put([rule("z", {"Prefix": ""}, Expiration={"Days": 1}),
                rule("z", {"Prefix": "q"}, Expiration={"Days": 1})]) == "InvalidArgument",
           "duplicate ID: InvalidArgument")
    expect(put([rule("z", {"Prefix": ""}, Expiration={"Days": 1,
                                                      "ExpiredObjectDeleteMarker": True})]) ==
           "MalformedXML", "Days with ExpiredObjectDeleteMarker: MalformedXML")
    expect(put([rule("z", {"Prefix": ""})]) == "InvalidRequest", "no action: InvalidRequest")
    expect(put([rule("z", {"Prefix": ""}, Transitions=[{"Days": 1, "StorageClass": "GLACIER"}])])
           == "NotImplemented", "Transition: NotImplemented")
    expect(put([rule("r%d" % i, {"Prefix": "p%d" % i}, Expiration={"Days": 1})
                for i in range(1001)]) == "MalformedXML", "1,001 rules: MalformedXML")
    expect(put([rule("r%d" % i, {"Prefix": "p%d" % i}, Expiration={"Days": 1})
                for i in range(1000)]) == "OK", "1,000 rules accepted")
    expect(len(s3.get_bucket_lifecycle_configuration(Bucket="lca")["Rules"]) == 1000,
           "1,000 rules stored")
    # A Date not at midnight.
    expect(put([rule("z", {"Prefix": ""},
                     Expiration={"Date": datetime.datetime(2030, 1, 1, 12, 0, 0)})]) ==
           "InvalidArgument", "Date not at midnight: InvalidArgument")
    s3.delete_bucket_lifecycle(Bucket="lca")
    expect(code(s3.get_bucket_lifecycle_configuration, Bucket="lca") ==
           "NoSuchLifecycleConfiguration", "deleted: NoSuchLifecycleConfiguration")


def header_checks(s3):
    s3.create_bucket(Bucket="lch")
    s3.put_bucket_lifecycle_configuration(Bucket="lch", LifecycleConfiguration={"Rules": [
        rule("month", {"Prefix": "m/"}, Expiration={"Days": 3000})]})
    r = s3.put_object(Bucket="lch", Key="m/x", Body=b"hello")
    h = r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration", "")
    expect(re.match(r'expiry-date=".* GMT", rule-id="month"$', h) is not None,
           "PUT answers x-amz-expiration (%s)" % h)
    for name, fn in (("HEAD", s3.head_object), ("GET", s3.get_object)):
        h2 = fn(Bucket="lch", Key="m/x")["ResponseMetadata"]["HTTPHeaders"].get(
            "x-amz-expiration", "")
        expect(h2 == h, "%s answers the same x-amz-expiration" % name)
    s3.put_object(Bucket="lch", Key="n/x", Body=b"hello")
    h3 = s3.head_object(Bucket="lch", Key="n/x")["ResponseMetadata"]["HTTPHeaders"]
    expect("x-amz-expiration" not in h3, "no x-amz-expiration where no rule applies")


def df(aio):
    """The OSDs' used + inline bytes (aio's OSDs answer only through its
    admin API)."""
    env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK)
    out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data, "api",
                          "GET", "osds"], check=True, capture_output=True, text=True,
                         env=env).stdout
    osds = json.loads(out)["osds"]
    return sum(o["space"]["used_bytes"] + o["space"]["inline_bytes"] for o in osds)


def gc_queue(aio):
    out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--data-dir", aio.data, "--json",
                          "cluster", "status"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["members"][0]["gc_queue"]


def metrics(aio):
    text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
    got = {}
    for m in re.finditer(r"^(iolake_gw_lc_\w+) (\d+)", text, re.M):
        got[m.group(1)] = int(m.group(2))
    return got


def list_keys(s3, bucket, prefix=""):
    keys = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.update(o["Key"] for o in page.get("Contents", []))
    return keys


def list_versions(s3, bucket, prefix=""):
    vers, markers = [], []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        vers += page.get("Versions", [])
        markers += page.get("DeleteMarkers", [])
    return vers, markers


def main():
    aio = Aio(osd_size="512M", args=["--debug-lifecycle-day-seconds", "1",
                                     "--lifecycle-interval", "1s", "--gc-interval", "500ms"])
    try:
        aio.start()
        s3 = aio.client(max_pool_connections=32)
        api_checks(s3)
        header_checks(s3)
        base = df(aio)

        s3.create_bucket(Bucket="lcp")
        s3.create_bucket(Bucket="lcv")
        s3.put_bucket_versioning(Bucket="lcv", VersioningConfiguration={"Status": "Enabled"})
        # Old uploads first: they must be older than the rule (20 days,
        # 20 s here) when the worker first looks; the young ones come last.
        t_old = time.time()
        old = [s3.create_multipart_upload(Bucket="lcp", Key="mpu/old%d" % i)["UploadId"]
               for i in range(3)]

        small, big = b"s" * 200, b"B" * 6000
        jobs = []
        for i in range(4000):
            jobs.append(("lcp", "exp/%05d" % i, small, None))
        want_tag = set()
        for i in range(3000):
            k = "tag/%05d" % i
            if i % 3 == 0:
                jobs.append(("lcp", k, big, "class=tmp"))       # goes
            elif i % 3 == 1:
                jobs.append(("lcp", k, small, "class=tmp"))     # too small: stays
                want_tag.add(k)
            else:
                jobs.append(("lcp", k, big, "class=keep"))      # other tag: stays
                want_tag.add(k)
        for i in range(10):
            jobs.append(("lcp", "other/%d" % i, big, None))

        def put(j):
            b, k, body, tags = j
            kw = {"Tagging": tags} if tags else {}
            s3.put_object(Bucket=b, Key=k, Body=body, **kw)

        def put_versions(i):
            k = "nc/%04d" % i
            ids = []
            for v in range(5):
                r = s3.put_object(Bucket="lcv", Key=k, Body=b"%d" % v + b"V" * 5000)
                ids.append(r["VersionId"])
            return k, ids
        t = time.time()
        with cf.ThreadPoolExecutor(16) as ex:
            list(ex.map(put, jobs))
            nc = dict(ex.map(put_versions, range(600)))
        n_objects = 4000 + 3000 + 600 * 5
        print("wrote %d objects (+10 other/) in %.1f s" % (n_objects, time.time() - t))
        # Lone delete markers: a marker, then its only version removed.
        for i in range(20):
            k = "dm/%02d" % i
            vid = s3.put_object(Bucket="lcv", Key=k, Body=b"x")["VersionId"]
            s3.delete_object(Bucket="lcv", Key=k)
            s3.delete_object(Bucket="lcv", Key=k, VersionId=vid)
        # A marker over a live noncurrent version stays (not lone).
        kept_vid = s3.put_object(Bucket="lcv", Key="dm/kept", Body=b"x")["VersionId"]
        s3.delete_object(Bucket="lcv", Key="dm/kept")
        while time.time() < t_old + 21:
            time.sleep(0.2)
        young = [s3.create_multipart_upload(Bucket="lcp", Key="mpu/young%d" % i)["UploadId"]
                 for i in range(3)]
        t_young = time.time()
        created = df(aio)

        s3.put_bucket_lifecycle_configuration(Bucket="lcp", LifecycleConfiguration={"Rules": [
            rule("exp", {"Prefix": "exp/"}, Expiration={"Days": 1}),
            rule("tagsize", {"And": {"Prefix": "tag/", "Tags": [{"Key": "class", "Value": "tmp"}],
                                     "ObjectSizeGreaterThan": 5000}}, Expiration={"Days": 1}),
            rule("mpu", {"Prefix": "mpu/old"}, AbortIncompleteMultipartUpload={
                "DaysAfterInitiation": 20}),
            rule("mpuyoung", {"Prefix": "mpu/young"}, AbortIncompleteMultipartUpload={
                "DaysAfterInitiation": 100}),
        ]})
        s3.put_bucket_lifecycle_configuration(Bucket="lcv", LifecycleConfiguration={"Rules": [
            rule("nc", {"Prefix": "nc/"}, NoncurrentVersionExpiration={
                "NoncurrentDays": 1, "NewerNoncurrentVersions": 2}),
            rule("dm", {"Prefix": "dm/"}, Expiration={"ExpiredObjectDeleteMarker": True}),
        ]})

        # Restartable: aio killed -9 in the middle of the first pass; the
        # restarted worker resumes from the cursor it committed (its log
        # says so) and redoes at most one batch (its ops then find their
        # objects gone: counted as skipped, at most a batch of them).
        wait_for("the worker in its first pass",
                 lambda: metrics(aio).get("iolake_gw_lc_scanned_total", 0) >= 600,
                 timeout=30, step=0.05)
        m0 = metrics(aio)
        aio.kill9()
        log_at = os.path.getsize(aio.log.name)
        aio.start()
        print("killed -9 after %s; restarted" % m0)

        def resumed():
            with open(aio.log.name, "rb") as f:
                f.seek(log_at)
                return b"lifecycle: resuming a pass from its cursor" in f.read()
        wait_for("the restarted worker resuming from its cursor", resumed, timeout=20)

        def uploads():
            r = s3.list_multipart_uploads(Bucket="lcp", Prefix="mpu/")
            return {u["UploadId"] for u in r.get("Uploads", [])}
        wait_for("the old uploads aborted", lambda: not (set(old) & uploads()), timeout=30)
        age = time.time() - t_young
        expect(set(young) <= uploads() and age < 100,
               "the young uploads (%.1f days old) are kept" % age)
        aborted = m0.get("iolake_gw_lc_uploads_aborted_total", 0) + metrics(aio).get(
            "iolake_gw_lc_uploads_aborted_total", 0)
        expect(aborted <= 3, "metrics: %d uploads aborted when the young are kept" % aborted)
        wait_for("exp/ expired", lambda: not list_keys(s3, "lcp", "exp/"), timeout=60)
        wait_for("tag/ down to the kept set", lambda: list_keys(s3, "lcp", "tag/") == want_tag,
                 timeout=30)

        def nc_done():
            v, _ = list_versions(s3, "lcv", "nc/")
            return len(v) == 600 * 3
        wait_for("nc/ down to 3 versions a key", nc_done, timeout=60)

        def dm_done():
            _, m = list_versions(s3, "lcv", "dm/")
            return [x["Key"] for x in m] == ["dm/kept"]
        wait_for("lone delete markers removed", dm_done, timeout=30)

        # The oracle: exactly the computed sets.
        expect(list_keys(s3, "lcp") == want_tag | {"other/%d" % i for i in range(10)},
               "lcp lists exactly tag/'s kept keys and other/")
        vers, marks = list_versions(s3, "lcv")
        want_v = {(k, ids[v]) for k, ids in nc.items() for v in (2, 3, 4)}
        want_v.add(("dm/kept", kept_vid))
        got_v = {(x["Key"], x["VersionId"]) for x in vers}
        expect(got_v == want_v, "lcv keeps each nc/ key's 3 newest versions (and dm/kept)")
        expect(all(x["IsLatest"] == (x["VersionId"] == nc[x["Key"]][4])
                   for x in vers if x["Key"].startswith("nc/")),
               "the current version of each nc/ key is still its newest")
        expect([x["Key"] for x in marks] == ["dm/kept"], "only dm/kept's marker is left")
        m1 = metrics(aio)
        print("metrics after the restart:", m1)
        m = {k: m0.get(k, 0) + m1.get(k, 0) for k in set(m0) | set(m1)}
        # Ops answered between the last read of the metrics and the kill
        # are counted by neither process: up to a batch (200) of them.
        for name, want in (("expired", 4000 + 1000), ("versions_expired", 600 * 2 + 20)):
            got = m.get("iolake_gw_lc_%s_total" % name, 0)
            expect(want - 200 <= got <= want, "metrics: %s %d of %d" % (name, got, want))
        expect(aborted == 3, "metrics: uploads_aborted %d of 3" % aborted)
        expect(m1.get("iolake_gw_lc_skipped_total", 0) <= 201,
               "after the restart at most one batch redone (%d ops skipped)" %
               m1.get("iolake_gw_lc_skipped_total", 0))
        expect(m.get("iolake_gw_lc_refused_total") == 0 and
               m.get("iolake_gw_lc_failed_total", 0) == 0, "metrics: nothing refused or failed")
        expect(m1.get("iolake_gw_lc_passes_total", 0) >= 2, "metrics: passes")
        # Scanned the same way: entries the killed process listed after the
        # last read of its metrics and then removed are scanned by neither.
        scanned = m.get("iolake_gw_lc_scanned_total", 0)
        expect(scanned >= n_objects - 200, "metrics: scanned %d of at least %d" %
               (scanned, n_objects - 200))

        # Space: GC drained, then the bytes are the live data's.
        wait_for("meta's GC queue drained", lambda: gc_queue(aio) == 0, timeout=40)
        after = df(aio)
        print("space: empty %d, all written %d, after lifecycle %d" % (base, created, after))
        expect(after < created, "the lifecycle freed space")
        # The live data's footprint: objects over the inline size (4 KiB)
        # have 4+2 shards of ceil(size / 4) bytes; smaller ones live in
        # their meta record and hold no OSD bytes.
        def footprint(size):
            return 0 if size <= 4096 else 6 * -(-size // 4)
        live = (footprint(6000) * (1000 + 10) + footprint(5001) * 600 * 3 +
                footprint(5) * 2)
        expect(after - base == live, "used bytes are the live data's: %d == %d" %
               (after - base, live))
        for k in list_keys(s3, "lcp"):
            s3.delete_object(Bucket="lcp", Key=k)
        for i, u in enumerate(young):
            code(s3.abort_multipart_upload, Bucket="lcp", Key="mpu/young%d" % i, UploadId=u)
        vers, marks = list_versions(s3, "lcv")
        for x in vers + marks:
            s3.delete_object(Bucket="lcv", Key=x["Key"], VersionId=x["VersionId"])
        wait_for("meta's GC queue drained again", lambda: gc_queue(aio) == 0, timeout=40)
        wait_for("space back to the empty cluster's once the live data is deleted",
                 lambda: df(aio) == base, timeout=20)
        print("space: after deleting the live data by hand %d (empty %d)" % (df(aio), base))
    finally:
        aio.close()
    print("elapsed %.1f s" % (time.time() - T0))
    if FAILS:
        print("FAILED:", len(FAILS))
        sys.exit(1)
    print("PASS test_s3_lifecycle")


if __name__ == "__main__":
    main()
