#!/bin/bash
# test_meta_members.sh — voters added and removed at run time, over real
# iolake-meta processes on 127.0.0.1: three voters take writes; members 4
# and 5 start empty with --join and are added with `iolake-admin member
# add`; they catch up (the same state digest as the others) through a
# file snapshot (an add retried or repeated answers done; the same id at
# another address is refused) (--snapshot-threshold 64: the log they would need is
# truncated, so each fetches the leader's checkpoint with FetchSnapshot and
# logs the install); with two
# members SIGKILLed, the leader among them, the five-voter group still
# commits; `member rm` removes a dead one and every live member's status
# shows the new configuration (1..5 without it); a fresh member 6 takes
# the dead one's place with `member add` and catches up (same digest as
# the live ones, through a file snapshot), and the group commits with the
# other dead member still down (4 of 5 live); then one more original
# member is killed and the group still commits (3 of 5 live: member 6's
# vote counts).
set -u
. "$(dirname "$0")/meta_lib.sh"
meta_lib_init metamb 12
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2),$(addr 3),$(addr 4),$(addr 5),$(addr 6)"
start() {   # id [--join]
	local peers=$PEERS
	[ $# -gt 1 ] && peers="$1@$(addr "$1")"
	"$B/iolake-meta" --id "$1" --data-dir "$DIR/m$1" --listen "$(addr "$1")" --peers "$peers" \
		--election-timeout 500ms --snapshot-threshold 64 --snapshot-trailing 16 \
		"${@:2}" >>"$DIR/log$1" 2>&1 &
	PID[$1]=$!
}
admin() { "$B/iolake-admin" --meta "$META" --timeout 5s "$@"; }

# "OK <leader> <index> <digest>" when the members $1 answer, one of all is
# the leader, every one of $1 has the configuration $2 (ids, all voters)
# and the same non-empty digest at the same state index; else WAIT ...
check() { admin --json cluster status | python3 -c "
import json,sys
ids=[int(x) for x in '$1'.split()]
conf=sorted(int(x) for x in '$2'.split())
d=json.load(sys.stdin)
ms={m.get('id'):m for m in d['members'] if m.get('role') not in (None,'down')}
lead=[m['id'] for m in ms.values() if m['role']=='leader']
if len(lead)!=1 or any(i not in ms for i in ids):
    print('WAIT leader', lead, 'up', sorted(ms)); sys.exit()
bad=[i for i in ids if sorted(c['id'] for c in ms[i]['configuration'] if c['voter'])!=conf]
got={(ms[i]['state_applied_index'],ms[i]['state_digest']) for i in ids}
if bad or len(got)!=1 or not all(g[1] for g in got):
    print('WAIT config', bad, sorted(got)); sys.exit()
g=got.pop()
print('OK', lead[0], g[0], g[1])"; }
wait_check() {   # ids, configuration; prints "leader index digest"; up to ~20 s
	local out=""
	for _ in $(seq 100); do
		out=$(check "$1" "$2" 2>&1)
		case "$out" in OK*) echo "${out#OK }"; return 0 ;; esac
		sleep 0.2
	done
	echo "last poll: $out" >&2
	return 1
}

for i in 1 2 3; do start $i; done
wait_check "1 2 3" "1 2 3" >/dev/null || fail "three voters: no leader or no agreement"
# 120 entries: past one snapshot (64) and its trailing log (16).
for i in $(seq 120); do admin user add "before$i" >/dev/null || fail "user add before$i"; done

start 4 --join
start 5 --join
admin member add "4@$(addr 4)" || fail "member add 4"
# Member 5's add answered after the client's 2 s attempt has given up:
# the retry finds the change done or in flight and answers done.
admin --debug-fault 'delay-answer=2500,method=AddMember,count=1' member add "5@$(addr 5)" ||
	fail "member add 5 (its first answer lost)"
# An add repeated (a new request: what a retry meets at a new leader) is
# done again; the same id at another address is refused, and says so.
admin member add "4@$(addr 4)" >/dev/null || fail "member add 4, repeated"
out=$(admin member add "4@$(addr 7)" 2>&1) && fail "member add 4 at another address: accepted"
echo "refused: $out"
case "$out" in *"already at $(addr 4 | sed 's/:[0-9]*$//')"*) ;; *) fail "member add 4 at another address: $out" ;; esac
read -r L IDX DIG < <(wait_check "1 2 3 4 5" "1 2 3 4 5") ||
	fail "members 4 and 5 did not catch up as voters"
