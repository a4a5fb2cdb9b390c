#!/bin/bash
# flood.sh — issue 16, must-show 3: an authenticated client's GET 4 KiB
# latency while one address floods iolake-aio with unauthenticated
# requests, in one run (phases without / with / without the flood).
#
#   bench/flood.sh [BUILD] [--flood-rate 10000] [--victim-rate 500] [--phase-secs 10]
#                  [--phases off,on,off,on,off] [--flood-nice N] [-- extra iolake-aio flags]
#
# A fresh iolake-aio with its default limits before authentication
# (--rate-per-addr 2000 --rate-burst 4000 --max-conns-per-addr 256) on a
# temp dir under /dev/shm. 1,000 objects of 4 KiB are PUT with
# iolake-s3-bench; the victim (build/bench-flood) GETs them through
# presigned (SigV4) URLs at --victim-rate from 127.0.0.1 over 4 keep-alive
# connections; the flooder sends "GET /flood/x" without credentials from
# 127.0.0.2 over 64 connections at up to --flood-rate (--flood-nice 19: the
# flooder yields the shared CPU, as a flood from other machines would).
# Prints bench-flood's table (with the server's, its gateway thread's and
# the bench's own CPU per phase) and the gateway's refusal counters.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd); shift || true
FLOOD_RATE=10000 VICTIM_RATE=500 SECS=10 PHASES=off,on,off,on,off NICE=0
while [ $# -gt 0 ]; do
	case "$1" in
	--flood-rate) FLOOD_RATE=$2; shift 2 ;;
	--victim-rate) VICTIM_RATE=$2; shift 2 ;;
	--phase-secs) SECS=$2; shift 2 ;;
	--phases) PHASES=$2; shift 2 ;;
	--flood-nice) NICE=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "flood.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
W=$(mktemp -d /dev/shm/iolake-flood.XXXXXX)
PID=
cleanup() {
	if [ -n "$PID" ]; then kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$W"
}
trap cleanup EXIT
export IOLAKE_ROOT_ACCESS_KEY=AKIAIOLAKEFLOOD00001 IOLAKE_ROOT_SECRET_KEY=iolake-flood-secret-0123456789abcdefgh
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BUILD/iolake-aio" --data-dir "$W/aio" --s3-listen "127.0.0.1:$PORT" --osd-size 2G "$@" \
	>"$W/aio.log" 2>&1 &
PID=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/health/ready" >/dev/null && break; sleep 0.1; done
"$BUILD/iolake-s3-bench" --endpoint "http://127.0.0.1:$PORT" --access-key "$IOLAKE_ROOT_ACCESS_KEY" \
	--secret-key "$IOLAKE_ROOT_SECRET_KEY" --bucket victim --size 4KiB --objects 1000 \
	--concurrency 4 --gets 0 --warmup 0 --prefix v/ >"$W/put.txt"
python3 - "$PORT" "$W/paths" <<'PY'
import os, sys
import boto3
from botocore.config import Config
port, out = sys.argv[1], sys.argv[2]
ep = "http://127.0.0.1:%s" % port
c = boto3.client("s3", endpoint_url=ep, aws_access_key_id=os.environ["IOLAKE_ROOT_ACCESS_KEY"],
                 aws_secret_access_key=os.environ["IOLAKE_ROOT_SECRET_KEY"], region_name="us-east-1",
                 config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
with open(out, "w") as f:
    for i in range(1000):
        u = c.generate_presigned_url("get_object", Params={"Bucket": "victim", "Key": "v/%08d" % i},
                                     ExpiresIn=3600)
        f.write(u[len(ep):] + "\n")
PY
echo "iolake-aio $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo ?), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "victim: presigned GET 4 KiB at $VICTIM_RATE/s from 127.0.0.1 (4 connections); flood: unauthenticated GET at up to $FLOOD_RATE/s from 127.0.0.2 (64 connections); $SECS s per phase"
echo
rc=0
"$BUILD/bench-flood" --target "127.0.0.1:$PORT" --paths "$W/paths" --victim-rate "$VICTIM_RATE" \
	--flood-rate "$FLOOD_RATE" --phase-secs "$SECS" --phases "$PHASES" --pid "$PID" --flood-nice "$NICE" || rc=$?
echo
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^iolake_gw_http_refused_total|^iolake_gw_cred_lookups_total' || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
