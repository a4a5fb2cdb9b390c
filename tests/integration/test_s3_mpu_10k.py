#!/usr/bin/env python3
"""test_s3_mpu_10k.py — a multipart object of 10,000 parts (S3's most) on
iolake-aio, with the minimum part size lowered by the test-only flag
--debug-min-part-size (off by default; 10,000 parts of S3's 5 MiB would be
50 GB): a CRC64NVME FULL_OBJECT upload of 10,000 small parts of varied
sizes, ListParts paged to the end, Complete with all of them (a ~1 MB
document), then the whole object (bytes and its CRC64NVME), ranges across
part boundaries, partNumber of the first, a middle and the last part
(9999 with that part's checksum), GetObjectAttributes' parts paged to the
end, CopyObject of the whole object and UploadPartCopy of a range across
parts, a split of the key range holding it (its 10,000 part rows move with
it to another range group) and the merge back, with reads after each, and
DELETE of the object and at once of its bucket giving back the parts'
space (iolake_osd_used_bytes back where it started; it counts the 20 parts of 300 KiB, not the small ones, whose
shards the OSDs keep in their index).

The object keeps its parts' layouts in part rows under its key and a
per-part summary in its record (docs/architecture.md, "Multipart
records", issue 18): every read fetches the rows of the parts it needs;
DELETE queues the record, and the GC worker frees the rows in batches.
Prints the time of each step."""
import base64, hashlib, http.client, os, random, re, subprocess, sys, threading, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, BUILD, SK, Aio  # noqa: E402
import s3sign  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
BUCKET = "tenk"
KEY = "big"
NPARTS = int(os.environ.get("NPARTS", "10000"))
THREADS = 6


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got if len(repr(got)) < 80 else repr(got)[:80])


class Conn:
    """One kept-alive connection, SigV4-signed requests."""

    def __init__(self, port):
        self.port = port
        self.host = "127.0.0.1:%d" % port
        self.sg = s3sign.Signer(AK, SK)
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def req(self, method, query=None, headers=None, body=b"", key=KEY):
        path = "/%s/%s" % (BUCKET, key) if key else "/" + BUCKET
        h = {"host": self.host}
        h.update(headers or {})
        h, _, _ = self.sg.sign_headers(method, path, h, hashlib.sha256(body).hexdigest(), query=query)
        h["content-length"] = str(len(body))
        if query:
            path += "?" + "&".join(k + ("=" + v if v else "") for k, v in sorted(query.items()))
        self.c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            self.c.putheader(k, v)
        self.c.endheaders()
        if body:
            self.c.send(body)
        r = self.c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()


def used_bytes(aio):
    text = urllib.request.urlopen(aio.ep + "/metrics", timeout=5).read().decode()
    return sum(int(v) for v in re.findall(r'^iolake_osd_used_bytes\{osd="\d+"\} (\d+)$', text, re.M))


