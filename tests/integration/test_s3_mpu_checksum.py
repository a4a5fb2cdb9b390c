#!/usr/bin/env python3
"""test_s3_mpu_checksum.py — multipart checksums on iolake-aio, as AWS
documents them ("Checking object integrity"), with requests built and
signed here (s3sign.py: Debian's botocore 1.29 knows neither
x-amz-checksum-type nor CRC64NVME) and with Debian's boto3 for SHA256:

- CreateMultipartUpload with x-amz-checksum-algorithm / -type for every
  allowed pair (CRC32, CRC32C COMPOSITE and FULL_OBJECT; CRC64NVME
  FULL_OBJECT; SHA1, SHA256 COMPOSITE): echoed; disallowed pairs, unknown
  algorithms and a type alone -> InvalidRequest.
- UploadPart: the part's checksum is checked (wrong -> BadDigest, the
  part not stored), another algorithm -> InvalidRequest, none named ->
  computed by the gateway; ListParts shows each part's value and the
  upload's algorithm and type.
- CompleteMultipartUpload: the parts' listed checksums are checked
  (InvalidPart), the object's value is COMPOSITE (the algorithm over the
  concatenated binary part values, "-N") or FULL_OBJECT (the CRC of the
  whole object, which the gateway combines from the parts' CRCs);
  a whole-object x-amz-checksum-<algo> on Complete is checked (BadDigest),
  of another algorithm -> InvalidRequest.
- GET / HEAD with x-amz-checksum-mode: ENABLED return it with its type;
  partNumber=N returns that part's; GetObjectAttributes gives Checksum
  and ObjectParts (sizes and checksums, paged by x-amz-max-parts /
  x-amz-part-number-marker).
- UploadPartCopy into a checksummed upload carries the copied bytes'
  checksum into the object's.
Every value is computed here from the bytes sent, independently of the
gateway's C code."""
import base64, hashlib, os, random, re, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Aio  # noqa: E402
import s3sign  # noqa: E402

SEED = int(os.environ.get("SEED", random.randrange(1 << 30)))
print("seed", SEED)
rnd = random.Random(SEED)
BUCKET = "mpuck"
MIB = 1 << 20
HASHES = {"sha1": hashlib.sha1, "sha256": hashlib.sha256}


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got if len(repr(got)) < 80 else repr(got)[:80])


class Raw:
    def __init__(self, aio):
        self.port = aio.port
        self.host = "127.0.0.1:%d" % aio.port
        self.sg = s3sign.Signer(AK, SK)

    def req(self, method, key, query=None, headers=None, body=b""):
        path = "/%s/%s" % (BUCKET, key)
        h = {"host": self.host}
        h.update(headers or {})
        h, _, _ = self.sg.sign_headers(method, path, h, hashlib.sha256(body).hexdigest(),
                                       query=query)
        if body:
            h["content-length"] = str(len(body))
        if query:
            path += "?" + "&".join(k + ("=" + v if v else "") for k, v in sorted(query.items()))
        return s3sign.request(self.port, method, path, h, body)


def raw_of(algo, b64):
    return base64.b64decode(b64)


def composite(algo, part_values):
    cat = b"".join(base64.b64decode(v) for v in part_values)
    return s3sign.checksum(algo, cat) + "-%d" % len(part_values)


def xml_vals(x, tag):
    return re.findall(r"<%s>([^<]*)</%s>" % (tag, tag), x)


def create(raw, key, algo=None, ctype=None):
    h = {}
    if algo:
        h["x-amz-checksum-algorithm"] = algo.upper()
    if ctype:
        h["x-amz-checksum-type"] = ctype
    st, hd, b = raw.req("POST", key, {"uploads": ""}, h)
    return st, hd, b


def upload_id(b):
    return xml_vals(b.decode(), "UploadId")[0]


def put_part(raw, key, uid, n, data, headers=None):
    return raw.req("PUT", key, {"partNumber": str(n), "uploadId": uid}, headers or {}, data)


