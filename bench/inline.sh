#!/bin/bash
# inline.sh — where objects of --inline-max-size or less should live
# (issue 13): a fresh iolake-aio per setting, on the given (disk) work dir,
# 4 KiB objects PUT at 32 in flight and each GET once (iolake-s3-bench),
# with the flushes each side paid (meta's Raft entries, the OSDs' group
# commits, from /metrics) and the bytes each side holds afterwards.
# Prints figures; asserts no speed (bench/README.md).
#
#   bench/inline.sh [--build build] [--workdir /var/tmp] [--objects 40000] [--sizes "4096 0"]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$HERE/../build WORK=/var/tmp N=40000 SIZES="4096 0"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--workdir) WORK=$2; shift 2 ;;
	--objects) N=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	*) echo "inline.sh: unknown flag $1" >&2; exit 2 ;;
	esac
done
BUILD=$(cd "$BUILD" && pwd)
D=$(mktemp -d "$WORK/iolake-inline.XXXXXX")
PID=
cleanup() { [ -z "$PID" ] || kill -9 "$PID" 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT
export IOLAKE_ROOT_ACCESS_KEY=AKINLINEBENCH0001 IOLAKE_ROOT_SECRET_KEY=inline-bench-secret-0123456789
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
flushes() { # meta Raft entries, OSD kv group commits, OSD shard puts
	curl -s "http://127.0.0.1:$PORT/metrics" | awk '
		/^iolake_meta_entries_proposed_total/ { e += $2 }
		/^iolake_osd_flush_duration_seconds_count\{.*kind="kv"/ { k += $2 }
		/^iolake_osd_puts_total/ { p += $2 }
		END { printf "%d %d %d\n", e, k, p }'
}
echo "$N objects of 4 KiB, 32 in flight; work dir $WORK; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| --inline-max-size | PUT/s | PUT p50 / p99 / max ms | GET/s | GET p50 / p99 / max ms | meta flushes / PUT | OSD flushes / PUT | meta bytes | OSD index bytes |"
echo "|---:|---:|---|---:|---|---:|---:|---:|---:|"
for I in $SIZES; do
	rm -rf "$D/aio"
	"$BUILD/iolake-aio" --data-dir "$D/aio" --s3-listen "127.0.0.1:$PORT" --osd-size 4G \
		--inline-max-size "$I" --rate-per-addr 0 >"$D/aio.log" 2>&1 &
	PID=$!
	for _ in $(seq 150); do grep -q "S3 endpoint" "$D/aio.log" && break; sleep 0.2; done
	osd0=$(du -sb "$D"/aio/osd-*/meta | awk '{s += $1} END {print s}')
	read -r e0 k0 _ < <(flushes)
	"$BUILD/iolake-s3-bench" --endpoint "http://127.0.0.1:$PORT" --access-key "$IOLAKE_ROOT_ACCESS_KEY" \
		--secret-key "$IOLAKE_ROOT_SECRET_KEY" --size 4KiB --objects "$N" --concurrency 32 \
		--gets 1 --warmup 0 --json "$D/r.json" >/dev/null
	read -r e1 k1 _ < <(flushes)
	kill "$PID"; wait "$PID" || true; PID=
	meta=$(du -sb "$D/aio/meta/state" "$D/aio/meta/raft" | awk '{s += $1} END {print s}')
	osd=$(du -sb "$D"/aio/osd-*/meta | awk -v b="$osd0" '{s += $1} END {print s - b}')
	python3 - "$D/r.json" "$I" "$N" "$((e1 - e0))" "$((k1 - k0))" "$meta" "$osd" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); i, n, e, k, meta, osd = sys.argv[2:]
n = int(n)
def ph(name):
    return next(p for p in r["phases"] if p["name"] == name)
def cell(p):
    l = p["latency_us"]
    return "%.0f" % p["ops_per_s"], "%.2f / %.2f / %.1f" % (l["p50"] / 1e3, l["p99"] / 1e3, l["max"] / 1e3)
pu, pl = cell(ph("put")); gu, gl = cell(ph("get"))
print("| %s | %s | %s | %s | %s | %.3f | %.3f | %.0f MB | %.0f MB |" % (i, pu, pl, gu, gl, int(e) / n, int(k) / n, int(meta) / 1e6, int(osd) / 1e6))
PY
done
echo "(meta bytes: its RocksDB state and Raft log, one member; a 3-member group keeps three."
echo " OSD index bytes: the OSDs' RocksDB and commit-log dirs, grown over the run.)"
