#!/bin/sh
# test_include_cycles.sh — no include cycle among the modules of gateway/
# and osd/store/ (tests/tools/include-cycles: foo.c, foo.h and foo_int.h
# are one module; an edge is a file of one module including a header of
# another). A cycle there is two modules calling each other, which the
# layering of those directories forbids (see docs/architecture.md).
#
# Also checks that the tool can fail: a scratch directory whose two
# modules include each other must be reported (exit 1, the cycle named).
# Needs python3 (Debian's); without it: SKIP.
set -u
export PATH=/usr/bin:/bin:$PATH
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TOOL=$TOP/tests/tools/include-cycles
fail() {
	echo "FAIL: $*"
	exit 1
}
command -v python3 >/dev/null 2>&1 || { echo "SKIP test_include_cycles: no python3"; exit 0; }

W=$(mktemp -d /tmp/iolake-incl.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir "$W/d"
printf '#include "d/b.h"\n' >"$W/d/a.c"
printf '#include "d/b_int.h"\n' >"$W/d/a.h"
printf '#include "d/a.h"\n' >"$W/d/b_int.h"
printf '#include "d/b.h"\n' >"$W/d/b.c"
: >"$W/d/b.h"
out=$(cd "$W" && "$TOOL" d 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "a cycle a -> b -> a: exit $rc, want 1 ($out)"
echo "$out" | grep -q 'cycle in d: a -> b -> a' || fail "the cycle is not named: $out"
echo "ok   a planted cycle is found"

cd "$TOP" || fail "no tree at $TOP"
for d in gateway osd/store; do
	out=$("$TOOL" "$d" 2>&1)
	rc=$?
	echo "$out"
	[ "$rc" -eq 0 ] || fail "$d has an include cycle"
	echo "ok   $d: no include cycle"
done
echo "PASS test_include_cycles"
