#!/bin/bash
# meta_catchup.sh — issue 13 must-show 3 at scale: a meta member stopped
# for a whole fill of N object records with 4 KiB inline bodies (what a
# 4 KiB S3 PUT leaves in meta) catches up through a file snapshot, and the
# members' memory stays bounded throughout.
#
#   bench/meta_catchup.sh [--objects 2000000] [--workdir /var/tmp] [--build build]
#                         [--cache 64MiB] [--write-buffer 16MiB]
#
# Three iolake-meta processes on 127.0.0.1 with their data under WORKDIR
# (a disk: 2 M records are ~8.5 GiB per member), the default snapshot
# thresholds (1,024 entries or 64 MiB), and --meta-cache / --meta-write-
# buffer as given (the memory bound). Member 3 is SIGKILLed, then
# tests/tools/meta-ledger fills N records through the leader (64 in
# flight) while every member's VmRSS is sampled each second; member 3
# starts again, and the script times its catch-up: the snapshot install
# (its log's "snapshot install" line) and the moment all three show one
# state digest at one applied index (`iolake-admin cluster status`).
# Prints a table: fill rate, each member's peak RSS during the fill and
# the catch-up, bytes fetched, catch-up time, the digests. Asserts nothing
# (a figure for docs/performance.md); exits 1 only if the digests never
# agree within 30 minutes. The data dir is removed at the end.
set -euo pipefail
N=2000000
WORK=/var/tmp
B=build
CACHE=64MiB
WBUF=16MiB
while [ $# -gt 0 ]; do
	case "$1" in
	--objects) N=$2; shift 2 ;;
	--workdir) WORK=$2; shift 2 ;;
	--build) B=$2; shift 2 ;;
	--cache) CACHE=$2; shift 2 ;;
	--write-buffer) WBUF=$2; shift 2 ;;
	*) echo "usage: $0 [--objects N] [--workdir DIR] [--build DIR] [--cache SIZE] [--write-buffer SIZE]" >&2
	   exit 2 ;;
	esac
done
B=$(cd "$B" && pwd)
DIR=$(mktemp -d "$WORK/iolake-catchup-XXXXXX")
declare -A PID
SAMPLER=""
cleanup() {
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
	for i in "${!PID[@]}"; do kill -9 "${PID[$i]}" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT

BASE=$(python3 -c 'import socket, random
for _ in range(200):
    p = random.randrange(10000, 32000, 10); ok = True
    for q in range(p, p + 6):
        s = socket.socket()
        try: s.bind(("127.0.0.1", q))
        except OSError: ok = False
        s.close()
    if ok: print(p); break')
addr() { echo "127.0.0.1:$((BASE + 2 * ($1 - 1)))"; }
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2),$(addr 3)"
start() {
	"$B/iolake-meta" --id "$1" --data-dir "$DIR/m$1" --listen "$(addr "$1")" --peers "$PEERS" \
		--meta-cache "$CACHE" --meta-write-buffer "$WBUF" >>"$DIR/log$1" 2>&1 &
	PID[$1]=$!
}
admin() { "$B/iolake-admin" --meta "$META" --timeout 5s "$@"; }
rss() { awk '/^VmRSS:/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# One line "OK index digest" when all three agree, else "WAIT ...".
same() { admin --json cluster status 2>/dev/null | python3 -c "
import json,sys
d=json.load(sys.stdin)
ms=[m for m in d['members'] if m.get('role') not in (None,'down')]
got={(m['state_applied_index'],m['state_digest']) for m in ms}
print('OK %d %s' % got.pop() if len(ms)==3 and len(got)==1 and d['leaders']==1 else 'WAIT')" 2>/dev/null || echo WAIT; }

start 1; start 2; start 3
for _ in $(seq 100); do [ "$(same)" != WAIT ] && break; sleep 0.2; done
kill -9 "${PID[3]}"; wait "${PID[3]}" 2>/dev/null || true; unset 'PID[3]'

# RSS samples: "t m1 m2 m3" each second (0 for a member not running).
(while :; do
	echo "$(date +%s) $(rss "${PID[1]}") $(rss "${PID[2]}") $(rss "$(cat "$DIR/pid3" 2>/dev/null || echo 0)")"
	sleep 1
done) >"$DIR/rss" &
SAMPLER=$!

echo "fill: $N records of 4 KiB inline through the leader, member 3 down"
t0=$(date +%s%N)
"$B/tests/tools/meta-ledger" run --meta "$(addr 1),$(addr 2)" --ledger "$DIR/ledger" \
	--seed 1 --count "$N" --size 4096 --window 64 2>"$DIR/fill.log"
t1=$(date +%s%N)
fill_s=$(( (t1 - t0) / 1000000 ))
fill_end=$(date +%s)
du_live=$(du -sm "$DIR/m1" | cut -f1)

start 3
echo "${PID[3]}" >"$DIR/pid3"
t2=$(date +%s%N)
res=WAIT
for _ in $(seq 9000); do
	res=$(same)
	[ "$res" != WAIT ] && break
	sleep 0.2
done
t3=$(date +%s%N)
sleep 2
kill "$SAMPLER"; SAMPLER=""
catch_ms=$(( (t3 - t2) / 1000000 ))

peak() {   # column, from, to (epoch s): the max
	awk -v c="$1" -v a="$2" -v b="$3" '$1 >= a && $1 <= b && $c > m { m = $c } END { print m + 0 }' "$DIR/rss"
}
t0s=$(( t0 / 1000000000 )); t2s=$(( t2 / 1000000000 )); t3s=$(( t3 / 1000000000 + 2 ))
inst=$(grep -m1 "snapshot install" "$DIR/log3" || true)
echo
echo "| objects | fill | fill rate | data per member | catch-up (start to same digest) |"
echo "|---:|---:|---:|---:|---:|"
printf '| %d | %d.%01d s | %d/s | %d MiB | %d.%01d s |\n' "$N" $((fill_s / 1000)) $((fill_s % 1000 / 100)) \
	$((N * 1000 / (fill_s > 0 ? fill_s : 1))) "$du_live" $((catch_ms / 1000)) $((catch_ms % 1000 / 100))
echo
echo "| member | peak RSS during the fill | peak RSS during the catch-up |"
echo "|---|---:|---:|"
for m in 1 2 3; do
	printf '| %d | %d MiB | %d MiB |\n' "$m" "$(peak $((m + 1)) "$t0s" "$fill_end")" \
		"$(peak $((m + 1)) "$t2s" "$t3s")"
done
echo
echo "flags: --meta-cache $CACHE --meta-write-buffer $WBUF; data in $WORK"
echo "member 3's install: ${inst:-none logged}"
echo "digests: $res"
[ "$res" != WAIT ]
