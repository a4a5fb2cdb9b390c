#!/bin/bash
# heal.sh — the self-healing benchmark: how fast a 4+2 cluster rebuilds
# one lost OSD, and what recovery costs client GETs. Prints figures; asserts
# no speed (bench/README.md). Needs root (network namespaces).
#
#   bench/heal.sh [--build build] [--fill-mib 1024] [--rates "0 64M"]
#
# For each --recovery-rate R in --rates (0: unthrottled): a fresh six-node
# cluster (infra/netns-cluster.sh, 6 nodes x 2 OSDs, OSDs on /dev/shm,
# --osd-flags "--recovery-rate R"); --fill-mib MiB of 1 MiB objects
# written with iolake-s3-bench; a client cell of 64 KiB GETs
# (iolake-s3-bench, 16 in flight) with every OSD up; then one OSD SIGKILLed
# and its drive deleted, and the same client cell run while its PGs
# recover. Reports the rebuilt bytes (the live OSDs' used bytes after
# minus before, plus what the dead one held), the time from the OSD going
# out to every PG active+clean, the rate, GET 64 KiB p50/p99/max with and
# without recovery running, and how the ETA of `iolake-admin cluster
# status` (sampled every second) compared with the time the run then took.
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH
HERE=$(cd "$(dirname "$0")" && pwd)
CL=$HERE/../infra/netns-cluster.sh
BUILD=$HERE/../build FILL_MIB=1024 RATES="0 64M"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--fill-mib) FILL_MIB=$2; shift 2 ;;
	--rates) RATES=$2; shift 2 ;;
	*) echo "heal.sh: unknown flag $1" >&2; exit 2 ;;
	esac
