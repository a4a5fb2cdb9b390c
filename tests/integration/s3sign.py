"""s3sign.py — a SigV4 signer for hand-built S3 requests in the Python
tests (imported, not run): header auth with any x-amz-content-sha256,
aws-chunked STREAMING bodies (chained chunk signatures, signed or unsigned
trailers), S3's additional checksums (CRC32, CRC32C, CRC64NVME, SHA1,
SHA256 in base64, computed here: botocore needs awscrt for the CRC32C and
CRC64NVME ones), and a raw HTTP round trip. Written from the AWS SigV4
description with hmac/hashlib, independent of the gateway's C code."""
import base64, datetime, hashlib, hmac, http.client, struct, urllib.parse, zlib

REGION = "us-east-1"
EMPTY_SHA = hashlib.sha256(b"").hexdigest()


def _table(poly, bits):
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


_T32C = _table(0x82F63B78, 32)
_T64 = _table(0x9A6C9329AC4BC9B5, 64)


def _crc_reflected(table, mask, data):
    c = mask
    for b in data:
        c = (c >> 8) ^ table[(c ^ b) & 0xFF]
    return c ^ mask


def checksum(algo, data):
    """The base64 value S3 sends for data under algo (lower-case name)."""
    if algo == "crc32":
        raw = struct.pack(">I", zlib.crc32(data))
    elif algo == "crc32c":
        raw = struct.pack(">I", _crc_reflected(_T32C, 0xFFFFFFFF, data))
    elif algo == "crc64nvme":
        raw = struct.pack(">Q", _crc_reflected(_T64, (1 << 64) - 1, data))
    elif algo == "sha1":
        raw = hashlib.sha1(data).digest()
    elif algo == "sha256":
        raw = hashlib.sha256(data).digest()
    else:
        raise ValueError(algo)
    return base64.b64encode(raw).decode()


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class Signer:
    def __init__(self, ak, sk, region=REGION):
        self.ak, self.sk, self.region = ak, sk, region

    def key(self, day):
        k = _hmac(("AWS4" + self.sk).encode(), day)
        for part in (self.region, "s3", "aws4_request"):
            k = _hmac(k, part)
        return k

    def scope(self, day):
        return "%s/%s/s3/aws4_request" % (day, self.region)

    def sign_headers(self, method, path, headers, payload_hash, when=None, query=None):
        """headers: dict of lower-case name -> value, host included; adds
        x-amz-date, x-amz-content-sha256 and Authorization. query: dict of
        the request's query parameters (values "" for "?name"). Returns
        (headers, seed signature, amz_date)."""
        when = when or datetime.datetime.now(datetime.timezone.utc)
        amz = when.strftime("%Y%m%dT%H%M%SZ")
        day = amz[:8]
        h = dict(headers)
        h["x-amz-date"] = amz
        h["x-amz-content-sha256"] = payload_hash
        names = sorted(h)
        canon = "\n".join([
            method,
            urllib.parse.quote(path, safe="/~"),
            "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"),
                                urllib.parse.quote(v, safe="-_.~"))
                     for k, v in sorted((query or {}).items())),
            "".join("%s:%s\n" % (n, " ".join(str(h[n]).split())) for n in names),
            ";".join(names),
            payload_hash,
        ])
        sts = "\n".join(["AWS4-HMAC-SHA256", amz, self.scope(day),
                         hashlib.sha256(canon.encode()).hexdigest()])
        sig = hmac.new(self.key(day), sts.encode(), hashlib.sha256).hexdigest()
        h["authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"
                              % (self.ak, self.scope(day), ";".join(names), sig))
        return h, sig, amz

    def presign(self, method, host, path, expires, when=None, extra_query=None):
        """A SigV4 presigned URL path+query (host signed, UNSIGNED-PAYLOAD)
        made at `when` (default now), valid for `expires` seconds."""
        when = when or datetime.datetime.now(datetime.timezone.utc)
        amz = when.strftime("%Y%m%dT%H%M%SZ")
        day = amz[:8]
        q = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256",
             "X-Amz-Credential": "%s/%s" % (self.ak, self.scope(day)),
             "X-Amz-Date": amz, "X-Amz-Expires": str(expires), "X-Amz-SignedHeaders": "host"}
        q.update(extra_query or {})
        enc = lambda v: urllib.parse.quote(v, safe="-_.~")  # noqa: E731
        cq = "&".join("%s=%s" % (enc(k), enc(q[k])) for k in sorted(q))
        qpath = urllib.parse.quote(path, safe="/~")
        canon = "\n".join([method, qpath, cq, "host:%s\n" % host, "host", "UNSIGNED-PAYLOAD"])
        sts = "\n".join(["AWS4-HMAC-SHA256", amz, self.scope(day),
                         hashlib.sha256(canon.encode()).hexdigest()])
        sig = hmac.new(self.key(day), sts.encode(), hashlib.sha256).hexdigest()
        return "%s?%s&X-Amz-Signature=%s" % (qpath, cq, sig)

    def chunk_sig(self, amz, prev, data):
        sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz, self.scope(amz[:8]), prev, EMPTY_SHA,
                         hashlib.sha256(data).hexdigest()])
        return hmac.new(self.key(amz[:8]), sts.encode(), hashlib.sha256).hexdigest()

    def trailer_sig(self, amz, prev, trailer_text):
        sts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz, self.scope(amz[:8]), prev,
                         hashlib.sha256(trailer_text.encode()).hexdigest()])
        return hmac.new(self.key(amz[:8]), sts.encode(), hashlib.sha256).hexdigest()


