# shellcheck shell=bash
# netns_lib.sh — sourced by the tests that run a cluster in network
# namespaces (infra/netns-cluster.sh); not a test itself.
#
# Sets B (build dir), CL (the cluster script), S3PY (netns_s3.py), PFX (a
# per-run prefix), SUBNET (a /24 free on this host), DIR (the cluster's
# dir on /dev/shm), SEED, T0; skips (exit 0 after a "SKIP NAME: why"
# line) without root or `ip netns`; installs an EXIT trap that brings the
# cluster down and fails the test if any namespace, link or process of
# this run is left. After `up`, netns_env exports the credentials and
# defines META. Helpers: fail, step, poll, admin, ep, s3.
#
# Use: NETNS_TEST=test_x; . "$HERE/netns_lib.sh"
export PATH=/usr/bin:/bin:$PATH
B=${IOLAKE_BUILD:?set IOLAKE_BUILD to the build dir}
CL=$HERE/../../infra/netns-cluster.sh
S3PY=$HERE/netns_s3.py
PFX=nt$$
# A /24 per run, from the PID and not on the host yet, so parallel runs
# do not collide (up refuses a subnet in use).
ADDRS=$(ip -4 -o addr show 2>/dev/null || true)
for i in $(seq 0 249); do
	SUBNET=10.77.$((($$ + i) % 250))
	[[ $ADDRS == *" $SUBNET."* ]] || break
done
DIR=$(mktemp -d /dev/shm/iolake-netns.XXXXXX)
SEED=${SEED:-$$}
T0=$(date +%s)

skip() {
	echo "SKIP $NETNS_TEST: $*"
	rm -rf "$DIR"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "no ip(8) (iproute2)"
if ! err=$(ip netns add "$PFX-probe" 2>&1); then skip "ip netns add failed: $err"; fi
ip netns del "$PFX-probe"

# leftovers: what of this run still exists (outputs are read whole before
# matching: "cmd | grep -q" under pipefail can fail after a match).
leftovers() {
	local bad="" out p c
	out=$(ip netns list | grep "^$PFX-" || true)
	[ -z "$out" ] || bad="$bad namespaces: $(echo "$out" | tr '\n' ' ')"
	out=$(ip -o link show | grep -o ": $PFX-[^:@]*" || true)
	[ -z "$out" ] || bad="$bad links$(echo "$out" | tr '\n' ' ')"
	# Every process netns-cluster.sh starts carries IOLAKE_NETNS_CLUSTER=DIR.
	for p in /proc/[0-9]*; do
		c=$(tr '\0' '\n' 2>/dev/null <"$p/environ") || continue
		if [[ $'\n'$c$'\n' == *$'\n'"IOLAKE_NETNS_CLUSTER=$DIR"$'\n'* ]]; then bad="$bad pid:${p#/proc/}"; fi
	done
	echo "$bad"
}
cleanup() {
	local rc=$? left
	trap - EXIT INT TERM
	if [ $rc != 0 ]; then
		for f in "$DIR"/n*/*.log; do
			[ -f "$f" ] || continue
			echo "== $f"
			tail -8 "$f" | cut -c1-300
		done
		# The whole logs, beside the build's test logs (the run's
		# directory goes below).
		if [ -d "$B" ] && compgen -G "$DIR/n*/*.log" >/dev/null; then
			local keep="$B/$NETNS_TEST.failed-logs"
			rm -rf "$keep"
			for f in "$DIR"/n*/*.log; do
				mkdir -p "$keep/$(basename "$(dirname "$f")")"
				cp "$f" "$keep/$(basename "$(dirname "$f")")/"
			done
			echo "whole logs of this run: $keep"
		fi
	fi
	"$CL" down --dir "$DIR" || rc=1
	left=$(leftovers)
	if [ -n "$left" ]; then
		echo "FAIL: left behind after down:$left"
		rc=1
	fi
	rm -rf "$DIR"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	exit 1
}
step() { echo "--- [$(($(date +%s) - T0))s] $*"; }

# poll SECONDS CMD...: run CMD every 0.5 s until it succeeds; 1 on timeout.
poll() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.5
	done
}

# netns_env: after `up`, the root credentials in the environment (for
# boto3) and META, the six members' addresses.
netns_env() {
	set -a
	# shellcheck disable=SC1091
	. "$DIR/credentials"
	set +a
	export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
	META=$SUBNET.1:7000
	local i
	for i in $(seq 2 "${1:-6}"); do META=$META,$SUBNET.$i:7000; done
}
admin() { "$B/iolake-admin" --meta "$META" --timeout 3s "$@"; }
ep() { echo "http://$SUBNET.$1:9000"; }
s3() { python3 "$S3PY" "$@"; }
