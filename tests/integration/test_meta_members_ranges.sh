#!/bin/bash
# test_meta_members_ranges.sh — range groups follow the members (issue 13),
# over real iolake-meta processes on 127.0.0.1 with --range-groups 3:
# bucket "ledger" split into five ranges over the three groups, objects
# written by meta-ledger (every acknowledged op in a ledger); members 4 and
# 5 join and are added with `iolake-admin member add`: every group lists
# the five as its members, reconciled, and five voters on every member,
# and the leader spread hands range group leaderships to the new members;
# two original members SIGKILLed: every group still commits (each group's
# applied index moves under a write load over three of its ranges) and
# every acknowledged object reads back (meta-ledger verify); a dead member
# removed (`member rm`): every group drops it; a fresh member 6 added in
# its place: every group takes it, and each group's state digest is the
# same on every live member; member 6 removed while it runs: every group
# drops it first, and it deletes its copies.
set -u
. "$(dirname "$0")/meta_lib.sh"
meta_lib_init metamr 12
[ -n "${KEEP_LOGS:-}" ] && META_LIB_ON_EXIT="cp -r \"\$DIR\" \"$KEEP_LOGS\""
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2),$(addr 3),$(addr 4),$(addr 5),$(addr 6)"
LEDGER="$B/tests/tools/meta-ledger"
start() {   # id [--join]
	local peers=$PEERS
	[ $# -gt 1 ] && peers="$1@$(addr "$1")"
	"$B/iolake-meta" --id "$1" --data-dir "$DIR/m$1" --listen "$(addr "$1")" --peers "$peers" \
		--election-timeout 500ms --snapshot-threshold 64 --snapshot-trailing 16 \
		--range-groups 3 "${@:2}" >>"$DIR/log$1" 2>&1 &
	PID[$1]=$!
}
admin() { "$B/iolake-admin" --meta "$META" --timeout 5s "$@"; }
at() { local i=$1; shift; timeout 20 "$B/iolake-admin" --meta "$(addr "$i")" --timeout 5s "$@"; }
ledger() { "$LEDGER" run --meta "$META" --ledger "$DIR/ledger" --seed 7 --wait 20s "$@"; }

# "OK" when, on every member of $1, every one of the 3 groups has the
# members $2 (the root's table), reconciled, is hosted with exactly those
# voters, knows a leader and has the same digest at the same index as on
# the others; else WAIT and why.
groups_check() {
	for i in $1; do
		at "$i" --json range ls >"$DIR/rl$i.json" 2>/dev/null || { echo "WAIT member $i"; return; }
	done
	python3 - "$DIR" "$1" "$2" <<'EOF'
import json, sys
d, ids, want = sys.argv[1], sys.argv[2].split(), sorted(int(x) for x in sys.argv[3].split())
dig = {}
for i in ids:
    gi = json.load(open(f"{d}/rl{i}.json"))["group_info"]
    if len(gi) != 3:
        print("WAIT groups", i, len(gi)); sys.exit()
    for g in gi:
        bad = (sorted(g["members"]) != want or g["reconciled"] is not True or not g["hosted"]
               or sorted(g["voters"]) != want or g["leader"] == "-" or not g["digest"])
        if bad:
            print("WAIT member", i, "group", g); sys.exit()
        dig.setdefault(g["id"], set()).add((g["digest_index"], g["digest"]))
if any(len(v) != 1 for v in dig.values()):
    print("WAIT digests", dig); sys.exit()
print("OK", " ".join(f"{k}:{v.pop()[0]}" for k, v in sorted(dig.items())))
EOF
}
wait_groups() {   # ids, members; up to 40 s; prints "group:index ..."
	local out="" end=$(($(date +%s) + 40))
	while [ "$(date +%s)" -lt "$end" ]; do
		out=$(groups_check "$1" "$2" 2>&1)
		case "$out" in OK*) echo "${out#OK }"; return 0 ;; esac
		echo "$(date +%T.%N | cut -c1-12) $out" >>"$DIR/polls.log"
		sleep 0.2
	done
	echo "last poll: $out" >&2
	return 1
}
now_ms() { date +%s%3N; }

for i in 1 2 3; do start "$i"; done
for _ in $(seq 100); do
	n=$(admin --json range ls 2>/dev/null | python3 -c 'import json,sys
print(sum(1 for g in json.load(sys.stdin)["group_info"] if g["leader"] != "-"))' 2>/dev/null)
	[ "${n:-0}" = 3 ] && break
	sleep 0.2
done
[ "${n:-0}" = 3 ] || fail "three range groups with leaders did not appear"

# The bucket, then five ranges: A [-,100) B [100,200) C [200,400)
# D [400,500) E [500,-); each split moves the right half to the group
# holding the fewest ranges, so C, D and E are in three different groups.
ledger --size 64 --count 1 2>>"$DIR/ledger.log" || fail "ledger: create bucket"
for k in 100 200 400 500; do
	admin range split ledger "k/0000$k" >>"$DIR/split.log" 2>&1 || fail "range split at $k"
done
admin range ls
G=$(admin --json range ls | python3 -c 'import json,sys
r=json.load(sys.stdin)["ranges"]
print(len({x["group"] for x in r if x["start"] >= "k/0000200"}), len(r))')
[ "$G" = "3 5" ] || fail "ranges C, D, E not in three groups (groups, ranges: $G)"
# Keys 1..299: records in A, B and C before the new members come.
ledger --size 64 --count 299 2>>"$DIR/ledger.log" || fail "ledger: first 299 puts"

start 4 --join
start 5 --join
T0=$(now_ms)
admin member add "4@$(addr 4)" || fail "member add 4"
admin member add "5@$(addr 5)" || fail "member add 5"
IDX=$(wait_groups "1 2 3 4 5" "1 2 3 4 5") || fail "groups did not take members 4 and 5"
echo "every group has voters 1..5, digests equal on all five, $(($(now_ms) - T0)) ms after the first member add ($IDX)"
# The leader spread gives the new members leaderships: four groups (the
# root, which the spread balances too, and three) over five members is one
# each at most.
SPREAD=""
for _ in $(seq 75); do
	SPREAD="$(at 3 --json range ls | python3 -c 'import json,sys
print(" ".join(sorted({g["leader"] for g in json.load(sys.stdin)["group_info"]})))') root:$(
		admin --json cluster status | python3 -c 'import json,sys
print([m["address"] for m in json.load(sys.stdin)["members"] if m.get("role")=="leader"][0])')"
	case " $SPREAD " in *"$(addr 4) "* | *"$(addr 5) "*) break ;; esac
	sleep 0.2
done
case " $SPREAD " in *"$(addr 4) "* | *"$(addr 5) "*) ;;
*) fail "members 4 and 5 lead no group (leaders: $SPREAD)" ;; esac
echo "group leaders after the spread: $SPREAD"
admin range ls

