#!/bin/sh
# iolake-s3-bench against a real HTTP server: nginx from Debian on
# 127.0.0.1, with WebDAV PUT/DELETE so PUT stores files under /dev/shm and
# GET serves them with sendfile (nginx ignores Authorization). The bench
# must PUT then GET (--verify) 200 objects of 64 KiB at 16 in flight with
# 0 errors and the right op counts; then, against a port nobody listens
# on, it must report connect errors and exit non-zero.
#
# Needs nginx (scripts/deps.sh installs it). IOLAKE_BUILD: the build dir.
set -eu
BUILD=${IOLAKE_BUILD:-$(cd "$(dirname "$0")/../.." && pwd)/build}
BENCH=$BUILD/iolake-s3-bench
[ -x "$BENCH" ] || { echo "no $BENCH: run make"; exit 1; }

. "$(dirname "$0")/nginx_dav.sh"
WORK=$(mktemp -d /dev/shm/s3bench-nginx.XXXXXX)
cleanup() {
	nginx_dav_stop "$WORK"
	[ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
nginx_dav_start "$WORK"
PORT=$NGINX_PORT

echo "== PUT + GET --verify against nginx on :$PORT"
"$BENCH" --endpoint "http://127.0.0.1:$PORT" --access-key AKIAIOSFODNN7EXAMPLE \
	--secret-key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY --bucket bench --no-create-bucket \
	--size 64KiB --objects 200 --concurrency 16 --gets 2 --verify --warmup-ops 32 \
	--delete --json "$WORK/ok.json" --latency-log "$WORK/lat.txt"
python3 - "$WORK/ok.json" "$WORK/lat.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in d["phases"]}
assert d["errors_total"] == 0, d["errors_total"]
assert d["config"]["concurrency"] == 16 and d["config"]["size_bytes"] == 65536
assert ph["warmup"]["ops"] == 32 and not ph["warmup"]["measured"]
assert ph["put"]["ops"] == 200 and ph["put"]["errors"] == 0, ph["put"]
assert ph["put"]["bytes"] == 200 * 65536
assert ph["get"]["ops"] == 400 and ph["get"]["errors"] == 0, ph["get"]
assert ph["get"]["bytes"] == 400 * 65536
assert ph["delete"]["ops"] == 200 and ph["delete"]["errors"] == 0
for n in ("put", "get", "delete"):
    lat = ph[n]["latency_us"]
    assert lat["count"] == ph[n]["ops"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"], lat
    assert ph[n]["ops_per_s"] > 0
assert d["connections"]["opened"] <= 16 + d["connections"]["stale_retries"], d["connections"]
# --latency-log: a header naming offset 0's wall clock, then one line per
# measured request (not the warm-up), in the phases' order, whose
# latencies give the JSON's percentiles (within the histogram's 0.79 %)
log = open(sys.argv[2]).read().splitlines()
assert log[0].startswith("# iolake-s3-bench latency log: offset 0 = "), log[0]
t0 = float(log[0].split("= ")[1].split()[0])
assert abs(t0 - d["started_ms"] / 1e3) < 5, (t0, d["started_ms"])
rows = [l.split() for l in log[2:]]
assert [r[2] for r in rows] == ["put"] * 200 + ["get"] * 400 + ["delete"] * 200, len(rows)
assert all(r[3] == "ok" for r in rows)
for n in ("put", "get", "delete"):
    lat = sorted(int(r[1]) for r in rows if r[2] == n)
    p50 = ph[n]["latency_us"]["p50"]
    want = lat[(len(lat) + 1) // 2 - 1]
    assert want <= p50 + 1 and p50 <= want * 1.008 + 1, (n, want, p50)
    assert int(rows[[r[2] for r in rows].index(n)][0]) >= 0
starts = [int(r[0]) for r in rows]
assert starts[200] >= max(starts[:200]), "GETs start after every PUT was sent"
print("ok: put 200, get 400 verified, delete 200, 0 errors; latency log of 800 lines")
PY
# the DELETE phase removed every object
left=$(find "$WORK/root" -type f | wc -l)
[ "$left" -eq 0 ] || { echo "$left files left after --delete"; exit 1; }

echo "== --verify catches bodies that differ from what was PUT"
# /corrupt/ accepts PUTs and drops them, and serves prepared files: one of
# the right size with other bytes, one short, two missing.
B=$WORK/bad/corrupt/s3bench  # served by nginx_dav.sh's /corrupt/
mkdir -p "$B"
head -c 4096 /dev/urandom >"$B/00000000"
head -c 100 /dev/urandom >"$B/00000001"
set +e
"$BENCH" --endpoint "http://127.0.0.1:$PORT" --access-key AK --secret-key SK --bucket corrupt \
	--no-create-bucket --size 4KiB --objects 4 --concurrency 1 --gets 1 --warmup 0 \
	--get-order sequential --verify --json "$WORK/bad.json"
rc=$?
set -e
[ $rc -eq 1 ] || { echo "expected exit 1 with corrupt bodies, got $rc"; exit 1; }
python3 - "$WORK/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in d["phases"]}
assert ph["put"]["errors"] == 0 and ph["put"]["ops"] == 4
g = ph["get"]
assert g["ops"] == 4 and g["errors"] == 4, g
assert g["errors_by_kind"]["body"] == 2 and g["errors_by_kind"]["http_4xx"] == 2, g
assert g["first_error"].startswith("GET object 0: body"), g["first_error"]  # sequential, one in flight
print("ok: 2 bad bodies and 2 missing objects reported")
PY

echo "== a port nobody listens on: connect errors, exit non-zero"
DEAD=$(nginx_free_port)
set +e
"$BENCH" --endpoint "http://127.0.0.1:$DEAD" --access-key AK --secret-key SK --bucket bench \
	--no-create-bucket --size 4KiB --objects 50 --concurrency 8 --gets 1 --warmup 0 \
	--json "$WORK/dead.json"
rc=$?
set -e
[ $rc -ne 0 ] || { echo "expected a non-zero exit against a dead port"; exit 1; }
python3 - "$WORK/dead.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ph = {p["name"]: p for p in d["phases"]}
put = ph["put"]
assert put["ops"] == 50 and put["errors"] == 50, put
assert put["errors_by_kind"]["connect"] == 50, put["errors_by_kind"]
assert "ECONNREFUSED" in put["first_error"], put["first_error"]
assert "get" not in ph  # nothing was written, so nothing to read
assert d["errors_total"] == 50
print("ok: 50 connect errors reported, exit non-zero")
PY
echo "PASS"
