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
# bucket reads per PUT: the PUT gates that read the bucket (cache
# misses) and the GetBucket calls sent to the root for them (fewer when
# reads share one, gateway/gw_bread.h).
#
# The clients run no warm-up (--warmup 0): the CPU window then holds the
# measured PUTs and nothing else (with the default 2 s warm-up it held
# the warm-up's PUTs too, and the faster side's more of them). The PUT
# rate is the 9,000 (3 x --objects) PUTs over the wall time from the
# three clients' start to the last one's end (the clients' own rates
# summed read high: each counts only its own span). Per run
# a second row gives, from meta's /metrics (--metrics-listen 0.0.0.0:7090
# in each node's namespace), each meta member's CPU per PUT (* marks the
# root's leader), Raft entries proposed per PUT summed over the groups,
# ops per entry, and the root's ReadIndex rounds per PUT.
#
#   bench/ranges_netns.sh BUILD [--objects 3000] [--concurrency 32]
#                         [--groups 3] [--rounds 2] [--dir /dev/shm]
#                         [--perf OUTDIR] [--meta-flags "FLAGS"]
# --perf: perf record -g of the three meta members over the PUT phase,
# into OUTDIR/perf-g<G>-<run>.data (read with perf report -i).
# --meta-flags: more iolake-meta flags for every run (e.g.
# "--range-raft-segment-size 1MiB").
# Needs root (network namespaces). Removes what it started (netns-cluster
# down) on exit.
set -eu
B=$(cd "${1:?usage: $0 BUILD [--objects N] [--concurrency C] [--groups G] [--rounds R]}" && pwd)
shift
N=3000 C=32 G=3 R=2 BASE=/dev/shm PERF="" MFLAGS=""
while [ $# -gt 0 ]; do
	case $1 in
	--objects) N=$2; shift 2 ;;
	--concurrency) C=$2; shift 2 ;;
	--groups) G=$2; shift 2 ;;
	--rounds) R=$2; shift 2 ;;
	--dir) BASE=$2; shift 2 ;;
	--meta-flags) MFLAGS=$2; shift 2 ;;
	--perf) PERF=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
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
		--subnet $SUB --meta-flags "--range-groups $g --metrics-listen 0.0.0.0:7090 $MFLAGS" >"$DIR/up.log" 2>&1
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
	local pids=() perfpid=""
	RUN=$((RUN + 1))
	for i in 1 2 3; do curl -s "http://$SUB.$i:7090/metrics" >"$DIR/mm0-$i.txt" || true; done
	if [ -n "$PERF" ]; then
		perf record -q -g -o "$PERF/perf-g$g-$RUN.data" \
			-p "$(awk '$2 == "meta" {print $3}' "$DIR/pids" | paste -sd,)" >/dev/null 2>&1 &
		perfpid=$!
	fi
	python3 "$HERE/cpu_snap.py" snap "$DIR" >"$DIR/cpu0.json"
	local t0
	t0=$(date +%s.%N)
	for i in 1 2 3; do
		/usr/bin/time -f "%U %S" -o "$DIR/t$i.txt" "$B/iolake-s3-bench" --endpoint "http://$SUB.$i:9000" --access-key "$AWS_ACCESS_KEY_ID" \
			--secret-key "$AWS_SECRET_ACCESS_KEY" --bucket rbk --prefix "g$i/" --size 4KiB \
			--objects "$N" --concurrency "$C" --gets 0 --warmup 0 --json "$DIR/b$i.json" \
			>"$DIR/b$i.log" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	echo "$t0 $(date +%s.%N)" >"$DIR/wall.txt"
	python3 "$HERE/cpu_snap.py" snap "$DIR" >"$DIR/cpu1.json"
	if [ -n "$perfpid" ]; then kill -INT "$perfpid"; wait "$perfpid" || true; fi
	for i in 1 2 3; do curl -s "http://$SUB.$i:7090/metrics" >"$DIR/mm1-$i.txt" || true; done
	for i in 1 2 3; do
		curl -s "http://$SUB.$i:9000/metrics" | grep '^iolake_gw_bucket_' >"$DIR/m$i.txt" || true
	done
	python3 - "$g" "$DIR" "$N" "$HERE" "$spread" <<'EOF'