def streaming_put(signer, host, path, data, chunk=65536, signed=True, trailer=None,
                  tamper_chunk=None, tamper_trailer_sig=False, extra=None):
    """An aws-chunked PUT: (headers, body bytes).

    signed: STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER] (chunk signatures),
    else STREAMING-UNSIGNED-PAYLOAD-TRAILER. trailer: (name, value) of one
    trailing header, declared in x-amz-trailer. tamper_chunk: index of a
    chunk whose signature is spoiled (0 = first data chunk)."""
    if signed:
        mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
    else:
        mode = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    h = {"host": host, "content-encoding": "aws-chunked",
         "x-amz-decoded-content-length": str(len(data))}
    if trailer:
        h["x-amz-trailer"] = trailer[0]
    h.update(extra or {})
    h, prev, amz = signer.sign_headers("PUT", path, h, mode)
    out = []
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    for i, p in enumerate(pieces):
        if signed:
            sig = signer.chunk_sig(amz, prev, p)
            prev = sig
            if i == tamper_chunk:
                sig = ("0" if sig[0] != "0" else "1") + sig[1:]
            out.append(b"%x;chunk-signature=%s\r\n" % (len(p), sig.encode()))
        else:
            out.append(b"%x\r\n" % len(p))
        if p:
            out.append(p + b"\r\n")
    if trailer:
        text = "%s:%s\n" % trailer
        out.append(("%s:%s\r\n" % trailer).encode())
        if signed:
            ts = signer.trailer_sig(amz, prev, text)
            if tamper_trailer_sig:
                ts = ("0" if ts[0] != "0" else "1") + ts[1:]
            out.append(("x-amz-trailer-signature:%s\r\n" % ts).encode())
        out.append(b"\r\n")
    elif signed:
        out[-1] += b"\r\n"  # "0;chunk-signature=...\r\n\r\n"
    else:
        out.append(b"\r\n")
    body = b"".join(out)
    h["content-length"] = str(len(body))
    return h, body


def exchange(c, method, path, headers, body=b""):
    """One HTTP/1.1 exchange on the http.client connection c, headers as
    given (host included): (status, headers dict lower-case, body)."""
    c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        c.putheader(k, v)
    c.endheaders()
    if body:
        c.send(body)
    r = c.getresponse()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()


def request(port, method, path, headers, body=b""):
    """One HTTP/1.1 exchange on a new connection to 127.0.0.1:port."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        return exchange(c, method, path, headers, body)
    finally:
        c.close()


def error_code(body):
    b = body.decode(errors="replace")
    i, j = b.find("<Code>"), b.find("</Code>")
    return b[i + 6:j] if i >= 0 and j > i else ""
