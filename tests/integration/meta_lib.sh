# meta_lib.sh — sourced by the tests that run iolake-meta processes (and
# others) on 127.0.0.1: the build dir, a /dev/shm work dir and every PID
# recorded in PID[], all removed or killed at exit, a free block of ports,
# member addresses, and fail().
#
#   . ./meta_lib.sh
#   meta_lib_init TAG NPORTS    # DIR, BASE (NPORTS free ports from BASE)
#   META_LIB_ON_EXIT='...'      # optional: a test's own cleanup, run first
#   addr ID                     # member ID's RPC address (Raft on port + 1)
B=${IOLAKE_BUILD:?set IOLAKE_BUILD to the build dir}
B=$(cd "$B" && pwd)
declare -A PID
META_LIB_ON_EXIT=:
DIR=

meta_lib_cleanup() {
	eval "$META_LIB_ON_EXIT"
	for i in "${!PID[@]}"; do kill -9 "${PID[$i]}" 2>/dev/null; done
	wait 2>/dev/null
	[ -z "$DIR" ] || rm -rf "$DIR"
}

meta_lib_init() {
	DIR=$(mktemp -d "/dev/shm/iolake-$1-XXXXXX")
	trap meta_lib_cleanup EXIT
	# Below the kernel's ephemeral range: a member's outgoing connections
	# never take a port of the block (free_port.py; a member started later
	# once failed "Address already in use").
	BASE=$(python3 "$(dirname "${BASH_SOURCE[0]}")/free_port.py" "$2")
	[ -n "$BASE" ] || { echo "FAIL: no block of $2 free ports"; exit 1; }
}

fail() { echo "FAIL: $*"; for f in "$DIR"/log*; do echo "== $f"; tail -20 "$f"; done; exit 1; }

addr() { echo "127.0.0.1:$((BASE + 2 * ($1 - 1)))"; }
