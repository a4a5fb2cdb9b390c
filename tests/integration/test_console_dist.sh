#!/bin/bash
# test_console_dist.sh — the console's committed build (console/dist/) is
# what its sources build, and what the binaries embed:
#
#   - console/src + the pinned console/package-lock.json, built again with
#     `npm ci` and console/build.mjs into a scratch directory (node_modules
#     kept in $IOLAKE_BUILD/console-node for the next run), give the same
#     files, byte for byte, as console/dist (esbuild is deterministic: no
#     hashes, timestamps or source maps);
#   - the generated C table ($IOLAKE_BUILD/gen/console_files.c) is what
#     scripts/embed-console.py makes of console/dist now (so the binaries
#     were built from these files), and the generator refuses a file whose
#     type it does not know.
#
# A change to console/src without `make console` fails here, with the diff
# of file sizes. test_console.py checks the files as served.
set -euo pipefail
export PATH=/usr/bin:/bin
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
B=${IOLAKE_BUILD:?set IOLAKE_BUILD to the build dir}
B=$(cd "$B" && pwd)
W=$(mktemp -d /dev/shm/iolake-console-dist.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}
for t in node npm python3; do
	command -v $t >/dev/null || fail "$t not found (scripts/deps.sh installs nodejs and npm)"
done

# The build tree: sources copied, node_modules reused across runs (npm ci
# only when the lock file changed).
N=$B/console-node
mkdir -p "$N"
if ! cmp -s "$TOP/console/package-lock.json" "$N/package-lock.json" || [ ! -d "$N/node_modules/esbuild" ]; then
	cp "$TOP/console/package.json" "$TOP/console/package-lock.json" "$N/"
	(cd "$N" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) ||
		fail "npm ci of console/package-lock.json"
fi
rm -rf "$N/src"
cp -r "$TOP/console/src" "$TOP/console/build.mjs" "$N/"
(cd "$N" && node build.mjs "$W/dist") || fail "console/build.mjs"

want=$(cd "$TOP/console/dist" && ls | sort)
got=$(cd "$W/dist" && ls | sort)
[ "$want" = "$got" ] || fail "console/dist has [$want], the sources build [$got]"
for f in $want; do
	if ! cmp -s "$TOP/console/dist/$f" "$W/dist/$f"; then
		fail "console/dist/$f ($(stat -c %s "$TOP/console/dist/$f") bytes) is not what console/src builds ($(stat -c %s "$W/dist/$f") bytes): run make console and commit console/dist"
	fi
	echo "ok: console/dist/$f ($(stat -c %s "$W/dist/$f") bytes) is what the sources build"
done

# The embedded table is console/dist as it is now.
(cd "$TOP" && python3 scripts/embed-console.py console/dist "$W/console_files.c")
cmp -s "$W/console_files.c" "$B/gen/console_files.c" ||
	fail "$B/gen/console_files.c is not made from console/dist as it is (rebuild: make)"
echo "ok: the binaries' table is made from console/dist"
grep -q '"app.js", "text/javascript; charset=utf-8", "\\"[0-9a-f]\{20\}\\"", f' "$W/console_files.c" ||
	fail "the table's app.js row: name, type, ETag"
echo "ok: app.js with its type and ETag in the table"

# The generator refuses what it cannot type, and a dist without index.html.
mkdir "$W/bad"
cp "$TOP/console/dist/"* "$W/bad/"
echo x > "$W/bad/notes.md"
if python3 "$TOP/scripts/embed-console.py" "$W/bad" "$W/bad.c" 2>"$W/err"; then
	fail "embed-console.py took a .md file"
fi
grep -q "no content type for '.md'" "$W/err" || fail "embed-console.py's message: $(cat "$W/err")"
rm "$W/bad/notes.md" "$W/bad/index.html"
if python3 "$TOP/scripts/embed-console.py" "$W/bad" "$W/bad.c" 2>"$W/err"; then
	fail "embed-console.py took a dist without index.html"
fi
echo "ok: embed-console.py refuses an unknown type and a missing index.html"
echo PASS
