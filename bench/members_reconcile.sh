#!/bin/bash
# members_reconcile.sh — how long range groups take to follow a member
# add (issue 13): three iolake-meta members on 127.0.0.1 with
# --range-groups N, a fourth started with --join and added with
# `iolake-admin member add`; the time from that call until every group
# lists members 1..4 as its voters on member 4 (hosted there; the root's
# reconciled mark follows within a poll, 250 ms).
# Not a test: prints one line per N (default: 1 4 16), ROUNDS rounds each.
#   IOLAKE_BUILD=build bench/members_reconcile.sh [N ...]
set -u
. "$(dirname "$0")/../tests/integration/meta_lib.sh"
ROUNDS=${ROUNDS:-3}
run() {   # groups round
	local n=$1 d="$DIR/r$1.$2"
	mkdir -p "$d"
	local peers="1@$(addr 1),2@$(addr 2),3@$(addr 3)" meta="$(addr 1),$(addr 2),$(addr 3),$(addr 4)"
	for i in 1 2 3 4; do
		local p=$peers extra=""
		[ "$i" = 4 ] && { p="4@$(addr 4)"; extra=--join; }
		"$B/iolake-meta" --id "$i" --data-dir "$d/m$i" --listen "$(addr "$i")" --peers "$p" \
			--election-timeout 500ms --range-groups "$n" $extra >>"$d/log$i" 2>&1 &
		PID[$i]=$!
	done
	local ok=""
	for _ in $(seq 300); do
		ok=$("$B/iolake-admin" --meta "$meta" --timeout 5s --json range ls 2>/dev/null |
			python3 -c 'import json,sys
g=json.load(sys.stdin)["group_info"]; print(len(g) == int(sys.argv[1]) and all(x["leader"] != "-" for x in g))' "$n")
		[ "$ok" = True ] && break
		sleep 0.1
	done
	local t0 t1
	t0=$(date +%s%3N)
	"$B/iolake-admin" --meta "$meta" --timeout 5s member add "4@$(addr 4)" >/dev/null || echo "member add failed"
	for _ in $(seq 1200); do
		ok=$("$B/iolake-admin" --meta "$(addr 4)" --timeout 5s --json range ls 2>/dev/null |
			python3 -c 'import json,sys
g=json.load(sys.stdin)["group_info"]
print(len(g)==int(sys.argv[1]) and all(x["hosted"] and sorted(x["voters"])==[1,2,3,4] for x in g))' "$n")
		[ "$ok" = True ] && break
		sleep 0.05
	done
	t1=$(date +%s%3N)
	echo "groups=$n round=$2 reconciled=$ok ms=$((t1 - t0))"
	for i in 1 2 3 4; do kill -9 "${PID[$i]}" 2>/dev/null; wait "${PID[$i]}" 2>/dev/null; unset "PID[$i]"; done
	rm -rf "$d"
}
meta_lib_init bmembers 10
for n in "${@:-1 4 16}"; do
	for r in $(seq "$ROUNDS"); do run "$n" "$r"; done
done
