#!/usr/bin/env python3
"""test_s3_list_uploads.py — ListMultipartUploads with a delimiter on
iolake-aio, driven by boto3: uploads under a/1 (twice), a/2, b/x/1, c,
"d e/+1" and "f+g" listed with delimiter "/" and prefixes "", "a/",
"b/"; CommonPrefixes and Uploads asserted exactly; max-uploads=1 walked
page by page with the markers each page hands back (a page that ends on
a common prefix names it as NextKeyMarker with no NextUploadIdMarker,
and the next page does not repeat it) and with boto3's paginator;
encoding-type=url applied to keys, prefixes, the delimiter and the
markers. Every upload is aborted at the end (the bucket then deletes)."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

B = "lsu"
KEYS = ["a/1", "a/2", "b/x/1", "c", "a/1", "d e/+1", "f+g"]


def expect(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r want %r" % (what, got, want))
    print("ok:", what, "->", got)


def ups(r):
    return [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]


def cps(r):
    return [c["Prefix"] for c in r.get("CommonPrefixes", [])]


def main():
    aio = Aio()
    made = []
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket=B)
        for k in KEYS:
            made.append((k, s3.create_multipart_upload(Bucket=B, Key=k)["UploadId"]))
        made.sort()
        by_key = lambda *ks: [m for m in made if m[0] in ks]  # noqa: E731
        L = lambda **kw: s3.list_multipart_uploads(Bucket=B, **kw)  # noqa: E731

        r = L(Delimiter="/")
        expect((cps(r), ups(r), r["Delimiter"], r["IsTruncated"]),
               (["a/", "b/", "d e/"], by_key("c", "f+g"), "/", False), "delimiter / at the top")
        r = L(Delimiter="/", Prefix="")
        expect((cps(r), ups(r)), (["a/", "b/", "d e/"], by_key("c", "f+g")), "prefix ''")
        r = L(Delimiter="/", Prefix="b/")
        expect((cps(r), ups(r), r["Prefix"]), (["b/x/"], [], "b/"), "prefix b/")
        r = L(Delimiter="/", Prefix="a/")
        expect((cps(r), ups(r)), ([], by_key("a/1", "a/2")), "prefix a/: the uploads, a/1 twice")
        r = L(Delimiter="x/", Prefix="b/")
        expect((cps(r), ups(r)), (["b/x/"], []), "a two-byte delimiter")
        r = L()
        expect((cps(r), ups(r), "Delimiter" in r), ([], made, False), "no delimiter: every upload")

        # Pages of one entry: a common prefix counts once; a page ending on
        # one names it (no upload id) and the next page starts after it.
        want = [("cp", "a/"), ("cp", "b/"), ("up",) + by_key("c")[0], ("cp", "d e/"),
                ("up",) + by_key("f+g")[0]]
        got, kw = [], {}
        for i in range(10):
            r = L(Delimiter="/", MaxUploads=1, **kw)
            page = [("cp", p) for p in cps(r)] + [("up",) + u for u in ups(r)]
            expect(len(page), 1, "page %d holds one entry" % i)
            got += page
            if not r["IsTruncated"]:
                expect("NextKeyMarker" in r, False, "last page: no NextKeyMarker")
                break
            e = page[0]
            expect((r["NextKeyMarker"], r.get("NextUploadIdMarker")),
                   (e[1], None if e[0] == "cp" else e[2]), "page %d markers" % i)
            kw = {"KeyMarker": r["NextKeyMarker"]}
            if r.get("NextUploadIdMarker"):
                kw["UploadIdMarker"] = r["NextUploadIdMarker"]
        expect(got, want, "pages of one, by markers")
        r = L(Delimiter="/", KeyMarker="a/1")
        expect((cps(r), ups(r)), (["b/", "d e/"], by_key("c", "f+g")),
               "key-marker inside a common prefix: that prefix is not listed again")
        r = L(Delimiter="/", Prefix="a/", MaxUploads=2)
        expect((ups(r), r["IsTruncated"], r["NextKeyMarker"], r["NextUploadIdMarker"]),
               (made[:2], True, "a/1", made[1][1]), "two uploads of a/1 on a page of 2")
        r = L(Delimiter="/", Prefix="a/", KeyMarker="a/1", UploadIdMarker=made[0][1])
        expect(ups(r), made[1:3], "upload-id-marker: after the first upload of a/1")

        pages = list(s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=B, Delimiter="/", PaginationConfig={"PageSize": 1}))
        expect((len(pages), sum((cps(p) for p in pages), []), sum((ups(p) for p in pages), [])),
               (5, ["a/", "b/", "d e/"], by_key("c", "f+g")), "boto3 paginator, pages of one")
        pages = list(s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=B, Delimiter="/", Prefix="a/", PaginationConfig={"PageSize": 1}))
        expect(sum((ups(p) for p in pages), []), by_key("a/1", "a/2"), "paginator under a/")

        # encoding-type=url: boto3 does not decode this listing, so the
        # encoded forms come back as S3 sends them.
        r = L(Delimiter="/", EncodingType="url")
        expect((cps(r), [k for k, _ in ups(r)], r["Delimiter"], r["EncodingType"]),
               (["a/", "b/", "d%20e/"], ["c", "f%2Bg"], "/", "url"), "url-encoded listing")
        r = L(Delimiter="+", Prefix="d e/", EncodingType="url")
        expect((cps(r), r["Prefix"], r["Delimiter"]), (["d%20e/%2B"], "d%20e/", "%2B"),
               "url-encoded prefix, delimiter and common prefix")
        r = L(Delimiter="/", MaxUploads=4, EncodingType="url")
        expect((r["IsTruncated"], r["NextKeyMarker"]), (True, "d%20e/"),
               "url-encoded NextKeyMarker (a common prefix)")
        r = L(Delimiter="/", KeyMarker="d e/", EncodingType="url")
        expect((r["KeyMarker"], [k for k, _ in ups(r)]), ("d%20e/", ["f%2Bg"]),
               "url-encoded KeyMarker; the page after d e/")
        # max-uploads=0: an empty page, truncated while uploads exist (S3).
        r = L(MaxUploads=0)
        expect((ups(r), cps(r), r["IsTruncated"], r["MaxUploads"]), ([], [], True, 0),
               "max-uploads=0: empty and truncated")
        r = L(MaxUploads=0, Prefix="zzz/")
        expect((ups(r), r["IsTruncated"]), ([], False),
               "max-uploads=0 under a prefix with no upload: empty, not truncated")
    except Exception:
        print("aio log:", aio.log.name)
        os.system("tail -30 %s" % aio.log.name)
        raise
    finally:
        try:
            if aio.proc and aio.proc.poll() is None:
                s3 = aio.client()
                for k, u in made:
                    s3.abort_multipart_upload(Bucket=B, Key=k, UploadId=u)
                expect(s3.list_multipart_uploads(Bucket=B).get("Uploads", []), [], "all aborted")
                s3.delete_bucket(Bucket=B)
        finally:
            aio.close()
    print("PASS test_s3_list_uploads")


if __name__ == "__main__":
    main()