def complete(raw, key, uid, parts, headers=None):
    """parts: (number, etag, {algo: value} or None)"""
    x = "<CompleteMultipartUpload>"
    for n, etag, ck in parts:
        x += "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag>" % (n, etag)
        for a, v in (ck or {}).items():
            x += "<Checksum%s>%s</Checksum%s>" % (a.upper(), v, a.upper())
        x += "</Part>"
    x += "</CompleteMultipartUpload>"
    return raw.req("POST", key, {"uploadId": uid}, headers or {}, x.encode())


def one_upload(raw, algo, ctype, sizes):
    """An upload of parts of those sizes, each sent with its checksum; the
    object's checks. Returns (key, data, part values)."""
    full = ctype == "FULL_OBJECT"
    key = "obj-%s-%s" % (algo, ctype)
    st, h, b = create(raw, key, algo, ctype)
    expect((st, h.get("x-amz-checksum-algorithm"), h.get("x-amz-checksum-type")),
           (200, algo.upper(), ctype), "create %s %s" % (algo, ctype))
    uid = upload_id(b)
    datas, etags, vals = [], [], []
    for i, size in enumerate(sizes, 1):
        d = rnd.randbytes(size)
        v = s3sign.checksum(algo, d)
        # the last part without a header: the gateway computes it
        hdr = {"x-amz-checksum-" + algo: v} if i < len(sizes) else {}
        st, h, b = put_part(raw, key, uid, i, d, hdr)
        assert st == 200, (st, b)
        expect(h.get("x-amz-checksum-" + algo), v, "part %d of %s echoes its checksum" % (i, key))
        datas.append(d)
        etags.append(h["etag"])
        vals.append(v)
    st, _, b = raw.req("GET", key, {"uploadId": uid})
    x = b.decode()
    expect((st, xml_vals(x, "Checksum" + algo.upper())), (200, vals), "ListParts values")
    expect((xml_vals(x, "ChecksumAlgorithm"), xml_vals(x, "ChecksumType")),
           ([algo.upper()], [ctype]), "ListParts algorithm and type")
    data = b"".join(datas)
    want = s3sign.checksum(algo, data) if full else composite(algo, vals)
    st, h, b = complete(raw, key, uid, [(i + 1, etags[i], {algo: vals[i]})
                                        for i in range(len(sizes))])
    x = b.decode()
    assert st == 200, (st, x)
    expect((xml_vals(x, "Checksum" + algo.upper()), xml_vals(x, "ChecksumType")),
           ([want], [ctype]), "Complete's value of %s" % key)
    check_object(raw, key, algo, ctype, data, want, sizes, vals)
    return key, data, vals


def check_object(raw, key, algo, ctype, data, want, sizes, vals):
    hname = "x-amz-checksum-" + algo
    for method in ("GET", "HEAD"):
        st, h, b = raw.req(method, key, headers={"x-amz-checksum-mode": "ENABLED"})
        assert st == 200 and (method == "HEAD" or b == data), (st, len(b))
        expect((h.get(hname), h.get("x-amz-checksum-type")), (want, ctype),
               "%s %s with checksum mode" % (method, key))
    st, h, b = raw.req("GET", key)
    expect(hname in h, False, "no checksum without the mode")
    # partNumber=2: that part's bytes and its own checksum
    off = sizes[0]
    st, h, b = raw.req("GET", key, {"partNumber": "2"}, {"x-amz-checksum-mode": "ENABLED"})
    expect((st, b == data[off:off + sizes[1]], h.get(hname)), (206, True, vals[1]),
           "GET partNumber=2 of %s" % key)
    # a range never carries a checksum
    st, h, b = raw.req("GET", key, headers={"x-amz-checksum-mode": "ENABLED", "range": "bytes=0-9"})
    expect((st, hname in h), (206, False), "range of %s has no checksum" % key)
    # GetObjectAttributes: Checksum and ObjectParts, paged
    attrs = {"x-amz-object-attributes": "ETag,Checksum,ObjectParts,ObjectSize"}
    st, h, b = raw.req("GET", key, {"attributes": ""}, attrs)
    x = b.decode()
    assert st == 200, (st, x)
    expect((xml_vals(x, "Checksum" + algo.upper())[0], xml_vals(x, "ChecksumType"),
            xml_vals(x, "PartsCount"), xml_vals(x, "ObjectSize")),
           (want, [ctype], [str(len(sizes))], [str(len(data))]), "attributes of %s" % key)
    expect((xml_vals(x, "Size"), xml_vals(x, "Checksum" + algo.upper())[1:]),
           ([str(s) for s in sizes], vals), "attributes' parts of %s" % key)
    h2 = dict(attrs, **{"x-amz-max-parts": "1", "x-amz-part-number-marker": "1"})
    st, h, b = raw.req("GET", key, {"attributes": ""}, h2)
    x = b.decode()
    expect((xml_vals(x, "PartNumber"), xml_vals(x, "IsTruncated"),
            xml_vals(x, "NextPartNumberMarker"), xml_vals(x, "Checksum" + algo.upper())[1:]),
           (["2"], ["true"], ["2"], [vals[1]]), "attributes page after part 1 of %s" % key)


