#!/bin/bash
# test_meta_cluster.sh — three real iolake-meta processes on 127.0.0.1:
# `iolake-admin cluster status` shows exactly one leader (table and
# --json); after SIGKILL of the leader a new one shows within ~10 s; the
# killed member, restarted, rejoins as a follower; `user add` / `user ls`
# work through any member; with every member killed, admin fails with a
# clear error and a non-zero exit. The leader is killed under a steady
# write load (user adds from a loop of admin clients): every acknowledged
# add is present afterwards, and none was answered "exists" (an op
# applied twice would be).
set -u
. "$(dirname "$0")/meta_lib.sh"
meta_lib_init metacl 6
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2),$(addr 3)"
start() {
	"$B/iolake-meta" --id "$1" --data-dir "$DIR/m$1" --listen "$(addr "$1")" --peers "$PEERS" \
		--election-timeout 500ms >>"$DIR/log$1" 2>&1 &
	PID[$1]=$!
}
admin() { "$B/iolake-admin" --meta "$META" --timeout 5s "$@"; }
leader_id() { admin --json cluster status | python3 -c '
import json,sys
d=json.load(sys.stdin)
l=[m["id"] for m in d["members"] if m.get("role")=="leader"]
print(l[0] if len(l)==1 else "")'; }
wait_leader() {   # prints the leader id, waits up to 10 s
	for _ in $(seq 50); do
		l=$(leader_id 2>/dev/null)
		[ -n "$l" ] && { echo "$l"; return 0; }
		sleep 0.2
	done
	return 1
}

for i in 1 2 3; do start $i; done
L=$(wait_leader) || fail "no leader within 10 s"
echo "leader: $L"
admin cluster status | tee "$DIR/status.txt"
[ "$(grep -c ' leader ' "$DIR/status.txt")" = 1 ] || fail "table shows not exactly one leader"
grep -q 'leaders: 1' "$DIR/status.txt" || fail "summary line"
admin --json cluster status | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert d["leaders"]==1, d
assert len(d["members"])==3 and all(m["role"] in ("leader","follower") for m in d["members"]), d
assert all(m["term"]>0 for m in d["members"]), d' || fail "--json status"

out=$(admin user add alice) || fail "user add"
echo "$out"
echo "$out" | grep -Eq '^access key: [A-Z0-9]{20}$' || fail "user add prints no access key"
echo "$out" | grep -Eq '^secret key: .{40}$' || fail "user add prints no secret"

# A steady write load across the failover: one user add after another,
# each acknowledged one recorded only after admin exits 0.
load() {
	local i=0
	while [ ! -e "$DIR/stop-load" ]; do
		i=$((i + 1))
		if out=$(admin user add "load$i" 2>&1); then
			echo "load$i" >>"$DIR/acked"
		else
			echo "load$i $out" >>"$DIR/failed"
		fi
	done
}
: >"$DIR/acked"
load &
LOADPID=$!
sleep 1.5
acked_before=$(wc -l <"$DIR/acked")
[ "$acked_before" -gt 0 ] || fail "no write acknowledged before the kill"

kill -9 "${PID[$L]}"
wait "${PID[$L]}" 2>/dev/null
t0=$(date +%s.%N)
N=""
for _ in $(seq 50); do
	N=$(leader_id 2>/dev/null)
	[ -n "$N" ] && [ "$N" != "$L" ] && break
	N=""
	sleep 0.2
done
[ -n "$N" ] || fail "no new leader within 10 s of killing $L"
echo "new leader: $N after $(python3 -c "print(round($(date +%s.%N)-$t0,2))") s"
admin cluster status | tee "$DIR/status2.txt"
grep -Eq "^- +$(addr "$L") +down" "$DIR/status2.txt" || fail "killed member not shown down"

# Let the load continue on the new leader, then stop it.
n0=$(wc -l <"$DIR/acked")
for _ in $(seq 50); do
	[ "$(wc -l <"$DIR/acked")" -ge $((n0 + 5)) ] && break
	sleep 0.2
done
touch "$DIR/stop-load"
wait $LOADPID
[ "$(wc -l <"$DIR/acked")" -ge $((n0 + 5)) ] || fail "the write load did not continue after the failover"
echo "load: $(wc -l <"$DIR/acked") adds acknowledged ($acked_before before the kill)"
if [ -s "$DIR/failed" ]; then
	cat "$DIR/failed"
	grep -qi 'exist' "$DIR/failed" && fail "an add was answered 'exists': applied twice"
fi
admin --json user ls >"$DIR/users.json" || fail "user ls --json after the load"
python3 - "$DIR/acked" "$DIR/users.json" <<'PY' || fail "acknowledged adds missing after the failover"
import json, sys
acked = [l.strip() for l in open(sys.argv[1]) if l.strip()]
raw = open(sys.argv[2]).read()
names = set()
def walk(o):
    if isinstance(o, dict):
        if "name" in o: names.add(o["name"])
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(json.loads(raw))
missing = [a for a in acked if a not in names]
print(f"{len(acked)} acknowledged, {len(missing)} missing")
sys.exit(1 if missing else 0)
PY

admin user ls | grep -q '^alice ' || fail "user ls after failover"
admin --json user ls | grep -q '"name":"alice"' || fail "user ls --json"

start "$L"
ok=""
for _ in $(seq 50); do
	# Follower of the current leader, with the leader's commit applied.
	role=$(admin --json cluster status | python3 -c "
import json,sys
d=json.load(sys.stdin)
me=[m for m in d['members'] if m.get('id')==$L]
ld=[m for m in d['members'] if m.get('role')=='leader']
ok = me and ld and me[0]['role']=='follower' and me[0]['leader_id']==ld[0]['id'] \
     and me[0]['applied_index']>=ld[0]['commit_index']
print('follower' if ok else '')")
	[ "$role" = follower ] && { ok=1; break; }
	sleep 0.2
done
[ -n "$ok" ] || fail "restarted member $L did not rejoin as follower"
admin cluster status

admin user rm alice || fail "user rm"
admin user ls | grep -q '^alice ' && fail "alice still listed after rm"

# Clean stop on SIGTERM.
kill -TERM "${PID[$L]}"
wait "${PID[$L]}"; rc=$?
[ $rc = 0 ] || fail "SIGTERM exit status $rc"
grep -q 'msg=stopped' "$DIR/log$L" || fail "no clean stop logged"
unset "PID[$L]"

for i in "${!PID[@]}"; do kill -9 "${PID[$i]}"; wait "${PID[$i]}" 2>/dev/null; done
PID=()
err=$(admin cluster status 2>&1); rc=$?
echo "$err"
[ $rc != 0 ] || fail "cluster status with no member up exited 0"
echo "$err" | grep -q 'no meta member answered' || fail "unclear error with no member up"
err=$(admin user ls 2>&1); rc=$?
[ $rc != 0 ] || fail "user ls with no member up exited 0"
echo "$err" | grep -q 'error' || fail "no error text"
echo PASS
