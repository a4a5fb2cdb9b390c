#!/bin/bash
# test_meta_powercut.sh — a meta member under simulated power cuts (issue
# 14's fault seam, meta's half; the OSD store's is test_store_powercut).
#
# The member's data dir lives on cutfs (tests/tools/cutfs.c), a FUSE file
# system that keeps every write in memory until its file is fsync'ed:
# ending cutfs loses exactly what a power cut would. Each round:
#   1. cutfs over the data dir, iolake-meta on it (one voter, a snapshot
#      every 64 entries so checkpoints and log truncation happen too);
#   2. meta-ledger verify: every op acknowledged in every earlier round is
#      there, byte for byte, and nothing else (tests/tools/meta_ledger.c);
#   3. meta-ledger run: PUTs, overwrites and deletes, 16 in flight, each
#      acknowledged op written to the ledger;
#   4. after a seeded random 0.2-1.2 s: SIGKILL meta and the load, end
#      cutfs (the cut): every unsynced page is lost, or (a third of the
#      rounds each) 40% or 80% of them survive, any subset, so the next
#      round starts on what was durable plus some of what was not.
# Every 10 rounds (a series) meta starts once more, on the backing dir
# itself, the series' whole ledger is verified again, and the next series
# starts on a fresh dir (so cuts land during bootstrap too, and a round's
# cost stays bounded).
#
# The check can fail: a last round runs over `cutfs --lie` (fsync answers
# success and writes nothing) on a fresh dir; its verify must FAIL.
#
#   META_POWERCUT_ROUNDS=N (default 50)   META_POWERCUT_SEED=S (default 1)
# `make soak-meta-powercut` runs 1,000 rounds. A failing round prints its
# seed; the seed fixes the cut delays and the ops' order (not the thread
# timing, so a replay lands near, not exactly on, the same cut).
set -u
. "$(dirname "$0")/meta_lib.sh"
ROUNDS=${META_POWERCUT_ROUNDS:-50}
SEED=${META_POWERCUT_SEED:-1}
SERIES=10   # rounds on one data dir before a fresh one
meta_lib_init metapc 2
MNT=""
META_LIB_ON_EXIT='[ -z "$MNT" ] || umount -l "$MNT" 2>/dev/null'

[ -c /dev/fuse ] || { echo "SKIP test_meta_powercut: no /dev/fuse"; exit 0; }
[ -x "$B/tests/tools/cutfs" ] || fail "no $B/tests/tools/cutfs"

ADDR=$(addr 1)
LEDGER="$DIR/ledger"

# mount BACKING [cutfs flags]: cutfs over BACKING at $DIR/mnt; PID[cutfs].
mount_cut() {
	MNT="$DIR/mnt"
	local back=$1
	shift
	mkdir -p "$back" "$MNT"
	"$B/tests/tools/cutfs" "$@" "$back" "$MNT" 2>>"$DIR/log-cutfs" &
	PID[cutfs]=$!
	for _ in $(seq 100); do
		grep -q " $MNT fuse" /proc/mounts && return 0
		sleep 0.02
	done
	fail "cutfs did not mount"
}
cut() {
	kill -TERM "${PID[cutfs]}" 2>/dev/null
	wait "${PID[cutfs]}" 2>/dev/null
	unset 'PID[cutfs]'
	grep -q " $MNT fuse" /proc/mounts && umount -l "$MNT"
	MNT=""
}
# 8 MiB Raft segments (the default is 64 MiB): cutfs tracks every page a
# fresh segment's preallocation dirties, which made each start slow, and
# smaller segments put more segment boundaries under the cuts.
start_meta() {   # DATA_DIR
	"$B/iolake-meta" --id 1 --data-dir "$1" --listen "$ADDR" --peers "1@$ADDR" \
		--snapshot-threshold 64 --snapshot-trailing 16 --raft-segment-size 8MiB \
		>>"$DIR/log-meta" 2>&1 &
	PID[meta]=$!
}
kill9() {
	kill -9 "${PID[$1]}" 2>/dev/null
	wait "${PID[$1]}" 2>/dev/null
	unset "PID[$1]"
}
verify() {   # prints the tool's line; its exit status
	"$B/tests/tools/meta-ledger" verify --meta "$ADDR" --ledger "$LEDGER"
}