echo "five voters, leader $L: state index $IDX digest $DIG on all five"
for i in 4 5; do
	line=$(grep 'msg="snapshot install"' "$DIR/log$i" | grep -v 'err=[^n]' | head -1)
	echo "member $i: ${line:-no snapshot install}"
	case "$line" in *" fetched=0 "* | "") fail "member $i did not catch up through a file snapshot" ;; esac
done
admin cluster status

# Two down, the leader among them: 3 of 5 still commit.
K=$((L % 5 + 1))   # another member than the leader
for i in "$L" "$K"; do kill -9 "${PID[$i]}"; wait "${PID[$i]}" 2>/dev/null; unset "PID[$i]"; done
echo "killed $L (leader) and $K"
LIVE=""
for i in 1 2 3 4 5; do [ "$i" != "$L" ] && [ "$i" != "$K" ] && LIVE="$LIVE $i"; done
for i in $(seq 5); do admin user add "after$i" >/dev/null || fail "user add after$i with two of five down"; done
read -r L2 IDX2 _ < <(wait_check "$LIVE" "1 2 3 4 5") || fail "the three live members differ"
[ "$IDX2" -gt "$IDX" ] || fail "nothing committed with two of five down"
echo "with $L and $K down: leader $L2 committed up to $IDX2"

admin member rm "$K" || fail "member rm $K"
NEWCONF=""
for i in 1 2 3 4 5; do [ "$i" != "$K" ] && NEWCONF="$NEWCONF $i"; done
read -r L3 _ _ < <(wait_check "$LIVE" "$NEWCONF") || fail "configuration without $K not shown"
admin cluster status | tee "$DIR/status.txt"
grep -q "^configuration.*" "$DIR/status.txt" || fail "no configuration line"
grep "^configuration" "$DIR/status.txt" | grep -q " $K@" && fail "removed member $K still listed"
admin user add final >/dev/null || fail "user add after member rm"
admin user ls | grep -q '^after5 ' || fail "after5 missing"
echo "member $K removed; leader $L3; configuration:$NEWCONF"

# Replace the dead member by a fresh one: it joins empty and catches up.
for i in $(seq 40); do admin user add "more$i" >/dev/null || fail "user add more$i"; done
start 6 --join
admin member add "6@$(addr 6)" || fail "member add 6"
read -r L4 IDX4 DIG4 < <(wait_check "$LIVE 6" "$NEWCONF 6") ||
	fail "fresh member 6 did not catch up"
line=$(grep 'msg="snapshot install"' "$DIR/log6" | grep -v 'err=[^n]' | head -1)
case "$line" in *" fetched=0 "* | "") fail "member 6 did not catch up through a file snapshot" ;; esac
echo "member 6 replaced $K: leader $L4, state index $IDX4 digest $DIG4 on$LIVE 6"
# With $L still dead, the five voters are four live ones: writes go on,
# and member 6 has them.
admin user add replaced >/dev/null || fail "user add with member 6 in place"
read -r _ IDX5 _ < <(wait_check "$LIVE 6" "$NEWCONF 6") || fail "members differ after member 6"
[ "$IDX5" -gt "$IDX4" ] || fail "nothing committed after member 6 joined"

# Member 6 counts in the quorum: one more original member killed leaves
# three of the five voters live, member 6 among them (without its vote
# and its log, two of five could not commit).
M=""
for i in $LIVE; do M=$i; done
kill -9 "${PID[$M]}"
wait "${PID[$M]}" 2>/dev/null
unset "PID[$M]"
LIVE3=""
for i in $LIVE; do [ "$i" != "$M" ] && LIVE3="$LIVE3 $i"; done
for i in $(seq 5); do
	admin user add "quorum$i" >/dev/null || fail "user add quorum$i with $L and $M down"
done
read -r L6 IDX6 _ < <(wait_check "$LIVE3 6" "$NEWCONF 6") ||
	fail "the live members differ with $L and $M down"
[ "$IDX6" -gt "$IDX5" ] || fail "nothing committed with $L and $M down"
echo "with $L and $M down: leader $L6 committed up to $IDX6 on$LIVE3 6 (member 6's vote counted)"
admin user ls | grep -q '^quorum5 ' || fail "quorum5 missing"
echo PASS