def error_of(resp):
    st, _, b = resp
    return st, s3sign.error_code(b)


def main():
    aio = Aio(osd_size="512M")
    aio.start()
    try:
        s3 = aio.client(signature_version="s3v4")
        s3.create_bucket(Bucket=BUCKET)
        raw = Raw(aio)
        sizes = [5 * MIB, 5 * MIB + 3, 1234]

        # -- every allowed algorithm and type
        for algo, ctype in (("crc32", "COMPOSITE"), ("crc32", "FULL_OBJECT"),
                            ("crc32c", "COMPOSITE"), ("crc32c", "FULL_OBJECT"),
                            ("crc64nvme", "FULL_OBJECT"), ("sha1", "COMPOSITE"),
                            ("sha256", "COMPOSITE")):
            one_upload(raw, algo, ctype, sizes)

        # -- CreateMultipartUpload's refusals and defaults
        for algo, ctype in (("sha256", "FULL_OBJECT"), ("crc64nvme", "COMPOSITE"),
                            ("md5", None), (None, "COMPOSITE"), ("crc32", "BOTH")):
            expect(error_of(create(raw, "bad", algo, ctype)), (400, "InvalidRequest"),
                   "create %s %s" % (algo, ctype))
        st, h, b = create(raw, "dflt", "crc64nvme")
        expect(h.get("x-amz-checksum-type"), "FULL_OBJECT", "CRC64NVME defaults to FULL_OBJECT")
        st, h, b = create(raw, "dflt", "crc32c")
        expect(h.get("x-amz-checksum-type"), "COMPOSITE", "CRC32C defaults to COMPOSITE")

        # -- UploadPart and Complete refusals (a CRC32 FULL_OBJECT upload)
        key = "errs"
        st, h, b = create(raw, key, "crc32", "FULL_OBJECT")
        uid = upload_id(b)
        d1, d2 = rnd.randbytes(5 * MIB), rnd.randbytes(777)
        wrong = s3sign.checksum("crc32", d1 + b"x")
        expect(error_of(put_part(raw, key, uid, 1, d1, {"x-amz-checksum-crc32": wrong})),
               (400, "BadDigest"), "part with a wrong CRC32")
        st, _, b = raw.req("GET", key, {"uploadId": uid})
        expect(xml_vals(b.decode(), "PartNumber"), [], "the refused part was not stored")
        # (a small body: the answer comes before the body is read)
        expect(error_of(put_part(raw, key, uid, 1, d2,
                                 {"x-amz-checksum-sha256": s3sign.checksum("sha256", d2)})),
               (400, "InvalidRequest"), "part with another algorithm")
        st, h1, _ = put_part(raw, key, uid, 1, d1, {"x-amz-checksum-crc32":
                                                     s3sign.checksum("crc32", d1)})
        st, h2, _ = put_part(raw, key, uid, 2, d2)
        v1, v2 = s3sign.checksum("crc32", d1), s3sign.checksum("crc32", d2)
        expect(h2.get("x-amz-checksum-crc32"), v2, "a part sent without a checksum gets one")
        e1, e2 = h1["etag"], h2["etag"]
        expect(error_of(complete(raw, key, uid, [(1, e1, {"crc32": v2}), (2, e2, None)])),
               (400, "InvalidPart"), "Complete listing a wrong part checksum")
        expect(error_of(complete(raw, key, uid, [(1, e1, {"crc32c": v1}), (2, e2, None)])),
               (400, "InvalidPart"), "Complete listing another algorithm for a part")
        whole = s3sign.checksum("crc32", d1 + d2)
        expect(error_of(complete(raw, key, uid, [(1, e1, None), (2, e2, None)],
                                 {"x-amz-checksum-crc32": v1})),
               (400, "BadDigest"), "Complete with a wrong whole-object CRC32")
        expect(error_of(complete(raw, key, uid, [(1, e1, None), (2, e2, None)],
                                 {"x-amz-checksum-crc32c": s3sign.checksum("crc32c", d1 + d2)})),
               (400, "InvalidRequest"), "Complete with another algorithm's value")
        expect(error_of(complete(raw, key, uid, [(1, e1, None), (2, e2, None)],
                                 {"x-amz-checksum-type": "COMPOSITE"})),
               (400, "InvalidRequest"), "Complete with another checksum type")
        st, h, b = complete(raw, key, uid, [(1, e1, {"crc32": v1}), (2, e2, {"crc32": v2})],
                            {"x-amz-checksum-crc32": whole, "x-amz-checksum-type": "FULL_OBJECT"})
        expect((st, xml_vals(b.decode(), "ChecksumCRC32")), (200, [whole]),
               "Complete with the right whole-object CRC32")
        st, h, b = raw.req("GET", key, headers={"x-amz-checksum-mode": "ENABLED"})
        expect((b == d1 + d2, h.get("x-amz-checksum-crc32")), (True, whole), "GET of errs")

        # -- an upload with no algorithm: parts' checksums are checked, the
        #    object has none
        key = "plain"
        st, h, b = create(raw, key)
        uid = upload_id(b)
        expect("x-amz-checksum-algorithm" in h, False, "no algorithm, none echoed")
        st, h1, _ = put_part(raw, key, uid, 1, d2, {"x-amz-checksum-sha1": s3sign.checksum("sha1", d2)})
        expect(st, 200, "a part with its own checksum in an upload without one")
        st, h, b = complete(raw, key, uid, [(1, h1["etag"], None)])
        expect((st, "<ChecksumSHA1>" in b.decode()), (200, False), "no object checksum")
        st, h, b = raw.req("HEAD", key, headers={"x-amz-checksum-mode": "ENABLED"})
        expect([k for k in h if k.startswith("x-amz-checksum-")], [], "HEAD shows none")

        # -- UploadPartCopy into a CRC64NVME upload
        src = rnd.randbytes(5 * MIB + 11)
        s3.put_object(Bucket=BUCKET, Key="copy-src", Body=src)
        key = "copied"
        st, h, b = create(raw, key, "crc64nvme")
        uid = upload_id(b)
        st, _, b = raw.req("PUT", key, {"partNumber": "1", "uploadId": uid},
                           {"x-amz-copy-source": "/%s/copy-src" % BUCKET})
        x = b.decode()
        expect((st, xml_vals(x, "ChecksumCRC64NVME")), (200, [s3sign.checksum("crc64nvme", src)]),
               "UploadPartCopy's CopyPartResult carries the part's CRC64NVME")
        etag1 = xml_vals(x, "ETag")[0].replace("&quot;", '"')
        st, h2, _ = put_part(raw, key, uid, 2, d2)
        st, h, b = complete(raw, key, uid, [(1, etag1, None), (2, h2["etag"], None)])
        whole = s3sign.checksum("crc64nvme", src + d2)
        expect((st, xml_vals(b.decode(), "ChecksumCRC64NVME")), (200, [whole]),
               "the copied part's CRC combines into the object's")

        # -- Debian's boto3: SHA256 composite, its own flexible checksums
        key = "boto3-sha256"
        mp = s3.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm="SHA256")
        parts, vals, datas = [], [], []
        for i in (1, 2):
            d = rnd.randbytes(5 * MIB if i == 1 else 4321)
            r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=mp["UploadId"], PartNumber=i,
                               Body=d, ChecksumAlgorithm="SHA256")
            expect(r.get("ChecksumSHA256"), s3sign.checksum("sha256", d), "boto3 part %d" % i)
            parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
            vals.append(r["ChecksumSHA256"])
            datas.append(d)
        lp = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=mp["UploadId"])
        expect([p.get("ChecksumSHA256") for p in lp["Parts"]], vals, "boto3 list_parts")
        r = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=mp["UploadId"],
                                         MultipartUpload={"Parts": parts})
        expect(r.get("ChecksumSHA256"), composite("sha256", vals), "boto3 complete")
        g = s3.get_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
        expect((g["Body"].read() == b"".join(datas), g.get("ChecksumSHA256")),
               (True, composite("sha256", vals)), "boto3 get_object with ChecksumMode")
        # -- the details: Complete retried after success, If-None-Match: *
        key = "retry"
        st, h, b = create(raw, key, "crc32c", "FULL_OBJECT")
        uid = upload_id(b)
        st, h1, _ = put_part(raw, key, uid, 1, d2)
        st, _, b = complete(raw, key, uid, [(1, h1["etag"], None)])
        first = b.decode()
        st, _, b = complete(raw, key, uid, [(1, h1["etag"], None)])
        again = b.decode()
        expect((st, xml_vals(again, "ETag"), xml_vals(again, "ChecksumCRC32C")),
               (200, xml_vals(first, "ETag"), [s3sign.checksum("crc32c", d2)]),
               "Complete retried after its success answers the same")
        st, h, b = create(raw, key)
        uid2 = upload_id(b)
        st, h1, _ = put_part(raw, key, uid2, 1, d1)
        expect(error_of(complete(raw, key, uid, [(1, h1["etag"], None)])), (200, ""),
               "the first upload's Complete again, the object still its")
        st, _, b = raw.req("DELETE", key, {"uploadId": uid2})
        expect(error_of(complete(raw, key, uid2, [(1, h1["etag"], None)])),
               (404, "NoSuchUpload"), "Complete of an aborted upload")
        st, h, b = create(raw, key)
        uid3 = upload_id(b)
        st, h1, _ = put_part(raw, key, uid3, 1, d2)
        expect(error_of(complete(raw, key, uid3, [(1, h1["etag"], None)], {"if-none-match": "*"})),
               (412, "PreconditionFailed"), "Complete with If-None-Match: * over an object")
        expect(error_of(complete(raw, "fresh", "0" * 16, [(1, h1["etag"], None)])),
               (404, "NoSuchUpload"), "Complete of an unknown upload")
        st, h, b = create(raw, "fresh")
        uid4 = upload_id(b)
        st, h1, _ = put_part(raw, "fresh", uid4, 1, d2)
        expect(error_of(complete(raw, "fresh", uid4, [(1, h1["etag"], None)],
                                 {"if-none-match": "*"})), (200, ""),
               "Complete with If-None-Match: * and no object")
        st, _, b = raw.req("GET", key, {"uploadId": uid3, "max-parts": "0"})
        x = b.decode()
        expect((st, xml_vals(x, "PartNumber"), xml_vals(x, "IsTruncated")), (200, [], ["true"]),
               "ListParts max-parts=0: an empty, truncated page")
        print("PASS test_s3_mpu_checksum")
    finally:
        aio.close()


if __name__ == "__main__":
    main()
