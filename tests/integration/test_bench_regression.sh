#!/bin/sh
# bench/regression.py end to end, small: the same build as base and head,
# one run each with tiny object counts (hidden test flags), on a tmpfs this
# test mounts itself. It must exit 0 with a permissive threshold and write
# perf.json with every run's figures; exit 1 with a threshold no ratio can
# reach (the decision, not the speed, is what is tested: no timed
# assertion); and refuse work dirs under /dev (also through a symlink) and
# off tmpfs with exit 2 before starting anything.
#
# Needs root (mount -t tmpfs). IOLAKE_BUILD: the build dir.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${IOLAKE_BUILD:-$HERE/../../build}
REG=$HERE/../../bench/regression.py
W=$(mktemp -d /tmp/iolake-bench-test.XXXXXX)
cleanup() {
	umount -l "$W/tmpfs" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
mkdir "$W/tmpfs"
mount -t tmpfs -o size=2g tmpfs "$W/tmpfs"
SMALL="--runs 1 --small-objects 200 --large-objects 6 --osd-size 256M"

echo "== refusals (exit 2, nothing started)"
ln -s /dev/shm "$W/shm-link"
for bad in /dev/shm "$W/shm-link" "$W"; do
	set +e
	"$REG" --base "$BUILD" --head "$BUILD" --workdir "$bad" --out "$W/x.json" 2>"$W/err"
	rc=$?
	set -e
	cat "$W/err"
	[ $rc -eq 2 ] || { echo "FAIL: --workdir $bad: exit $rc, want 2"; exit 1; }
	[ ! -e "$W/x.json" ] || { echo "FAIL: perf.json written for a refused work dir"; exit 1; }
done
grep -q "not tmpfs" "$W/err" || { echo "FAIL: no 'not tmpfs' message for $W"; exit 1; }
set +e
"$REG" --base "$BUILD" --head "$W" --workdir "$W/tmpfs" 2>"$W/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "iolake-aio" "$W/err" || { echo "FAIL: head without binaries: exit $rc"; exit 1; }

echo "== run order: base, head, head, base, ..."
python3 -c "
import sys; sys.path.insert(0, '$(dirname "$REG")')
import regression
assert regression.run_plan(1) == ['base', 'head']
assert regression.run_plan(3) == ['base', 'head', 'head', 'base', 'base', 'head'], regression.run_plan(3)
print('ok')"

echo "== same build as base and head, permissive threshold: exit 0"
"$REG" --base "$BUILD" --head "$BUILD" --workdir "$W/tmpfs" --out "$W/perf.json" \
	--threshold 0.01 $SMALL | tee "$W/table"
python3 - "$W/perf.json" "$W/table" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read()
assert d["pass"] is True and d["threshold"] == 0.01
assert [r["build"] for r in d["runs"]] == ["base", "head"], d["runs"]
cells = ["put_64k", "get_64k", "put_4m", "get_4m"]
for r in d["runs"]:
    for c in cells:
        f = r[c]
        assert f["errors"] == 0 and f["ops_per_s"] > 0 and f["p99_ms"] > 0, (c, f)
    assert r["put_64k"]["ops"] == 200 and r["get_64k"]["ops"] == 800, r
    assert r["put_4m"]["ops"] == 6 and r["get_4m"]["ops"] == 18, r
    assert r["rss_peak_kib"] > 0 and r["load_before"] and r["load_after"]
for c in cells:
    s = d["summary"][c]
    ratio = s["head"]["median_ops_per_s"] / s["base"]["median_ops_per_s"]
    assert abs(s["ratio"] - ratio) < 1e-9 and s["pass"], s
    assert s["base"]["half_range"] == 0  # one run each
for label in ("PUT 64 KiB", "GET 64 KiB", "PUT 4 MiB", "GET 4 MiB"):
    assert "| %s |" % label in table, label
assert "PASS" in table and "FAIL" not in table
print("ok: perf.json has 2 runs x 4 cells and a passing summary")
PY
[ -z "$(ls -A "$W/tmpfs")" ] || { echo "FAIL: runs left data on the work dir"; ls -A "$W/tmpfs"; exit 1; }

echo "== a threshold no ratio reaches: exit 1, every cell marked FAIL"
set +e
"$REG" --base "$BUILD" --head "$BUILD" --workdir "$W/tmpfs" --out "$W/perf2.json" \
	--threshold 1000 $SMALL >"$W/table2"
rc=$?
set -e
cat "$W/table2"
[ $rc -eq 1 ] || { echo "FAIL: exit $rc, want 1"; exit 1; }
[ "$(grep -c 'FAIL' "$W/table2")" -eq 5 ] || { echo "FAIL: want 4 failing cells + verdict"; exit 1; }
python3 -c "import json; d = json.load(open('$W/perf2.json')); assert d['pass'] is False"
echo PASS
