#!/bin/sh
# nginx_ceiling.sh — how fast can iolake-s3-bench drive GETs, next to wrk,
# against the same nginx (sendfile, 2 workers) serving the same files from
# /dev/shm, at the same concurrency. Prints a markdown table; the numbers
# for docs/performance.md come from here.
#
#   bench/s3bench/nginx_ceiling.sh [BUILD_DIR]
#   env: CONC (32), SIZES ("4KiB 64KiB"), WRK_SECONDS (10), OBJECTS (1000),
#        GETS (per object, per size: "4KiB=300 64KiB=120")
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$HERE/../../build}" && pwd)
BENCH=$BUILD/iolake-s3-bench
CONC=${CONC:-32}
SIZES=${SIZES:-"4KiB 64KiB"}
WRK_SECONDS=${WRK_SECONDS:-10}
OBJECTS=${OBJECTS:-1000}
GETS=${GETS:-"4KiB=300 64KiB=120"}
command -v wrk >/dev/null || { echo "wrk not installed: run scripts/deps.sh" >&2; exit 1; }
. "$HERE/../../tests/integration/nginx_dav.sh"

WORK=$(mktemp -d /dev/shm/s3bench-ceiling.XXXXXX)
trap 'nginx_dav_stop "$WORK"; rm -rf "$WORK"' EXIT INT TERM
nginx_dav_start "$WORK"
URL=http://127.0.0.1:$NGINX_PORT

cat >"$WORK/paths.lua" <<'LUA'
-- GET /bucket/<prefix><8 digits> over the objects the bench PUT, in turn
local n = tonumber(os.getenv("S3B_OBJECTS"))
local prefix = os.getenv("S3B_PREFIX")
local i = 0
request = function()
	local path = string.format("%s%08d", prefix, i % n)
	i = i + 1
	return wrk.format("GET", path)
end
LUA

echo "| GET size | client | in flight | ops/s | MiB/s | p99 ms |"
echo "|---|---|---:|---:|---:|---:|"
for size in $SIZES; do
	gets=$(echo "$GETS" | tr ' ' '\n' | sed -n "s/^$size=//p")
	gets=${gets:-50}
	# The bench: PUT the objects, then GET each $gets times in random order.
	"$BENCH" --endpoint "$URL" --access-key AK --secret-key SK --bucket ceiling \
		--no-create-bucket --prefix "s$size/" --size "$size" --objects "$OBJECTS" \
		--concurrency "$CONC" --gets "$gets" --warmup-ops 2000 \
		--json "$WORK/b.json" >"$WORK/b.txt"
	python3 - "$WORK/b.json" "$size" "$CONC" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = [p for p in d["phases"] if p["name"] == "get"][0]
assert g["errors"] == 0, g
print("| %s | iolake-s3-bench | %s | %.0f | %.1f | %.3f |" % (sys.argv[2], sys.argv[3],
      g["ops_per_s"], g["mib_per_s"], g["latency_us"]["p99"] / 1000))
PY
	# wrk on the same files, the same connection count: with one thread (as
		# the bench has one loop) and with two (one per core).
	for t in 1 2; do
		S3B_OBJECTS=$OBJECTS S3B_PREFIX="/ceiling/s$size/" wrk -t$t -c"$CONC" \
			-d"${WRK_SECONDS}s" --latency -s "$WORK/paths.lua" "$URL" >"$WORK/w.txt"
		python3 - "$WORK/w.txt" "$size" "$CONC" "$t" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
tr = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", t)
mib = float(tr.group(1)) * {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1, "GB": 1024}[tr.group(2)]
p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", t)
p99ms = float(p99.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3}[p99.group(2)]
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
assert not bad, t
print("| %s | wrk -t%s | %s | %.0f | %.1f | %.3f |" % (sys.argv[2], sys.argv[4], sys.argv[3], rps, mib, p99ms))
PY
	done
done
