#!/bin/sh
# test_osd_binary.sh — iolake-osd as an operator meets it.
#
# Shows (issue 3, must-show 4):
#   - a missing device path, an unformatted device (a loop device over a
#     sparse file, direct I/O) without --format, and a foreign superblock
#     each refuse to start: non-zero exit, a message naming the problem;
#     a missing /dev path is never created;
#   - bad flags are refused naming the flag;
#   - with an unreachable --meta the OSD starts, serves shards (bench-osd
#     --target puts through it) and logs each retry;
#   - SIGTERM stops it cleanly (exit 0) within a few seconds, and a restart
#     keeps its shards' space accounted.
# Runs as root (losetup). Data under /dev/shm. Every process this script
# starts is killed by PID, and the loop device it attached is detached by
# name, on every exit path.
set -u
B=${IOLAKE_BUILD:?IOLAKE_BUILD must name the build directory}
OSD=$B/iolake-osd
BENCH=$B/bench-osd
W=/dev/shm/iolake-osdbin-$$
PIDS=""
LOOPDEV=""

cleanup() {
	for p in $PIDS; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "$LOOPDEV" ]; then
		losetup -d "$LOOPDEV" 2>/dev/null
	fi
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	echo "FAIL: $*"
	exit 1
}

mkdir -p "$W" || fail "mkdir $W"

# expect_refusal NAME PATTERN ARGS... : the OSD exits non-zero at once and
# its stderr holds PATTERN (grep -E).
expect_refusal() {
	name=$1 pattern=$2
	shift 2
	timeout 20 "$OSD" "$@" >"$W/refusal.out" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] || fail "$name: exited 0; output: $(cat "$W/refusal.out")"
	[ "$rc" -ne 124 ] || fail "$name: did not exit (timeout)"
	grep -Eq -- "$pattern" "$W/refusal.out" ||
		fail "$name: output lacks /$pattern/: $(cat "$W/refusal.out")"
	echo "ok   refusal: $name (exit $rc): $(head -1 "$W/refusal.out")"
}

