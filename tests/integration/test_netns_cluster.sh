#!/bin/bash
# test_netns_cluster.sh — a real six-node cluster, one network namespace
# per node (infra/netns-cluster.sh: each node a meta voter, two OSDs with
# --host nI, a gateway; EC 4+2, so every PG has one shard per node), and
# whole-node faults, with boto3 (tests/integration/netns_s3.py) as client:
#
#   - 20 objects of 1 KiB..3 MiB PUT and read back; every PG's six OSDs
#     are on six distinct nodes;
#   - the node of the meta leader isolated (its link down): a new leader is
#     elected among the others, a new PUT succeeds through another node's
#     gateway, every object reads back byte for byte;
#   - healed; one whole node SIGKILLed (meta member, OSDs, gateway; not the
#     client's gateway node, not the one isolated before, so objects written
#     during the isolation still have k shards): every object reads back
#     (degraded reads), new PUTs succeed; restarted on its data: its member
#     is a follower caught up with the leader, its OSDs up in the map;
#   - a node slowed: 50 ms each way with tc netem when the kernel has it
#     (else a SKIP line for that step), and a rate limit (tbf): a read
#     through it succeeds;
#   - a rolling restart (netns-cluster.sh rolling-restart: node after node
#     SIGTERMed and started, each time waiting for `iolake-admin cluster
#     wait-healthy`): every object reads back, a new PUT succeeds.
# `down` runs in the EXIT trap; afterwards no namespace, link or process of
# this run may be left (the test fails otherwise). Needs root and working
# `ip netns`; without them it prints SKIP with the reason and exits 0.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
NETNS_TEST=test_netns_cluster
# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
. "$HERE/netns_lib.sh"

step "up: 6 nodes x 2 OSDs, EC 4+2, prefix $PFX, $SUBNET.0/24, seed $SEED"
"$CL" up --dir "$DIR" --build "$B" --prefix "$PFX" --subnet "$SUBNET" --nodes 6 --osds-per-node 2 \
	--ec 4+2 --osd-size 256M || fail "up"
netns_env

# Placement: six hosts, width six: one shard of every PG per node.
admin --json osd ls >"$DIR/osds.json"
admin --json pg ls >"$DIR/pgs.json"
python3 - "$DIR/osds.json" "$DIR/pgs.json" <<'PY' || fail "a PG has two shards on one node"
import json, sys
o = json.load(open(sys.argv[1])); o = o["osds"] if isinstance(o, dict) else o
host = {x["id"]: x["host"] for x in o}
pgs = json.load(open(sys.argv[2]))["pgs"]
bad = [p for p in pgs if len({host[i] for i in p["osds"]}) != 6]
print("%d OSDs on %d hosts; %d PGs, %d with a node holding two shards" % (
    len(host), len(set(host.values())), len(pgs), len(bad)))
sys.exit(1 if bad or len(pgs) == 0 else 0)
PY

# exec: a command inside node 2 sees node 2's address on its eth0.
out=$("$CL" exec --dir "$DIR" 2 -- ip -4 -o addr show dev eth0) || fail "exec"
[[ $out == *" $SUBNET.2/24 "* ]] || fail "exec: node 2's eth0 does not hold $SUBNET.2: $out"

s3 make "$DIR" "$SEED" 20
s3 put "$(ep 1)" "$DIR" >/dev/null || fail "PUT of the 20 objects"
s3 check "$(ep 1)" "$DIR" || fail "read back with every node up"

# leader_id [EXCEPT]: the id of the one member that calls itself leader
# (other than EXCEPT), or nothing.
leader_id() {
	admin --json cluster status 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
l = [m["id"] for m in d["members"] if m.get("role") == "leader" and str(m["id"]) != sys.argv[1]]
print(l[0] if len(l) == 1 else "")' "${1:-}" || true
}

L=$(leader_id)
[ -n "$L" ] || fail "no leader"
G=$((L % 6 + 1))   # the client's gateway: another node's
step "isolate node $L (the meta leader); client through node $G's gateway"
"$CL" isolate --dir "$DIR" "$L"
t=$(date +%s)
new_leader() { N=$(leader_id "$L"); [ -n "$N" ]; }
poll 30 new_leader || fail "no new leader within 30 s of isolating node $L"
echo "new leader: member $N, $(($(date +%s) - t)) s after the isolation"
# A PUT during the isolation: each PUT waits for the isolated OSD's shard
# call to reach its 10 s deadline (see infra/README.md), so poll with a
# bound well above that.
poll 60 s3 new "$(ep "$G")" "$DIR" during-isolation 1500000 || fail "no PUT succeeded with node $L isolated"
echo "writes continue $(($(date +%s) - t)) s after the isolation"
s3 check "$(ep "$G")" "$DIR" || fail "read back with node $L isolated"
step "heal node $L"
"$CL" heal --dir "$DIR" "$L"
healed_osds_up() { admin --json osd ls 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); o = d["osds"] if isinstance(d, dict) else d
sys.exit(0 if all(x["up"] for x in o) else 1)'; }
poll 30 healed_osds_up || fail "node $L's OSDs not up again after the heal"
s3 check "$(ep "$G")" "$DIR" || fail "read back after the heal"

