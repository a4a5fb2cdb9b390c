#!/bin/bash
# test_metrics_http.sh — /metrics over HTTP on a standalone iolake-meta and
# iolake-osd (--metrics-listen), scraped with curl and parsed with the
# Prometheus Python client's text parser (python3-prometheus-client).
#
# Shows:
#   - one iolake-meta (single voter) and one iolake-osd (a file under
#     /dev/shm, registered with that meta), each with --metrics-listen on
#     127.0.0.1:0 (the bound port is logged), answer GET /metrics with 200,
#     the Prometheus content type, and a body every line of which the
#     Prometheus parser accepts, holding their own families
#     (iolake_meta_is_leader reaches 1; iolake_osd_total_bytes is the
#     device's size less the superblock's share, used + free = total);
#   - HEAD answers the same Content-Length without a body; other paths 404;
#   - a bad --metrics-listen exits 2 naming the flag, on both binaries; a
#     port already in use exits non-zero naming the flag and the error;
#   - SIGTERM still stops both cleanly (exit 0).
# Every process is started in the background and killed by PID on exit.
set -u
# Debian's python3 (with python3-prometheus-client) before any pyenv shim.
PATH=/usr/bin:/bin:$PATH
B=${IOLAKE_BUILD:?IOLAKE_BUILD must name the build directory}
W=$(mktemp -d /dev/shm/iolake-mhttp-XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail() {
	echo "FAIL: $*"
	for f in "$W"/*.log; do [ -e "$f" ] && { echo "== $f"; tail -15 "$f"; }; done
	exit 1
}

# Four consecutive free ports: two metas (RPC, Raft = RPC + 1).
P=$(python3 "$(dirname "$0")/free_port.py" 4)
[ -n "$P" ] || fail "no free ports"

# metrics_port LOG PID: wait for the "metrics listening" line, print its port.
metrics_port() {
	for _ in $(seq 200); do
		port=$(sed -n 's/.*msg="metrics listening".* port=\([0-9]*\).*/\1/p' "$1" | head -1)
		[ -n "$port" ] && { echo "$port"; return 0; }
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# expect_refusal NAME WANT_RC PATTERN CMD...: exits WANT_RC ("nonzero" for
# any but 0) with PATTERN in its output.
expect_refusal() {
	name=$1 want=$2 pattern=$3
	shift 3
	timeout 20 "$@" >"$W/refusal.out" 2>&1
	rc=$?
	[ "$rc" -ne 124 ] || fail "$name: did not exit"
	if [ "$want" = nonzero ]; then
		[ "$rc" -ne 0 ] || fail "$name: exited 0"
	else
		[ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat "$W/refusal.out")"
	fi
	grep -Eq -- "$pattern" "$W/refusal.out" ||
		fail "$name: output lacks /$pattern/: $(cat "$W/refusal.out")"
	echo "ok   $name (exit $rc): $(grep -E -- "$pattern" "$W/refusal.out" | head -1)"
}

# ---------------------------------------------------------------- bad flags
expect_refusal "meta: bad --metrics-listen" 2 "flag --metrics-listen: 'nohostport'" \
	"$B/iolake-meta" --id 1 --data-dir "$W/meta-bad" --listen "127.0.0.1:$P" \
	--peers "1@127.0.0.1:$P" --metrics-listen nohostport
expect_refusal "osd: bad --metrics-listen" 2 "flag --metrics-listen: '127.0.0.1:99999'" \
	"$B/iolake-osd" --id 1 --device "$W/bad.dev" --size 64M --meta-dir "$W/bad-m" \
	--listen 127.0.0.1:0 --metrics-listen 127.0.0.1:99999
[ ! -e "$W/meta-bad" ] && [ ! -e "$W/bad.dev" ] || fail "a refused start left files"

# ---------------------------------------------------------------- start both
"$B/iolake-meta" --id 1 --data-dir "$W/meta" --listen "127.0.0.1:$P" --peers "1@127.0.0.1:$P" \
	--election-timeout 300ms --metrics-listen 127.0.0.1:0 >"$W/meta.log" 2>&1 &
META_PID=$!
PIDS="$PIDS $META_PID"
MPORT=$(metrics_port "$W/meta.log" "$META_PID") || fail "meta did not log its metrics port"
"$B/iolake-osd" --id 7 --device "$W/osd.dev" --size 64M --meta-dir "$W/osd-m" \
	--listen 127.0.0.1:0 --meta "127.0.0.1:$P" --host h1 \
	--metrics-listen 127.0.0.1:0 >"$W/osd.log" 2>&1 &
OSD_PID=$!
PIDS="$PIDS $OSD_PID"
OPORT=$(metrics_port "$W/osd.log" "$OSD_PID") || fail "osd did not log its metrics port"
echo "     meta metrics on :$MPORT, osd metrics on :$OPORT"

# scrape PORT FILE: GET /metrics with curl, headers in FILE.h, body in FILE.
scrape() {
	curl -sf -D "$2.h" -o "$2" "http://127.0.0.1:$1/metrics" || return 1
	grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$2.h"
}

# check FILE: every line parses (Prometheus client); print "name value"
# of each sample, labels dropped, for grep.
check() {
	python3 - "$1" <<'EOF' || return 1
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
if not text.endswith("\n"):
    sys.exit("body does not end in a newline")
n = 0
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        print(s.name, repr(s.value), ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())))
        n += 1
if n == 0:
    sys.exit("no samples")
EOF
}

