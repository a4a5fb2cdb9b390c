#!/usr/bin/python3
"""test_upgrade.py — a data dir written by an older IOLake opens with this
build and reads back whole: for each tests/upgrade/fixtures/*.tar.xz (an
aio's data dir and manifest, made by tests/upgrade/make_fixture.py with
the commit its name gives), unpacked into a fresh dir:

- this build's iolake-aio starts on it with the old root key (for a
  fixture whose old aio was killed under writes, it recovers that build's
  unclean logs: every acknowledged PUT reads back, nothing partial is
  listed);
- every part of tests/upgrade/dataset.py's manifest reads back (inline
  and erasure-coded objects with their headers and tags, the multipart
  object whole and by part, versions and a delete marker, SSE-S3 and
  SSE-C objects, lock retention and legal hold, the bucket settings, the
  second user's key and the policy that grants it reads), and the object
  deleted before the upgrade stays deleted;
- it takes new writes on the old data: a new object in every bucket, a
  new version, an overwrite, a delete; SIGTERM ends it with 0;
- started again, the old data and the new read back.
An operator's upgrade is that: stop, install the new binaries, start on
the same dirs (docs/operations.md, "Upgrades").
"""
import glob, json, os, subprocess, sys, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "upgrade"))
from aio_py import AK, SK, Aio, Checks, error_code, listing  # noqa: E402
import dataset  # noqa: E402

checks = Checks()
expect = checks.expect
NEW = [("plain", "after/new-inline", 2000), ("plain", "after/new-ec", 700000),
       ("mpu", "after-new", 50000), ("secret", "after-new", 60000)]


def clients(aio, m):
    return aio.client(*m["root"]), aio.client(*m["alice_keys"])


def write_after(s3):
    for b, k, size in NEW:
        s3.put_object(Bucket=b, Key=k, Body=dataset.body(k, size))
    r = s3.put_object(Bucket="versioned", Key="doc", Body=dataset.body("doc-after", 4321))
    s3.put_object(Bucket="plain", Key="one", Body=b"1")   # an overwrite
    s3.delete_object(Bucket="plain", Key="empty")
    return r["VersionId"]


def check_after(s3, m, doc_v3, what):
    for b, k, size in NEW:
        got = s3.get_object(Bucket=b, Key=k)["Body"].read()
        expect(got == dataset.body(k, size), True, "%s: %s/%s written after the upgrade" % (
            what, b, k))
    got = s3.get_object(Bucket="versioned", Key="doc")["Body"].read()
    expect(got == dataset.body("doc-after", 4321), True, "%s: versioned/doc's new version" % what)
    vs = [v["VersionId"] for v in s3.list_object_versions(Bucket="versioned", Prefix="doc")
          .get("Versions", [])]
    old = [v["version"] for v in m["versions"] if v["key"] == "doc"]
    expect(sorted(vs), sorted(old + [doc_v3]), "%s: versioned/doc: the three old versions and "
           "the new" % what)
    for v in m["versions"]:
        if v["key"] == "doc":
            got = s3.get_object(Bucket="versioned", Key="doc", VersionId=v["version"])["Body"].read()
            expect(got == dataset.body(v["name"], v["size"]), True,
                   "%s: versioned/doc %s still reads" % (what, v["name"]))
    expect(s3.get_object(Bucket="plain", Key="one")["Body"].read(), b"1",
           "%s: plain/one overwritten" % what)
    expect(error_code(s3.head_object, Bucket="plain", Key="empty"), "404",
           "%s: plain/empty deleted" % what)


def check_killed(s3, m, name):
    """A fixture made with --kill: every PUT the old build acknowledged
    before SIGKILL reads back byte for byte, and each object listed under
    inflight/ is one that was attempted, whole. Returns m with those
    listed keys in plain_extra (the data set's listing check)."""
    if "acked" not in m:
        return m
    listed = {o["Key"]: o["Size"] for o in listing(s3, "plain", "inflight/")}
    attempted = dict(map(tuple, m["attempted"]))
    lost = [k for k, size in m["acked"] if k not in listed or
            s3.get_object(Bucket="plain", Key=k)["Body"].read() != dataset.body(k, size)]
    expect(lost, [], "%s: all %d PUTs acknowledged before the kill read back" % (
        name, len(m["acked"])))
    strays = [k for k in listed if k not in attempted or
              s3.get_object(Bucket="plain", Key=k)["Body"].read() !=
              dataset.body(k, attempted[k])]
    expect(strays, [], "%s: every listed inflight/ object was attempted, and is whole (%d listed)"
           % (name, len(listed)))
    return dict(m, plain_extra=m.get("plain_extra", []) + sorted(listed))


def run_fixture(path):
    name = os.path.basename(path)
    with tarfile.open(path) as t:   # its flags first: the aio takes them at start
        m = json.load(t.extractfile("manifest.json"))
    aio = Aio(args=m.get("aio_args", []))
    try:
        subprocess.run(["tar", "-C", aio.tmp, "-xJf", path], check=True)
        expect(m["root"], [AK, SK], "%s: made with the tests' root key" % name)
        aio.osd_size = m["osd_size"]
        aio.start()
        s3, alice = clients(aio, m)
        m = check_killed(s3, m, name)
        dataset.check(s3, alice, m, lambda got, want, what: expect(got, want, "%s, upgraded: %s"
                                                                    % (name, what)))
        doc_v3 = write_after(s3)
        check_after(s3, m, doc_v3, name + ", upgraded")
        rc, _ = aio.stop(limit=15)
        expect(rc, 0, "%s: iolake-aio exits 0 on SIGTERM" % name)

        aio.start()
        s3, alice = clients(aio, m)
        m_now = dict(m, plain=[o for o in m["plain"] if o["key"] not in ("empty", "one")],
                     plain_extra=m.get("plain_extra", []) + ["one"] +
                     [k for b, k, _ in NEW if b == "plain"],
                     versions_extra=1, doc_current=("doc-after", 4321))
        dataset.check(s3, alice, m_now, lambda got, want, what: expect(
            got, want, "%s, restarted: %s" % (name, what)))
        check_after(s3, m, doc_v3, name + ", restarted")
        rc, _ = aio.stop(limit=15)
        expect(rc, 0, "%s: iolake-aio exits 0 on SIGTERM again" % name)
    finally:
        aio.close()


if __name__ == "__main__":
    fixtures = sorted(glob.glob(os.path.join(HERE, "..", "upgrade", "fixtures", "*.tar.xz")))
    expect(len(fixtures) > 0, True, "upgrade fixtures found")
    for fx in fixtures:
        run_fixture(fx)
    checks.finish()