# Kill a node other than the client's gateway node and the one isolated
# before (objects PUT during the isolation lack that node's shard).
K=$((G % 6 + 1))
[ "$K" != "$L" ] || K=$((K % 6 + 1))
step "kill node $K (meta member, 2 OSDs, gateway)"
"$CL" kill --dir "$DIR" "$K"
# A SIGKILLed process stays in the namespace until the kernel tore it down.
ns_empty() { [ -z "$(ip netns pids "$PFX-n$K")" ]; }
poll 10 ns_empty || fail "processes left in node $K after kill: $(ip netns pids "$PFX-n$K" | tr '\n' ' ')"
curl -sf -m 2 "$(ep "$K")/health/ready" >/dev/null && fail "node $K's gateway still answers after kill"
s3 check "$(ep "$G")" "$DIR" || fail "degraded read with node $K killed"
for i in 1 2 3; do
	poll 30 s3 new "$(ep "$G")" "$DIR" after-kill-$i $((i * 700000)) || fail "PUT after-kill-$i with node $K down"
done
s3 check "$(ep "$G")" "$DIR" || fail "read back after new PUTs with node $K down"

step "start node $K again"
"$CL" start --dir "$DIR" "$K" || fail "start node $K"
rejoined() {
	admin --json cluster status 2>/dev/null | python3 -c '
import json, sys
k = int(sys.argv[1])
d = json.load(sys.stdin)
me = [m for m in d["members"] if m.get("id") == k]
ld = [m for m in d["members"] if m.get("role") == "leader"]
sys.exit(0 if me and ld and me[0]["role"] == "follower" and me[0]["leader_id"] == ld[0]["id"]
         and me[0]["applied_index"] >= ld[0]["commit_index"] else 1)' "$K"
}
node_osds_up() {
	admin --json osd ls 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); o = d["osds"] if isinstance(d, dict) else d
mine = [x for x in o if x["host"] == "n" + sys.argv[1]]
sys.exit(0 if len(mine) == 2 and all(x["up"] and x["in"] for x in mine) else 1)' "$K"
}
poll 30 rejoined || fail "member $K did not rejoin as a caught-up follower"
poll 30 node_osds_up || fail "node $K's OSDs not up and in"
admin cluster status | head -8
s3 check "$(ep "$K")" "$DIR" || fail "read back through the restarted node's gateway"

S=$K
step "slow node $S"
if out=$("$CL" slow --dir "$DIR" "$S" --delay 50ms 2>&1); then
	echo "$out"
	s3 check "$(ep "$G")" "$DIR" || fail "read with node $S delayed 50 ms"
	"$CL" unslow --dir "$DIR" "$S"
else
	echo "$out"
	echo "$out" | grep -q "netem is not available" || fail "slow --delay failed: $out"
	echo "SKIP step: 50 ms delay on node $S: tc netem is not available in this kernel"
fi
"$CL" slow --dir "$DIR" "$S" --rate 40mbit || fail "slow --rate"
[[ $(tc qdisc show dev "$PFX-v$S") == *tbf* ]] || fail "no tbf qdisc on $PFX-v$S"
s3 check "$(ep "$G")" "$DIR" || fail "read with node $S rate-limited"
"$CL" unslow --dir "$DIR" "$S"
[[ $(tc qdisc show dev "$PFX-v$S") != *tbf* ]] || fail "tbf still on $PFX-v$S after unslow"

step "rolling restart: node after node, each waiting for a healthy cluster"
"$CL" rolling-restart --dir "$DIR" --timeout 60 || fail "rolling restart"
s3 check "$(ep 1)" "$DIR" || fail "read back after the rolling restart"
poll 30 s3 new "$(ep 2)" "$DIR" after-rolling 300000 || fail "PUT after the rolling restart"

step "down"
"$CL" down --dir "$DIR" || fail "down"
left=$(leftovers)
[ -z "$left" ] || fail "left behind after down:$left"
echo "PASS test_netns_cluster ($(($(date +%s) - T0)) s)"
