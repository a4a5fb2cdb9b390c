#!/bin/bash
# test_meta_op_level.sh — meta members of different builds in one group (a
# rolling upgrade), on 127.0.0.1: members 1 and 2 act as a newer build
# (--debug-op-level 2: they write every entry at op level 2), member 3 as
# this build (level 1). With 1 and 2 leading:
#   - member 3, started behind them, stops at the first level-2 entry
#     (exit by abort, its log naming the entry's level and its own: no
#     state of its own that parts from the others), having applied none;
#   - 1 and 2 go on taking writes (user add) as the majority;
#   - member 3 restarted as the newer build applies every entry: the
#     three members' applied indexes meet, and the users are listed;
#   - then member 3 loses its data and 1 and 2, restarted to snapshot
#     every 16 entries keeping none, take 40 more writes: member 3 on an
#     empty dir as the older build gets a snapshot, not entries, and stops
#     at its install (the state records op level 2), writing nothing of
#     it; as the newer build it installs the snapshot and catches up.
# meta/state.h, "op levels"; docs/operations.md, "Upgrades".
set -u
. "$(dirname "$0")/meta_lib.sh"
meta_lib_init metalvl 6
ulimit -c 0   # member 3's abort is expected: no core file
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2)"
start() {   # start ID [flags]
	local id=$1
	shift
	"$B/iolake-meta" --id "$id" --data-dir "$DIR/m$id" --listen "$(addr "$id")" --peers "$PEERS" \
		--election-timeout 500ms "$@" >>"$DIR/log$id" 2>&1 &
	# shellcheck disable=SC2004 # PID is associative: the key is the id's value
	PID[$id]=$!
}
admin() { "$B/iolake-admin" --meta "$META" --timeout 5s "$@"; }
status_json() { "$B/iolake-admin" --meta "$(addr 1),$(addr 2),$(addr 3)" --timeout 5s --json cluster status; }
# caught_up: the three members' applied indexes are equal (else "no").
caught_up() {
	local same
	for _ in $(seq 100); do
		same=$(status_json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
idx = [m.get("applied_index") for m in d["members"]]
print("yes" if len(idx) == 3 and None not in idx and len(set(idx)) == 1 else "no")' 2>/dev/null)
		[ "$same" = yes ] && return 0
		sleep 0.1
	done
	return 1
}
# stops ID: member ID exits within 10 s, not with 0.
stops() {
	for _ in $(seq 100); do
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "${PID[$1]}" 2>/dev/null && return 1
	wait "${PID[$1]}"
	rc=$?
	unset "PID[$1]"
	[ "$rc" -ne 0 ]
}

start 1 --debug-op-level 2
start 2 --debug-op-level 2
for _ in $(seq 100); do
	admin user add alice >/dev/null 2>&1 && break
	sleep 0.1
done
admin user ls | grep -q '^alice ' || fail "no write through the level-2 members"

start 3
stops 3 || fail "member 3 (level 1) still runs among level-2 entries, or exited 0"
grep -q 'needs op level 2; this build applies level 1: upgrade this member' "$DIR/log3" ||
	fail "member 3's log does not name the levels"
grep -q 'the entry needs a newer IOLake' "$DIR/log3" || fail "member 3's log does not say why it stopped"
echo "ok: member 3 (level 1) stopped at a level-2 entry (exit $rc)"

admin user add bob >/dev/null || fail "user add with member 3 down"
admin user ls | grep -q '^bob ' || fail "bob not listed"
echo "ok: members 1 and 2 take writes without it"

start 3 --debug-op-level 2
META="$(addr 1),$(addr 2),$(addr 3)"
caught_up || { status_json; fail "member 3, upgraded, did not catch up"; }
kill -0 "${PID[3]}" 2>/dev/null || fail "member 3, upgraded, exited"
users=$(admin user ls) || fail "user ls after the upgrade"
grep -q '^alice ' <<<"$users" || fail "alice not listed after the upgrade"
grep -q '^bob ' <<<"$users" || fail "bob not listed after the upgrade"
echo "ok: member 3 restarted at level 2 applied every entry"

# The snapshot path: a member so far behind that it gets a snapshot.
for id in 1 2 3; do
	kill "${PID[$id]}"
	wait "${PID[$id]}"
done
rm -rf "$DIR/m3"
SNAP=(--debug-op-level 2 --snapshot-threshold 16 --snapshot-trailing 0)
start 1 "${SNAP[@]}"
start 2 "${SNAP[@]}"
META="$(addr 1),$(addr 2)"
for i in $(seq 40); do
	for _ in $(seq 100); do
		admin user add "u$i" >/dev/null 2>&1 && break
		sleep 0.1
	done
done
admin user ls | grep -q '^u40 ' || fail "no writes through the level-2 members (snapshot phase)"
grep -q 'snapshot taken' "$DIR/log1" "$DIR/log2" || fail "no snapshot taken by members 1 and 2"
start 3
stops 3 || fail "member 3 (level 1, empty dir) still runs after a level-2 snapshot, or exited 0"
grep -q 'holds entries of op level 2; this build applies level 1: upgrade this member' "$DIR/log3" ||
	fail "member 3's log does not say the snapshot's op level is above its own"
grep -q 'msg="snapshot install failed"' "$DIR/log3" || fail "member 3 did not stop at the install"
echo "ok: member 3 (level 1) refused a level-2 snapshot and stopped (exit $rc)"
start 3 --debug-op-level 2
META="$(addr 1),$(addr 2),$(addr 3)"
caught_up || { status_json; fail "member 3, upgraded, did not install the snapshot and catch up"; }
grep -q 'meta/state: installed' "$DIR/log3" || fail "member 3 caught up without a snapshot install"
users=$(admin user ls) || fail "user ls after the snapshot install"
grep -q '^u40 ' <<<"$users" || fail "u40 not listed after the snapshot install"
echo "ok: member 3 restarted at level 2 installed the snapshot and caught up"
echo PASS