def reads(c, parts, data, what):
    """Ranges across part boundaries and partNumber of the first, a middle
    and the last part, against the bytes uploaded."""
    t0 = time.time()
    ends = [0]
    for p in parts:
        ends.append(ends[-1] + len(p))
    mid = len(data) // 2
    spans = [(mid, mid + 999), (0, 0), (len(data) - 1, len(data) - 1), (len(data) - 5000, len(data) - 1)]
    for i in (1, 250, 251, NPARTS // 2, NPARTS - 2):   # a few bytes each side of a boundary
        spans.append((ends[i] - 3, ends[i] + 3))
    for a, z in spans:
        st, h, b = c.req("GET", headers={"range": "bytes=%d-%d" % (a, z)})
        if (st, b) != (206, data[a:z + 1]):
            raise AssertionError("%srange %d-%d: status %d, %d bytes" % (what, a, z, st, len(b)))
    for pn in (1, NPARTS // 2, NPARTS - 1, NPARTS):
        st, h, b = c.req("GET", {"partNumber": str(pn)}, {"x-amz-checksum-mode": "ENABLED"})
        want = (206, True, s3sign.checksum("crc64nvme", parts[pn - 1]), str(NPARTS),
                "bytes %d-%d/%d" % (ends[pn - 1], ends[pn] - 1, len(data)))
        got = (st, b == parts[pn - 1], h.get("x-amz-checksum-crc64nvme"),
               h.get("x-amz-mp-parts-count"), h.get("content-range"))
        if got != want:
            raise AssertionError("%sGET partNumber=%d: got %r want %r" % (what, pn, got, want))
    st, h, _ = c.req("HEAD", {"partNumber": str(NPARTS // 2)})
    expect((st, h.get("content-length")), (206, str(len(parts[NPARTS // 2 - 1]))),
           "%sHEAD partNumber=%d" % (what, NPARTS // 2))
    print("ok: %s%d ranges across part boundaries and 4 partNumber GETs (%.1f s)" %
          (what, len(spans), time.time() - t0))


def main():
    # two range groups: the bucket's records live in a range group, which
    # a split moves to the other
    aio = Aio(osd_size="1G", args=["--debug-min-part-size", "1", "--range-groups", "2",
                                   "--gc-interval", "500ms"])   # part rows: freed by the GC worker
    aio.start()
    try:
        c = Conn(aio.port)
        st, _, b = c.req("PUT", key=None)
        assert st == 200, b
        time.sleep(1.2)
        base = used_bytes(aio)
        st, h, b = c.req("POST", {"uploads": ""}, {"x-amz-checksum-algorithm": "CRC64NVME"})
        assert st == 200, b
        uid = re.search(r"<UploadId>([^<]+)</UploadId>", b.decode()).group(1)
        # small parts (their shards sit in the OSDs' index, which
        # iolake_osd_used_bytes does not count), and every 500th of 300 KiB
        # (extents it does count: the DELETE must give them back)
        parts = [rnd.randbytes(300 << 10 if i % 500 == 250 else rnd.randrange(1, 200))
                 for i in range(NPARTS)]
        etags = [None] * NPARTS
        errs = []

        def worker(idx):
            w = Conn(aio.port)
            for i in range(idx, NPARTS, THREADS):
                st, h, b = w.req("PUT", {"partNumber": str(i + 1), "uploadId": uid}, body=parts[i])
                if st != 200:
                    errs.append((i + 1, st, b[:200]))
                    return
                etags[i] = h["etag"]

        t0 = time.time()
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        expect(errs, [], "%d parts uploaded (%.1f s)" % (NPARTS, time.time() - t0))

        t0 = time.time()
        seen, marker = 0, 0
        while True:
            st, _, b = c.req("GET", {"uploadId": uid, "part-number-marker": str(marker)})
            x = b.decode()
            nums = [int(v) for v in re.findall(r"<PartNumber>(\d+)</PartNumber>", x)]
            seen += len(nums)
            if "<IsTruncated>true</IsTruncated>" not in x:
                break
            marker = nums[-1]
        expect(seen, NPARTS, "ListParts paged to the end (%.1f s)" % (time.time() - t0))

        doc = "<CompleteMultipartUpload>" + "".join(
            "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (i + 1, etags[i])
            for i in range(NPARTS)) + "</CompleteMultipartUpload>"
        t0 = time.time()
        st, h, b = c.req("POST", {"uploadId": uid}, body=doc.encode())
        data = b"".join(parts)
        whole = s3sign.checksum("crc64nvme", data)
        expect((st, re.findall(r"<ChecksumCRC64NVME>([^<]+)<", b.decode())), (200, [whole]),
               "Complete of %d parts, %d-byte document (%.1f s)" % (NPARTS, len(doc),
                                                                   time.time() - t0))
        t0 = time.time()
        st, h, b = c.req("GET", headers={"x-amz-checksum-mode": "ENABLED"})
        expect((st, b == data, h.get("x-amz-checksum-crc64nvme")), (200, True, whole),
               "GET of the whole %d-byte object (%.1f s)" % (len(data), time.time() - t0))
        reads(c, parts, data, "")
        t0 = time.time()
        marker, seen, pages = 0, [], 0
        while True:
            st, h, b = c.req("GET", {"attributes": ""}, {"x-amz-object-attributes": "ObjectParts",
                                                          "x-amz-max-parts": "1000",
                                                          "x-amz-part-number-marker": str(marker)})
            x = b.decode()
            seen += [int(v) for v in re.findall(r"<PartNumber>(\d+)<", x)]
            pages += 1
            if "<IsTruncated>true</IsTruncated>" not in x:
                break
            marker = int(re.search(r"<NextPartNumberMarker>(\d+)<", x).group(1))
        expect((seen == list(range(1, NPARTS + 1)), re.findall(r"<PartsCount>(\d+)<", x)),
               (True, [str(NPARTS)]),
               "GetObjectAttributes: %d parts in %d pages (%.1f s)" % (len(seen), pages,
                                                                       time.time() - t0))

        # CopyObject of the whole object, UploadPartCopy of a range across parts
        t0 = time.time()
        st, _, b = c.req("PUT", headers={"x-amz-copy-source": "/%s/%s" % (BUCKET, KEY)}, key="copy")
        expect(st, 200, "CopyObject of the %d-part object (%.1f s)" % (NPARTS, time.time() - t0))
        st, _, b = c.req("GET", key="copy")
        expect((st, b == data), (200, True), "the copy reads back")
        c.req("DELETE", key="copy")
        st, _, b = c.req("POST", {"uploads": ""}, key="pc")
        puid = re.search(r"<UploadId>([^<]+)</UploadId>", b.decode()).group(1)
        a, z = len(data) // 3, len(data) // 3 + 654321
        st, _, b = c.req("PUT", {"partNumber": "1", "uploadId": puid},
                         {"x-amz-copy-source": "/%s/%s" % (BUCKET, KEY),
                          "x-amz-copy-source-range": "bytes=%d-%d" % (a, z)}, key="pc")
        etag = re.search(r"<ETag>([^<]+)</ETag>", b.decode()).group(1)
        doc = ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
               "</CompleteMultipartUpload>" % etag).replace("&quot;", '"')
        st, _, b = c.req("POST", {"uploadId": puid}, body=doc.encode(), key="pc")
        expect(st, 200, "UploadPartCopy of bytes %d-%d, completed" % (a, z))
        st, _, b = c.req("GET", key="pc")
        expect((st, b == data[a:z + 1]), (200, True), "the part copy reads back")
        c.req("DELETE", key="pc")

        # A split of the range holding the object moves its part rows with
        # it (to the other range group); the merge brings them back.
        meta = open(os.path.join(aio.data, "meta", "rpc-addr")).read().strip()
        admin = [os.path.join(BUILD, "iolake-admin"), "--meta", meta, "range"]
        for verb, at in (("split", KEY), ("merge", "a")):
            t0 = time.time()
            p = subprocess.run(admin + [verb, BUCKET, at], capture_output=True, text=True)
            m = re.search(r"(\d+) records moved", p.stdout)
            expect((p.returncode, bool(m) and int(m.group(1)) > NPARTS), (0, True),
                   "range %s at %s: %s (%.1f s)" % (verb, at, (p.stdout + p.stderr).strip()[:120],
                                                    time.time() - t0))
            reads(c, parts, data, "after the %s: " % verb)

        time.sleep(1.2)   # the OSDs refresh their gauges every second
        held = used_bytes(aio) - base
        expect(held > 0, True, "the parts hold %d bytes of shards" % held)
        t0 = time.time()
        st, _, _ = c.req("DELETE")
        expect(st, 204, "DELETE")
        # and the bucket at once: its range goes while the object's part
        # rows still wait for the GC worker, which frees them in the group
        # that queued the record (no route is left to them)
        st, _, b = c.req("DELETE", key=None)
        expect(st, 204, "DELETE of the bucket")
        end = time.time() + 120
        while time.time() < end and used_bytes(aio) > base:
            time.sleep(1)
        time.sleep(1.2)
        expect(used_bytes(aio) <= base, True,
               "every part's space freed (%.1f s; %d bytes over the start)" %
               (time.time() - t0, used_bytes(aio) - base))
        print("PASS test_s3_mpu_10k")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
