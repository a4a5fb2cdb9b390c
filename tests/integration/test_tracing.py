#!/usr/bin/env python3
"""test_tracing.py — request ids from the gateway to the OSDs (issue 20,
must-show 4), with one iolake-aio whose OSD 3 answers every shard read
SLOW_MS late (the RPC fault layer, common/rpc_fault.h:
--debug-fault delay-answer=SLOW_MS,peer=local:osd-3,method=GetShard) and
which logs every shard op and meta call (--slow-op-ms 0):

  - objects are PUT, then each is read back with GetObject; for every GET
    the x-amz-request-id of the response names exactly one line of the
    gateway's slow-request log (--slow-request-ms 0: every request), with
    op=GetObject, the bucket and key, status 200 and the bytes sent;
  - at least one GET read a data shard on OSD 3 (with 6 OSDs and 4+2, each
    object has a 4-in-6 chance): for such a GET the OSD logged its read
    with osd=3, op=GetShard, the same req=<id>, pg, shard, queue and store
    times, and the gateway's line names OSD 3 as its slowest shard call
    (at least SLOW_MS) or among those a hedge went around (hedge_osd=1,3:
    on a loaded machine another OSD can be slow past the hedge time too);
  - an S3 error body's <RequestId> is the response's x-amz-request-id;
  - 1,000 requests get 1,000 distinct ids, each 16 lowercase hex chars;
  - an aio without --debug-fault and with the default --slow-request-ms
    (1 s) logs no slow-request line for quick requests (the log is not
    noise), and no fault injection.

make-test: alone (tests/run-tests.py): OSD 3's answers are 700 ms late and the
gateway hedges around slow shards: a neighbour's CPU use makes other OSDs
slow past the hedge time too.
"""
import os, re, sys, time, http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import Aio  # noqa: E402

SLOW_MS = 700
FAULT = "delay-answer=%d,peer=local:osd-3,method=GetShard" % SLOW_MS
N_OBJECTS = 8
SIZE = 3 * 1024 * 1024   # 3 segments of 1 MiB: several shard reads per OSD
LINE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def fields(line):
    return {k: v.strip('"') for k, v in LINE.findall(line)}


def log_lines(aio):
    aio.log.flush()
    with open(aio.log.name, errors="replace") as f:
        return f.read().splitlines()


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  ", what)


