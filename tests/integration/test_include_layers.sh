#!/bin/sh
# test_include_layers.sh — the layering between services (issue 14):
# tests/tools/include-layers finds no include of another service's
# internals (common/ knows no service; osd/ and gateway/ use meta only
# through meta/client.h, meta/mapwatch.h and meta/rootkey.h; iolake-admin,
# in meta/, uses the OSD only through osd/client.h; a public header pulls
# in nothing private), and no file in gateway/ is over 800 lines.
#
# Also checks the tool can fail: a planted include of an internal header,
# and a public header that leaks a private one, must each be reported.
set -u
export PATH=/usr/bin:/bin:$PATH
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TOOL=$TOP/tests/tools/include-layers
fail() {
	echo "FAIL: $*"
	exit 1
}
command -v python3 >/dev/null 2>&1 || { echo "SKIP test_include_layers: no python3"; exit 0; }

W=$(mktemp -d /tmp/iolake-layers.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/svc" "$W/lib" "$W/other"
printf 'svc: lib/ other/pub.h\nlib: \n' >"$W/rules"
printf '#include "other/pub.h"\n#include "lib/x.h"\n#include "svc/own.h"\n' >"$W/svc/ok.c"
: >"$W/svc/own.h"; : >"$W/lib/x.h"; : >"$W/other/priv.h"
printf '#include "other/priv.h"\n' >"$W/other/pub.h"
out=$(cd "$W" && "$TOOL" --rules rules 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "a public header including a private one: exit $rc, want 1 ($out)"
echo "$out" | grep -q 'other/pub.h:1: a public header includes other/priv.h' ||
	fail "the leaking public header is not named: $out"
echo "ok   a public header that leaks a private one is found"
: >"$W/other/pub.h"
printf '#include "other/priv.h"\n' >"$W/svc/bad.c"
out=$(cd "$W" && "$TOOL" --rules rules 2>&1)
rc=$?
[ "$rc" -eq 1 ] || fail "an include of an internal header: exit $rc, want 1 ($out)"
echo "$out" | grep -q 'svc/bad.c:1: includes other/priv.h' || fail "the violation is not named: $out"
echo "$out" | grep -q 'svc/ok.c' && fail "an allowed include was reported: $out"
echo "ok   an include of another service's internal header is found"

cd "$TOP" || fail "no tree at $TOP"
"$TOOL" || fail "a service includes another's internals"
echo "ok   the tree: no service includes another's internals"

big=$(wc -l gateway/*.c gateway/*.h | awk '$2 != "total" && $1 > 800 { print $2 " (" $1 " lines)" }')
[ -z "$big" ] || fail "gateway/ files over 800 lines: $big"
echo "ok   no file in gateway/ is over 800 lines"
echo "PASS test_include_layers"