# start_osd LOG ARGS... : start in the background, wait for its port.
# Sets OSD_PID and OSD_PORT.
start_osd() {
	log=$1
	shift
	"$OSD" "$@" >"$log" 2>&1 &
	OSD_PID=$!
	PIDS="$PIDS $OSD_PID"
	i=0
	while [ $i -lt 200 ]; do
		OSD_PORT=$(sed -n 's/.*msg=listening .*port=\([0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$OSD_PORT" ] && return 0
		kill -0 "$OSD_PID" 2>/dev/null || fail "osd exited at start: $(cat "$log")"
		sleep 0.05
		i=$((i + 1))
	done
	fail "osd did not log its port: $(cat "$log")"
}

# stop_osd LOG : SIGTERM, expect exit 0 within 5 s and a clean-stop line.
stop_osd() {
	log=$1
	t0=$(date +%s%N)
	kill -TERM "$OSD_PID"
	wait "$OSD_PID"
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	PIDS=$(echo "$PIDS" | sed "s/ $OSD_PID\$//; s/ $OSD_PID / /")
	[ "$rc" -eq 0 ] || fail "SIGTERM: exit $rc: $(tail -5 "$log")"
	[ "$ms" -lt 5000 ] || fail "SIGTERM took $ms ms"
	grep -q 'msg=stopped clean=true' "$log" || fail "no clean stop line: $(tail -5 "$log")"
	echo "ok   SIGTERM: clean stop in $ms ms"
}

# ---------------------------------------------------------------- flags
expect_refusal "unknown flag" "unknown flag --sise" \
	--id 1 --device "$W/x" --sise 1G --meta-dir "$W/m" --listen 127.0.0.1:0
expect_refusal "bad --id" "flag --id" \
	--id abc --device "$W/x" --meta-dir "$W/m" --listen 127.0.0.1:0
expect_refusal "bad --cluster-id" "flag --cluster-id" \
	--id 1 --device "$W/x" --meta-dir "$W/m" --listen 127.0.0.1:0 --cluster-id nothex
expect_refusal "missing --device" "--device" \
	--id 1 --meta-dir "$W/m" --listen 127.0.0.1:0
expect_refusal "bad --meta" "flag --meta" \
	--id 1 --device "$W/x" --size 64M --meta-dir "$W/m" --listen 127.0.0.1:0 --meta nohostport
[ ! -e "$W/x" ] || fail "a refused start created the device file"

# ---------------------------------------------------------------- missing device
missing=/dev/iolake-missing-$$
expect_refusal "missing device path" "device $missing.*(No such file|does not exist)" \
	--id 1 --device "$missing" --meta-dir "$W/m" --listen 127.0.0.1:0
expect_refusal "missing /dev path with --size" "does not exist.*refusing to create" \
	--id 1 --device "$missing" --size 64M --meta-dir "$W/m" --listen 127.0.0.1:0
[ ! -e "$missing" ] || { rm -f "$missing"; fail "created $missing"; }
expect_refusal "missing file without --size" "No such file.*refusing" \
	--id 1 --device "$W/nofile.dev" --meta-dir "$W/m" --listen 127.0.0.1:0

# ---------------------------------------------------------------- unformatted loop device
truncate -s 256M "$W/loop.img" || fail "truncate"
LOOPDEV=$(losetup --find --show --direct-io=on "$W/loop.img") || fail "losetup failed"
echo "     loop device $LOOPDEV over $W/loop.img (direct I/O)"
expect_refusal "unformatted device without --format" "$LOOPDEV has no IOLake superblock.*--format" \
	--id 3 --device "$LOOPDEV" --meta-dir "$W/meta-loop" --listen 127.0.0.1:0
start_osd "$W/loop.log" --id 3 --device "$LOOPDEV" --meta-dir "$W/meta-loop" \
	--listen 127.0.0.1:0 --format
"$BENCH" --target "127.0.0.1:$OSD_PORT" --seconds 300ms >"$W/bench-loop.out" 2>&1 ||
	fail "puts to the loop-device OSD failed: $(cat "$W/bench-loop.out")"
echo "ok   loop device formatted and serving: $(grep '32 in flight' "$W/bench-loop.out")"
stop_osd "$W/loop.log"
# Formatted now: a restart without --format is accepted.
start_osd "$W/loop2.log" --id 3 --device "$LOOPDEV" --meta-dir "$W/meta-loop" \
	--listen 127.0.0.1:0
grep -q 'msg="osd started"' "$W/loop2.log" || fail "restart on the loop device"
stop_osd "$W/loop2.log"
losetup -d "$LOOPDEV" || fail "losetup -d $LOOPDEV"
LOOPDEV=""

# ---------------------------------------------------------------- foreign superblock
start_osd "$W/one.log" --id 1 --device "$W/osd.dev" --size 256M --meta-dir "$W/meta1" \
	--listen 127.0.0.1:0 --cluster-id 11111111-2222-3333-4444-555555555555
stop_osd "$W/one.log"
expect_refusal "foreign superblock (other osd id)" \
	"belongs to osd 1 of cluster 11111111222233334444555555555555, not osd 2" \
	--id 2 --device "$W/osd.dev" --meta-dir "$W/meta2" --listen 127.0.0.1:0 \
	--cluster-id 11111111-2222-3333-4444-555555555555
expect_refusal "foreign superblock (other cluster)" \
	"belongs to osd 1 of cluster 1111.*not osd 1 of cluster abab" \
	--id 1 --device "$W/osd.dev" --meta-dir "$W/meta1" --listen 127.0.0.1:0 \
	--cluster-id abababababababababababababababab
expect_refusal "--format without --force on a foreign device" "--format --force" \
	--id 2 --device "$W/osd.dev" --meta-dir "$W/meta2" --listen 127.0.0.1:0 --format \
	--cluster-id 11111111-2222-3333-4444-555555555555
expect_refusal "--force without --format" "--force only makes sense with --format" \
	--id 2 --device "$W/osd.dev" --meta-dir "$W/meta2" --listen 127.0.0.1:0 --force
expect_refusal "meta dir of another device" "meta dir .*(belongs to another|holds no index)" \
	--id 1 --device "$W/osd.dev" --meta-dir "$W/meta-loop" --listen 127.0.0.1:0 \
	--cluster-id 11111111-2222-3333-4444-555555555555

# ---------------------------------------------------------------- unreachable meta
start_osd "$W/meta.log" --id 1 --device "$W/osd.dev" --meta-dir "$W/meta1" \
	--listen 127.0.0.1:0 --cluster-id 11111111-2222-3333-4444-555555555555 \
	--meta 127.0.0.1:1,localhost:2
"$BENCH" --target "127.0.0.1:$OSD_PORT" --seconds 1s >"$W/bench-meta.out" 2>&1 ||
	fail "puts with meta unreachable failed: $(cat "$W/bench-meta.out")"
grep -Eq '32 in flight: +[1-9][0-9]* puts/s' "$W/bench-meta.out" ||
	fail "no puts served: $(cat "$W/bench-meta.out")"
sleep 1
n=$(grep -c 'msg="meta unreachable, retrying in [0-9.]*s"' "$W/meta.log")
[ "$n" -ge 2 ] || fail "expected repeated meta retry lines, got $n: $(cat "$W/meta.log")"
grep -q 'addr=localhost:2' "$W/meta.log" || fail "the second meta address was not tried"
echo "ok   meta unreachable: served puts ($(grep '32 in flight' "$W/bench-meta.out" | sed 's/  */ /g')), $n retry lines, e.g.:"
grep -m1 'meta unreachable' "$W/meta.log" | sed 's/^/       /'
stop_osd "$W/meta.log"

echo "PASS test_osd_binary"