# Two original members down, the root leader among them when it is one
# of 1..3: each group (3 of 5 voters) still commits.
L=$(admin --json cluster status | python3 -c 'import json,sys
print([m["id"] for m in json.load(sys.stdin)["members"] if m.get("role")=="leader"][0])')
[ "$L" -le 3 ] 2>/dev/null || L=1
K=$((L % 3 + 1))
for i in "$L" "$K"; do kill -9 "${PID[$i]}"; wait "${PID[$i]}" 2>/dev/null; unset "PID[$i]"; done
LIVE=""
for i in 1 2 3 4 5; do [ "$i" != "$L" ] && [ "$i" != "$K" ] && LIVE="$LIVE $i"; done
echo "killed $L and $K; live:$LIVE"
M=${LIVE# }; M=${M%% *}
before=$(at "$M" --json range ls | python3 -c 'import json,sys
print(" ".join(str(g["digest_index"]) for g in json.load(sys.stdin)["group_info"]))')
# Keys 300..599: ranges C, D and E, one in each group.
ledger --size 64 --count 300 2>>"$DIR/ledger.log" || fail "ledger: puts with $L and $K down"
"$LEDGER" verify --meta "$META" --ledger "$DIR/ledger" --seed 7 --size 64 || fail "ledger verify with two down"
after=""
for _ in $(seq 50); do
	after=$(at "$M" --json range ls | python3 -c 'import json,sys
print(" ".join(str(g["digest_index"]) for g in json.load(sys.stdin)["group_info"]))')
	python3 -c 'import sys; b,a=sys.argv[1].split(),sys.argv[2].split()
sys.exit(0 if len(a)==3 and all(int(y)>int(x) for x,y in zip(b,a)) else 1)' "$before" "$after" && break
	sleep 0.2
done
python3 -c 'import sys; b,a=sys.argv[1].split(),sys.argv[2].split()
sys.exit(0 if len(a)==3 and all(int(y)>int(x) for x,y in zip(b,a)) else 1)' "$before" "$after" ||
	fail "not every group committed with $L and $K down (applied on $M: $before -> $after)"
echo "with $L and $K down every group committed: applied $before -> $after on member $M"

# The dead member $K removed: every group drops it.
admin member rm "$K" || fail "member rm $K"
NEW=""
for i in 1 2 3 4 5; do [ "$i" != "$K" ] && NEW="$NEW $i"; done
wait_groups "$LIVE" "$NEW" >/dev/null || fail "groups did not drop member $K"
echo "member $K removed from every group"

# A fresh member 6 in its place: every group takes it and catches it up.
start 6 --join
T0=$(now_ms)
admin member add "6@$(addr 6)" || fail "member add 6"
IDX=$(wait_groups "$LIVE 6" "$NEW 6") || fail "groups did not take member 6"
echo "member 6 in every group, digests equal on$LIVE 6, $(($(now_ms) - T0)) ms after member add ($IDX)"
ledger --size 64 --count 50 2>>"$DIR/ledger.log" || fail "ledger: puts after member 6"

# A live member removed: `member rm` takes it out of every group first (it
# still hears the root, so it learns the groups are done and drops its
# copies, directories included), then out of the root.
ls -d "$DIR"/m6/groups/* >/dev/null 2>&1 || fail "member 6 has no group directories"
T0=$(now_ms)
admin member rm 6 || fail "member rm 6 (live)"
echo "member rm 6 answered after $(($(now_ms) - T0)) ms"
wait_groups "$LIVE" "$NEW" >/dev/null || fail "groups did not drop live member 6"
for _ in $(seq 50); do
	[ -z "$(ls "$DIR"/m6/groups/ 2>/dev/null)" ] && break
	sleep 0.2
done
[ -z "$(ls "$DIR"/m6/groups/ 2>/dev/null)" ] ||
	fail "member 6 kept group directories: $(ls "$DIR"/m6/groups/)"
grep -q 'msg="group stopping".*removed=1' "$DIR/log6" || fail "member 6 did not log dropping its groups"
ledger --size 64 --count 50 2>>"$DIR/ledger.log" || fail "ledger: puts after member 6 left"
"$LEDGER" verify --meta "$META" --ledger "$DIR/ledger" --seed 7 --size 64 || fail "ledger verify at the end"
echo "live member 6 removed: out of every group, its group directories deleted"
admin range ls
echo PASS