# The state after a series' last cut, read once more by a meta started
# on the backing dir itself (no cutfs).
check_series() {
	start_meta "$BACK/meta"
	out=$(verify 2>&1) || fail "after the last cut of series $series (META_POWERCUT_SEED=$SEED): $out"
	echo "series $series: $out"
	kill9 meta
	rm -rf "$BACK"
}

RANDOM=$SEED
acked_total=0
series=0
t0=$(date +%s%N)
for r in $(seq "$ROUNDS"); do
	if [ $(( (r - 1) % SERIES )) -eq 0 ]; then   # a fresh data dir and ledger
		[ "$series" -eq 0 ] || check_series
		series=$((series + 1))
		BACK="$DIR/back$series"
		LEDGER="$DIR/ledger$series"
	fi
	keep=$(( (RANDOM % 3) * 40 ))
	mount_cut "$BACK" --keep "$keep" --seed "$r"
	start_meta "$MNT/meta"
	if [ -s "$LEDGER" ]; then
		out=$(verify 2>&1) || fail "round $r (META_POWERCUT_SEED=$SEED): after the cut: $out"
	fi
	before=$(grep -c '^A' "$LEDGER" 2>/dev/null)
	lines=$(wc -l 2>/dev/null <"$LEDGER" || echo 0)
	"$B/tests/tools/meta-ledger" run --meta "$ADDR" --ledger "$LEDGER" \
		--seed $((SEED * 100000 + r)) >>"$DIR/log-ledger" 2>&1 &
	PID[load]=$!
	for _ in $(seq 500); do   # the cut's clock starts with the first op
		[ "$(wc -l 2>/dev/null <"$LEDGER" || echo 0)" -gt "$lines" ] && break
		sleep 0.01
	done
	ms=$((200 + RANDOM % 1000))
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill9 meta
	kill9 load
	cut
	after=$(grep -c '^A' "$LEDGER")
	acked_total=$((acked_total + after - ${before:-0}))
	printf 'round %2d: cut after %4d ms keeping %2d%% of unsynced pages, %5d ops acknowledged (%d in this series)\n' \
		"$r" "$ms" "$keep" $((after - ${before:-0})) "$after"
done
check_series
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$acked_total" -gt 0 ] || fail "no op was ever acknowledged"
echo "ok: $ROUNDS power cuts in $took ms, $acked_total acknowledged ops all intact"

# A disk that lies about fsync loses acknowledged ops: the check sees it.
LEDGER="$DIR/ledger-lie"
mount_cut "$DIR/back-lie" --lie
start_meta "$MNT/meta"
"$B/tests/tools/meta-ledger" run --meta "$ADDR" --ledger "$LEDGER" --seed "$SEED" \
	>>"$DIR/log-ledger" 2>&1 &
PID[load]=$!
# As in the rounds, the second of load starts with the first acknowledged
# op: a loaded machine may take seconds to start meta on cutfs.
for _ in $(seq 1000); do
	grep -q '^A' "$LEDGER" 2>/dev/null && break
	sleep 0.01
done
sleep 1
kill9 meta
kill9 load
cut
[ "$(grep -c '^A' "$LEDGER")" -gt 0 ] || fail "the lying round acknowledged nothing"
start_meta "$DIR/back-lie/meta"
if out=$("$B/tests/tools/meta-ledger" verify --meta "$ADDR" --ledger "$LEDGER" --wait 10s 2>&1); then
	fail "verify passed over a disk that drops every fsync: $out"
fi
kill -0 "${PID[meta]}" 2>/dev/null || out="$out (meta did not start: $(tail -1 "$DIR/log-meta"))"
kill9 meta
echo "ok: over a lying disk the check fails: $(echo "$out" | tail -1)"
echo "PASS"
