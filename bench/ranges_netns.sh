#!/bin/bash
# ranges_netns.sh — issue 13's must-show 4: small-PUT rate with one Raft
# group vs a bucket pre-split into range groups whose leaders are spread,
# on the netns cluster (infra/netns-cluster.sh: 3 nodes, each a meta
# member, 2 OSDs and a gateway, own address). Runs are alternated
# (0 G G 0 ...): each starts a fresh cluster with `--range-groups 0` or G,
# creates bucket "rbk", with G > 0 splits it at "g2/" and "g3/" (three
# ranges, one per gateway's key prefix; the right halves go to the groups
# holding the fewest ranges, so the three land in three groups whose
# leaders hosting.c spreads over the members), prints `range ls`, then
# runs one iolake-s3-bench per gateway at once (keys g<N>/<8 digits>,
# 4 KiB, C in flight each) and sums their PUT ops/s. Figures only.
#
# What limits the rate: per run it also prints the CPU the cluster spent
# per PUT (utime + stime of every process the cluster started, from
# DIR/pids, over the PUT phase, divided by the PUTs; split meta / gw /
# osd) and the bench clients' own (/usr/bin/time), and how busy the machine's cores were
# over the phase (/proc/stat: busy jiffies / all jiffies, and the same as
# cores' worth), so a CPU-bound machine shows as such; and the gateways'
# bucket-cache misses per PUT (each one a GetBucket to the root).
#
#   bench/ranges_netns.sh BUILD [--objects 3000] [--concurrency 32]
#                         [--groups 3] [--rounds 2] [--dir /dev/shm]
# Needs root (network namespaces). Removes what it started (netns-cluster
# down) on exit.
set -eu
B=$(cd "${1:?usage: $0 BUILD [--objects N] [--concurrency C] [--groups G] [--rounds R]}" && pwd)
shift
N=3000 C=32 G=3 R=2 BASE=/dev/shm
while [ $# -gt 0 ]; do
	case $1 in
	--objects) N=$2; shift 2 ;;
	--concurrency) C=$2; shift 2 ;;
	--groups) G=$2; shift 2 ;;
	--rounds) R=$2; shift 2 ;;
	--dir) BASE=$2; shift 2 ;;
	*) echo "$0: unknown flag $1" >&2; exit 2 ;;
	esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
CL=$HERE/../infra/netns-cluster.sh
SUB=10.79.0
META=$SUB.1:7000,$SUB.2:7000,$SUB.3:7000
DIR=""
cleanup() {
	[ -n "$DIR" ] && "$CL" down --dir "$DIR" >/dev/null 2>&1 || true
	[ -n "$DIR" ] && rm -rf "$DIR"
	DIR=""
}
trap cleanup EXIT

one() {   # groups
	local g=$1
	DIR=$(mktemp -d "$BASE/iolake-rangesnetns.XXXXXX")
	"$CL" up --dir "$DIR" --build "$B" --nodes 3 --osds-per-node 2 --prefix rn \
		--subnet $SUB --meta-flags "--range-groups $g" >"$DIR/up.log" 2>&1
	. "$DIR/credentials"
	export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	local admin="$B/iolake-admin --meta $META"
	local i
	for i in $(seq 1 100); do
		[ "$($admin --json range ls | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["groups"]))')" -ge "$g" ] && break
		sleep 0.2
	done
	python3 - "$SUB.1" <<'EOF'
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url="http://%s:9000" % sys.argv[1], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="rbk")
EOF
	if [ "$g" -gt 0 ]; then
		$admin range split rbk g2/ >/dev/null
		$admin range split rbk g3/ >/dev/null
	fi
	# Leader spread (meta/spread_plan.h): wait up to 30 s for the range
	# groups' leaders to be distinct members; the row says whether they were.
	local spread="-"
	if [ "$g" -gt 0 ]; then
		for i in $(seq 1 60); do
			spread=$($admin --json range ls | python3 -c '
import json, sys
ls = [x["leader"] for x in json.load(sys.stdin)["group_info"] if x["id"] != 0]
print("%d/%d" % (len(set(l for l in ls if l != "-")), len(ls)))')
			[ "${spread%/*}" = "${spread#*/}" ] && break
			sleep 0.5
		done
	fi
	$admin range ls --bucket rbk | sed 's/^/    /'
	local pids=()
	python3 "$HERE/cpu_snap.py" snap "$DIR" >"$DIR/cpu0.json"
	for i in 1 2 3; do
		/usr/bin/time -f "%U %S" -o "$DIR/t$i.txt" "$B/iolake-s3-bench" --endpoint "http://$SUB.$i:9000" --access-key "$AWS_ACCESS_KEY_ID" \
			--secret-key "$AWS_SECRET_ACCESS_KEY" --bucket rbk --prefix "g$i/" --size 4KiB \
			--objects "$N" --concurrency "$C" --gets 0 --json "$DIR/b$i.json" \
			>"$DIR/b$i.log" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	python3 "$HERE/cpu_snap.py" snap "$DIR" >"$DIR/cpu1.json"
	for i in 1 2 3; do
		curl -s "http://$SUB.$i:9000/metrics" | grep '^iolake_gw_bucket_cache_' >"$DIR/m$i.txt" || true
	done
	python3 - "$g" "$DIR" "$N" "$HERE" "$spread" <<'EOF'
import json, os, sys
sys.path.insert(0, sys.argv[4])
import cpu_snap
d, n = sys.argv[2], 3 * int(sys.argv[3])
tot, p50, p99, mx = 0, [], [], []
for f in ("%s/b%d.json" % (d, i) for i in (1, 2, 3)):
    for p in json.load(open(f))["phases"]:
        if p["name"] == "put":
            tot += p["ops_per_s"]
            l = p["latency_us"]
            p50.append(l["p50"] / 1e3); p99.append(l["p99"] / 1e3); mx.append(l.get("max", 0) / 1e3)
c = cpu_snap.delta(*(json.load(open("%s/cpu%d.json" % (d, i))) for i in (0, 1)))
c["cpu_s"]["bench"] = sum(sum(float(x) for x in open("%s/t%d.txt" % (d, i)).read().split()[-2:])
                          for i in (1, 2, 3))
us = lambda role: c["cpu_s"].get(role, 0) * 1e6 / n
miss = 0.0
for i in (1, 2, 3):
    for line in open("%s/m%d.txt" % (d, i)):
        if line.startswith("iolake_gw_bucket_cache_misses_total"):
            miss += float(line.split()[-1])
print("| %s | %s | %.0f | %s | %s | %s | %.0f | %.0f / %.0f / %.0f | %.0f | %.0f%% (%.2f of %d) | %.2f |" % (
      sys.argv[1], sys.argv[5], tot, "/".join("%.1f" % x for x in p50), "/".join("%.1f" % x for x in p99),
      "/".join("%.0f" % x for x in mx), us("meta") + us("gw") + us("osd"), us("meta"), us("gw"),
      us("osd"), us("bench"), 100 * c["busy"], c["busy"] * c["cores"], c["cores"], miss / n), flush=True)
EOF
	cleanup
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| --range-groups | range leaders distinct | PUT/s (3 gateways) | p50 ms (each) | p99 ms (each) | max ms (each) | cluster CPU us/PUT | meta / gw / osd us/PUT | bench clients us/PUT | cores busy | GetBucket per PUT |"
echo "|---:|---|---:|---|---|---|---:|---|---:|---|---:|"
for r in $(seq 1 "$R"); do
	if [ $((r % 2)) = 1 ]; then order="0 $G"; else order="$G 0"; fi
	for g in $order; do one "$g"; done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