# Meta: the single voter elects itself; its scrape shows it.
leader=""
for _ in $(seq 100); do
	scrape "$MPORT" "$W/meta.prom" || fail "meta scrape failed"
	check "$W/meta.prom" >"$W/meta.samples" || fail "meta scrape does not parse"
	leader=$(awk '$1 == "iolake_meta_is_leader" { print $2 }' "$W/meta.samples")
	[ "$leader" = 1.0 ] && break
	sleep 0.1
done
[ "$leader" = 1.0 ] || fail "iolake_meta_is_leader never 1: $(cat "$W/meta.prom")"
grep -q '^iolake_meta_raft_term ' "$W/meta.samples" || fail "no iolake_meta_raft_term"
grep -q '^iolake_meta_apply_seconds_bucket ' "$W/meta.samples" || fail "no apply histogram"
echo "ok   meta /metrics: $(wc -l <"$W/meta.samples") samples parse; iolake_meta_is_leader 1"

# OSD: its space gauges (refreshed each second) add up and name osd 7.
ok=""
for _ in $(seq 50); do
	scrape "$OPORT" "$W/osd.prom" || fail "osd scrape failed"
	check "$W/osd.prom" >"$W/osd.samples" || fail "osd scrape does not parse"
	read -r used free total < <(awk '
		$1 == "iolake_osd_used_bytes" && $3 == "osd=7" { u = $2 }
		$1 == "iolake_osd_free_bytes" && $3 == "osd=7" { f = $2 }
		$1 == "iolake_osd_total_bytes" && $3 == "osd=7" { t = $2 }
		END { print u, f, t }' "$W/osd.samples")
	if [ -n "${total:-}" ] && python3 -c "import sys; u,f,t=map(float,sys.argv[1:]); \
		sys.exit(not (t > 60e6 and t <= 64*2**20 and u + f == t))" "$used" "$free" "$total"; then
		ok=1
		break
	fi
	sleep 0.1
done
[ -n "$ok" ] || fail "osd space gauges wrong: used=$used free=$free total=$total"
grep -q '^iolake_osd_puts_total ' "$W/osd.samples" || fail "no iolake_osd_puts_total"
echo "ok   osd /metrics: $(wc -l <"$W/osd.samples") samples parse; total_bytes $total = used + free"

# HEAD: same length, no body; other paths 404; POST 405.
for port in "$MPORT" "$OPORT"; do
	get_len=$(curl -sf -o /dev/null -w '%{size_download}' "http://127.0.0.1:$port/metrics")
	head_len=$(curl -sfI "http://127.0.0.1:$port/metrics" |
		tr -d '\r' | sed -n 's/^Content-Length: //Ip')
	head_body=$(curl -sf -I -o /dev/null -w '%{size_download}' "http://127.0.0.1:$port/metrics")
	[ -n "$head_len" ] && [ "$head_body" = 0 ] ||
		fail "HEAD on :$port: length '$head_len', body $head_body"
	# The gauges may move between two scrapes, but not by kilobytes.
	[ $((get_len - head_len)) -lt 64 ] && [ $((head_len - get_len)) -lt 64 ] ||
		fail "HEAD on :$port says $head_len bytes, GET got $get_len"
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")
	[ "$code" = 404 ] || fail "/health on :$port: $code"
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "http://127.0.0.1:$port/metrics")
	[ "$code" = 405 ] || fail "POST on :$port: $code"
done
echo "ok   HEAD (no body, same length), 404 for /health, 405 for POST on both"

# ---------------------------------------------------------------- port in use
expect_refusal "osd: --metrics-listen port in use" nonzero \
	"flag --metrics-listen 127.0.0.1:$MPORT: Address already in use" \
	"$B/iolake-osd" --id 8 --device "$W/osd8.dev" --size 64M --meta-dir "$W/osd8-m" \
	--listen 127.0.0.1:0 --metrics-listen "127.0.0.1:$MPORT"
P2=$((P + 2))
expect_refusal "meta: --metrics-listen port in use" nonzero \
	"flag --metrics-listen 127.0.0.1:$OPORT: Address already in use" \
	"$B/iolake-meta" --id 1 --data-dir "$W/meta2" --listen "127.0.0.1:$P2" \
	--peers "1@127.0.0.1:$P2" --metrics-listen "127.0.0.1:$OPORT"

# A member whose Raft port (--listen's port + 1) is taken: a clear error and
# exit 1 (it used to crash closing the half-started member).
HOLD=$(python3 "$(dirname "$0")/free_port.py" 2)
python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(30)' "$((HOLD + 1))" &
HOLD_PID=$!
PIDS="$PIDS $HOLD_PID"
sleep 0.3
expect_refusal "meta: Raft port in use" 1 \
	"raft_addr=127.0.0.1:$((HOLD + 1)) why=\"address already in use\"" \
	"$B/iolake-meta" --id 1 --data-dir "$W/meta3" --listen "127.0.0.1:$HOLD" \
	--peers "1@127.0.0.1:$HOLD"
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
PIDS=$(echo " $PIDS " | sed "s/ $HOLD_PID / /")

# ---------------------------------------------------------------- clean stop
for name in osd meta; do
	[ $name = osd ] && pid=$OSD_PID || pid=$META_PID
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	PIDS=$(echo " $PIDS " | sed "s/ $pid / /")
	[ "$rc" -eq 0 ] || fail "$name: SIGTERM gave exit $rc"
done
grep -q 'msg=stopped clean=true' "$W/osd.log" || fail "osd: no clean stop line"
echo "ok   SIGTERM: both exit 0"
echo PASS
