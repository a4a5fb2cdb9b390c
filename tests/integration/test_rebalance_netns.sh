#!/bin/bash
# test_rebalance_netns.sh — expansion on a real cluster in network
# namespaces (infra/netns-cluster.sh): six nodes x 2 OSDs, EC 4+2, objects
# of 0 B..20 MiB written and kept as files (the oracle); then a seventh
# node's two OSDs join (`add-node`) while a reader loop GETs every object
# again and again through node 1's gateway:
#   - placement moves at most 1/7 of the PG slots, plus a small margin
#     (a new host is in a PG's six of seven hosts with chance 6/7, one slot
#     each: 1/7 of all slots is what moving only the newcomer's share costs);
#   - every PG is active+clean again by itself (the new slots rebuilt);
#   - the reader saw no error throughout;
#   - copy before drop: once their PGs are active+clean, the OSDs that lost
#     a slot drop those shards, and the shard bytes stored in the cluster
#     come back to what they were before the expansion;
#   - then, with two whole old nodes killed, every object still reads
#     back: the new slots hold real shards.
# REBALANCE_OBJECTS (default 120) sizes it; SEED replays. Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
NETNS_TEST=test_rebalance_netns
# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
. "$HERE/netns_lib.sh"
N=${REBALANCE_OBJECTS:-120}

step "up: 6 nodes x 2 OSDs, EC 4+2, $N objects, seed $SEED"
"$CL" up --dir "$DIR" --build "$B" --prefix "$PFX" --subnet "$SUBNET" --nodes 6 --osds-per-node 2 \
	--ec 4+2 --osd-size 4G --osd-down-after 3s || fail "up"
netns_env

all_clean() {
	admin --json pg ls 2>/dev/null | python3 -c '
import collections, json, sys
p = json.load(sys.stdin)["pgs"]
c = collections.Counter(x.get("state", "?") for x in p)
print(" ".join("%s x%d" % kv for kv in sorted(c.items())))
sys.exit(0 if p and c["active+clean"] == len(p) else 1)'
}
wait_clean() {
	local t0 out
	t0=$(date +%s)
	until out=$(all_clean); do
		[ $(($(date +%s) - t0)) -lt "$1" ] || fail "PGs not all active+clean within $1 s of $2: $out"
		sleep 1
	done
	echo "  every PG active+clean $(($(date +%s) - t0)) s after $2"
}

# stored: shard bytes on every OSD (extents and inline)
stored() {
	admin --json osd df | python3 -c '
import json, sys
d = json.load(sys.stdin); o = d["osds"] if isinstance(d, dict) else d
print(sum(int(x.get("used_bytes") or 0) + int(x.get("inline_bytes") or 0) for x in o))'
}
wait_clean 60 "up"
s3 makemixed "$DIR" "$SEED" "$N"
s3 putall "$(ep 1)" "$DIR" || fail "PUT of the $N objects"
wait_clean 120 "the writes"
admin --json pg ls >"$DIR/pgs.before"
before=$(stored)

step "reader loop on; add a seventh node"
s3 checkloop "$(ep 1)" "$DIR" "$DIR/stop" >"$DIR/reader.log" 2>&1 &
reader=$!
"$CL" add-node --dir "$DIR" || fail "add-node"
admin --json pg ls >"$DIR/pgs.after"
python3 - "$DIR/pgs.before" "$DIR/pgs.after" <<'PY' || fail "expansion moved too many slots"
import json, sys
a = {p["pg"]: p["osds"] for p in json.load(open(sys.argv[1]))["pgs"]}
b = {p["pg"]: p["osds"] for p in json.load(open(sys.argv[2]))["pgs"]}
slots = sum(len(v) for v in a.values())
moved = sum(x != y for pg in a for x, y in zip(a[pg], b[pg]))
to_new = sum(y in (13, 14) for pg in a for x, y in zip(a[pg], b[pg]) if x != y)
bound = slots / 7 * 1.15
print("  %d of %d slots moved (%.1f%%; 1/7 = %.1f%%, bound %.0f), %d of them to the new OSDs" % (
    moved, slots, 100.0 * moved / slots, 100.0 / 7, bound, to_new))
sys.exit(0 if 0 < moved <= bound and to_new == moved else 1)
PY
wait_clean 300 "node 7 joined"
touch "$DIR/stop"
wait "$reader" || { cat "$DIR/reader.log"; fail "the reader loop saw errors while node 7 joined"; }
tail -1 "$DIR/reader.log"
back_to_before() { now=$(stored); [ "$now" -le "$before" ]; }
t=$(date +%s)
poll 90 back_to_before || fail "strays not dropped: $(stored) shard bytes stored, $before before the expansion"
echo "  strays dropped $(($(date +%s) - t)) s after every PG was clean: $now shard bytes stored, $before before the expansion"

step "kill whole nodes 2 and 5: every object must read back from the new layout"
"$CL" kill --dir "$DIR" 2
"$CL" kill --dir "$DIR" 5
s3 check "$(ep 1)" "$DIR" || fail "read back after expansion with nodes 2 and 5 dead"

step "down"
"$CL" down --dir "$DIR" || fail "down"
left=$(leftovers)
[ -z "$left" ] || fail "left behind after down:$left"
echo "PASS test_rebalance_netns ($(($(date +%s) - T0)) s)"