import json, os, re, sys
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
miss = sent = 0.0
for i in (1, 2, 3):
    for line in open("%s/m%d.txt" % (d, i)):
        if line.startswith("iolake_gw_bucket_cache_misses_total"):
            miss += float(line.split()[-1])
        elif line.startswith("iolake_gw_bucket_reads_total"):
            sent += float(line.split()[-1])
t0, t1 = (float(x) for x in open("%s/wall.txt" % d).read().split())
tot = n / (t1 - t0)   # the clients' own rates summed read high (each over its own span)
print("| %s | %s | %.0f | %s | %s | %s | %.0f | %.0f / %.0f / %.0f | %.0f | %.0f%% (%.2f of %d) | %.2f / %.2f |" % (
      sys.argv[1], sys.argv[5], tot, "/".join("%.1f" % x for x in p50), "/".join("%.1f" % x for x in p99),
      "/".join("%.0f" % x for x in mx), us("meta") + us("gw") + us("osd"), us("meta"), us("gw"),
      us("osd"), us("bench"), 100 * c["busy"], c["busy"] * c["cores"], c["cores"], miss / n, sent / n), flush=True)
# meta's own counters, summed over members (entries: proposed by each
# group's leader; ops: applied on the leader only, so per group the max).
def scrape(f):
    m = {}
    for line in open(f):
        x = re.match(r'(iolake_meta_(?:entries_proposed_total|ops_applied_total|read_rounds_total|is_leader))\{([^}]*)\} (\S+)', line)
        if x:
            grp = re.search(r'group="(\d+)"', x.group(2))
            m[(x.group(1), int(grp.group(1)) if grp else 0)] = float(x.group(3))
    return m
ent = rr = 0.0
ops = {}
root_leader = "-"
for i in (1, 2, 3):
    try:
        a, b = scrape("%s/mm0-%d.txt" % (d, i)), scrape("%s/mm1-%d.txt" % (d, i))
    except OSError:
        continue
    for (k, grp), v in b.items():
        dv = v - a.get((k, grp), 0.0)
        if k.endswith("entries_proposed_total"):
            ent += dv
        elif k.endswith("ops_applied_total"):
            ops[grp] = max(ops.get(grp, 0.0), dv)
        elif k.endswith("read_rounds_total") and grp == 0:
            rr += dv
        elif k.endswith("is_leader") and grp == 0 and v == 1:
            root_leader = "n%d" % i
per = " / ".join("%s%s %.0f" % ("n%d" % i, "*" if root_leader == "n%d" % i else "",
                               c["procs"].get("n%d meta" % i, 0) * 1e6 / n) for i in (1, 2, 3))
print("|   | meta us/PUT by member (* root leader): %s | Raft entries per PUT (all groups) %.3f | ops per entry %.1f | root ReadIndex rounds per PUT %.3f | wall %.1f s |" % (
      per, ent / n, sum(ops.values()) / ent if ent else 0, rr / n, t1 - t0), flush=True)
EOF
	cleanup
}

RUN=0
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)${MFLAGS:+; meta flags: $MFLAGS}"
echo "| --range-groups | range leaders distinct | PUT/s (3 gateways) | p50 ms (each) | p99 ms (each) | max ms (each) | cluster CPU us/PUT | meta / gw / osd us/PUT | bench clients us/PUT | cores busy | bucket reads per PUT (gates / GetBucket sent) |"
echo "|---:|---|---:|---|---|---|---:|---|---:|---|---:|"
for r in $(seq 1 "$R"); do
	if [ $((r % 2)) = 1 ]; then order="0 $G"; else order="$G 0"; fi
	for g in $order; do one "$g"; done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