def main():
    aio = Aio(args=["--slow-request-ms", "0", "--slow-op-ms", "0", "--debug-fault", FAULT])
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="trace")
        body = os.urandom(SIZE)
        for i in range(N_OBJECTS):
            s3.put_object(Bucket="trace", Key="obj-%d" % i, Body=body)
        gets = {}
        for i in range(N_OBJECTS):
            t0 = time.time()
            r = s3.get_object(Bucket="trace", Key="obj-%d" % i)
            data = r["Body"].read()
            ms = (time.time() - t0) * 1000
            rid = r["ResponseMetadata"]["HTTPHeaders"]["x-amz-request-id"]
            check(data == body, "GET obj-%d: the bytes put (%.0f ms, id %s)" % (i, ms, rid))
            gets[rid] = "obj-%d" % i
        time.sleep(0.5)
        lines = log_lines(aio)
        check(any("RPC fault injection on" in ln for ln in lines),
              "aio logged that faults are injected")
        slow_req = {}
        for ln in lines:
            if 'msg="slow request"' in ln:
                f = fields(ln)
                slow_req.setdefault(f.get("req"), []).append(f)
        for rid, key in gets.items():
            got = slow_req.get(rid, [])
            check(len(got) == 1, "the slow-request log has one line for GET %s (req=%s)" % (key, rid))
            f = got[0]
            check(f["op"] == "GetObject" and f["bucket"] == "trace" and f["key"] == key and
                  f["status"] == "200" and f["bytes_out"] == str(SIZE) and float(f["ms"]) > 0,
                  "... op, bucket, key, status, bytes and time: %s" %
                  " ".join("%s=%s" % (k, f[k]) for k in
                           ("op", "key", "status", "bytes_out", "ms", "meta_ms", "osd_calls",
                            "osd_ms", "osd_max_ms", "osd_max", "hedges", "hedge_osd")))
        osd_reads = {}   # every shard read with a request id, by id (--slow-op-ms 0)
        for ln in lines:
            if 'msg="slow shard op"' in ln:
                f = fields(ln)
                if f.get("op") == "GetShard" and f.get("req"):
                    osd_reads.setdefault(f["req"], []).append(f)
        touched = [rid for rid in gets if any(f["osd"] == "3" for f in osd_reads.get(rid, []))]
        check(touched, "%d of %d GETs read a shard on the slowed OSD 3 (its log lines name them)"
              % (len(touched), len(gets)))
        for rid in touched:
            for f in osd_reads[rid]:
                if f["osd"] != "3":
                    continue
                check(f["status"] == "ok" and "pg" in f and "shard" in f and "queue_ms" in f and
                      "store_ms" in f,
                      "OSD 3 logged the read of GET %s with req=%s: pg=%s shard=%s "
                      "queue_ms=%s store_ms=%s" % (gets[rid], rid, f["pg"], f["shard"],
                                                  f["queue_ms"], f["store_ms"]))
            g = slow_req[rid][0]
            # the fault layer holds the answer on the loop's ms clock, the
            # gateway times with hrtime: up to ~1 ms short of the delay
            check((g["osd_max"] == "3" and float(g["osd_max_ms"]) >= SLOW_MS - 2) or
                  "3" in g["hedge_osd"].split(","),
                  "the gateway's line for %s names OSD 3 (slowest call osd_max=%s at %s ms, "
                  "hedge_osd=%s)" % (rid, g["osd_max"], g["osd_max_ms"], g["hedge_osd"]))
        strays = [rid for rid in osd_reads if rid not in gets]  # background reads carry none
        check(not strays, "every shard read with a request id belongs to one of the GETs "
              "(strays: %s)" % strays)

        # The id in an S3 error body.
        conn = http.client.HTTPConnection("127.0.0.1", aio.port, timeout=10)
        conn.request("GET", "/trace/missing")
        r = conn.getresponse()
        text = r.read().decode()
        rid = r.getheader("x-amz-request-id")
        m = re.search(r"<RequestId>([^<]*)</RequestId>", text)
        check(r.status in (403, 404) and m and m.group(1) == rid,
              "the error body's RequestId is the header's (%s, %d)" % (rid, r.status))
        check(r.getheader("x-amz-id-2"), "x-amz-id-2 names the gateway (%s)" % r.getheader("x-amz-id-2"))

        # 1,000 ids, all distinct.
        ids = []
        for _ in range(1000):
            conn.request("HEAD", "/trace")
            r = conn.getresponse()
            r.read()
            ids.append(r.getheader("x-amz-request-id"))
        conn.close()
        check(all(re.fullmatch(r"[0-9a-f]{16}", i or "") for i in ids),
              "every id is 16 lowercase hex chars")
        check(len(set(ids)) == 1000, "1,000 requests, %d distinct ids" % len(set(ids)))
    finally:
        aio.close()

    # Default threshold, no hook: quick requests leave no line.
    aio = Aio()
    try:
        aio.start()
        s3 = aio.client()
        s3.create_bucket(Bucket="quiet")
        for i in range(20):
            s3.put_object(Bucket="quiet", Key="k%d" % i, Body=b"x" * 1000)
            s3.get_object(Bucket="quiet", Key="k%d" % i)["Body"].read()
        n = sum('msg="slow request"' in ln for ln in log_lines(aio))
        check(n == 0, "no slow-request line for 41 quick requests at the default 1 s (%d)" % n)
        check(not any("fault injection" in ln for ln in log_lines(aio)),
              "no fault injection without --debug-fault")
    finally:
        aio.close()
    print("PASS test_tracing")


if __name__ == "__main__":
    main()