done
BUILD=$(cd "$BUILD" && pwd)
PFX=hb$$ SUBNET=10.78.$(($$ % 250))
DIR=""
cleanup() {
	[ -z "$DIR" ] || { "$CL" down --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
}
trap cleanup EXIT

admin() { "$BUILD/iolake-admin" --meta "$META" --timeout 3s "$@"; }
used_sum() { # used_sum [EXCLUDE_ID]: shard bytes on the OSDs that answer
	admin --json osd df | python3 -c '
import json, sys
d = json.load(sys.stdin); o = d["osds"] if isinstance(d, dict) else d
ex = int(sys.argv[1]) if len(sys.argv) > 1 else -1
print(sum(int(x.get("used_bytes") or 0) for x in o if x["id"] != ex))' "$@"
}
used_of() {
	admin --json osd df | python3 -c '
import json, sys
d = json.load(sys.stdin); o = d["osds"] if isinstance(d, dict) else d
print([int(x.get("used_bytes") or 0) for x in o if x["id"] == int(sys.argv[1])][0])' "$1"
}
all_clean() { # all_clean [GONE_ID]: every PG active+clean (and none names GONE_ID)
	admin --json pg ls | python3 -c '
import json, sys
p = json.load(sys.stdin)["pgs"]
gone = int(sys.argv[1]) if len(sys.argv) > 1 else -1
sys.exit(0 if p and all(x.get("state") == "active+clean" and gone not in x["osds"] for x in p) else 1)' "$@"
}
is_out() {
	admin --json osd ls | python3 -c '
import json, sys
d = json.load(sys.stdin); o = d["osds"] if isinstance(d, dict) else d
sys.exit(0 if [x for x in o if x["id"] == 3 and not x["in"]] else 1)'
}
cell() { # cell NAME JSON: one 64 KiB PUT+GET cell, figures of the GET phase
	"$BUILD/iolake-s3-bench" --endpoint "http://$SUBNET.1:9000" --access-key "$AWS_ACCESS_KEY_ID" \
		--secret-key "$AWS_SECRET_ACCESS_KEY" --bucket heal --prefix "$1/" --size 64KiB \
		--objects 300 --concurrency 16 --gets 30 --warmup 0 --json "$2" >/dev/null 2>&1 || true
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = [p for p in d["phases"] if p["name"] == "get"][0]
l = g["latency_us"]
print("GET 64 KiB %s: %.0f ops/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms, errors %d" % (
    sys.argv[2], g["ops_per_s"], l["p50"] / 1e3, l["p99"] / 1e3, l["max"] / 1e3, g["errors"]))' "$2" "$1"
}

for R in $RATES; do
	DIR=$(mktemp -d /dev/shm/iolake-heal.XXXXXX)
	echo "== --recovery-rate $R  ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
	"$CL" up --dir "$DIR" --build "$BUILD" --prefix "$PFX" --subnet "$SUBNET" --osd-size 8G \
		--osd-down-after 3s --osd-out-after 5s --osd-flags "--recovery-rate $R" >/dev/null
	set -a
	# shellcheck disable=SC1091
	. "$DIR/credentials"
	set +a
	META=$SUBNET.1:7000,$SUBNET.2:7000,$SUBNET.3:7000
	"$BUILD/iolake-s3-bench" --endpoint "http://$SUBNET.1:9000" --access-key "$AWS_ACCESS_KEY_ID" \
		--secret-key "$AWS_SECRET_ACCESS_KEY" --bucket heal --prefix fill/ --size 1MiB \
		--objects "$FILL_MIB" --concurrency 16 --gets 0 --warmup 0 >/dev/null
	until all_clean; do sleep 1; done
	cell quiet "$DIR/quiet.json"
	before=$(used_sum) victim=$(used_of 3)
	"$CL" kill-osd --dir "$DIR" --destroy 2 1 2>/dev/null
	until is_out; do sleep 0.2; done
	t0=$(date +%s.%N)
	cell recovering "$DIR/recovering.json" &
	cellpid=$!
	: >"$DIR/eta.log"
	until all_clean 3; do
		admin --json cluster status 2>/dev/null | python3 -c '
import json, sys, time
r = json.load(sys.stdin).get("recovery") or {}
print(time.time(), r.get("bytes_missing", 0), r.get("rate_bytes_per_s", 0), r.get("eta_s", 0))' \
			>>"$DIR/eta.log" || true
		sleep 1
	done
	t1=$(date +%s.%N)
	wait "$cellpid" || true
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = [p for p in d["phases"] if p["name"] == "get"][0]
a, b = g["started_ms"] / 1e3, g["finished_ms"] / 1e3
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
ov = max(0.0, min(b, t1) - max(a, t0))
print("  (the GET phase ran %.1f s, %.1f s of it while PGs were recovering)" % (b - a, ov))' \
		"$DIR/recovering.json" "$t0" "$t1"
	after=$(used_sum 3)
	python3 -c '
import sys
before, victim, after, t0, t1 = (float(x) for x in sys.argv[1:6])
rebuilt = after - (before - victim)
print("lost OSD held %.0f MiB; rebuilt %.0f MiB in %.1f s after it went out: %.1f MiB/s" % (
    victim / 2**20, rebuilt / 2**20, t1 - t0, rebuilt / 2**20 / max(t1 - t0, 1e-3)))' \
		"$before" "$victim" "$after" "$t0" "$t1"
	python3 - "$DIR/eta.log" "$t1" <<'PY'
import sys
end = float(sys.argv[2])
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if len(l.split()) == 4]
pts = [(t, eta, end - t) for t, left, rate, eta in rows if eta > 0 and end - t > 0.5]
for t, left, rate, eta in rows:
    print("  t-%5.1fs  left %7.1f MiB  rate %6.1f MiB/s  eta %4d s" % (
        end - t, left / 2**20, rate / 2**20, eta))
if pts:
    r = sorted(eta / act for _, eta, act in pts)
    print("ETA / actual time left over %d samples: min %.2f, median %.2f, max %.2f" % (
        len(r), r[0], r[len(r) // 2], r[-1]))
else:
    print("ETA: no sample with an ETA more than 0.5 s before the end")
PY
	"$CL" down --dir "$DIR" >/dev/null 2>&1
	rm -rf "$DIR"
	DIR=""
done
