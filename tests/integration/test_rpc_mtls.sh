#!/bin/bash
# test_rpc_mtls.sh — mutual TLS on every RPC port of a small cluster on
# 127.0.0.1: three iolake-meta members, three iolake-osd (EC 2+1) and one
# iolake-gw, each started with --rpc-tls-ca/--rpc-tls-cert/--rpc-tls-key
# from a CA made by `iolake-admin ca init` / `ca issue`.
#
# Shows:
#   - the cluster forms over mTLS: a leader, the three OSDs up in the map
#     (OSD -> meta), the gateway ready (gateway -> meta), and aws-cli PUT /
#     GET / list through the gateway (gateway -> OSDs); iolake-admin with
#     its own certificate reads cluster status;
#   - refused: a plaintext h2c client (`curl --http2-prior-knowledge`) on
#     meta's port and on an OSD's; iolake-admin without TLS flags, and
#     with a certificate from another CA; each refusal is logged by meta
#     ("rpc-tls: refused ...") and counted on its /metrics
#     (iolake_rpc_tls_refused{reason="plaintext"|"handshake"});
#   - a service given only some of the three flags exits 2 naming them;
#   - SIGHUP reloads meta's certificate (a new one from the same CA; the
#     reload is logged) and the cluster still serves.
# Every process is killed by PID at exit; data on /dev/shm.
set -u
PATH=/usr/bin:/bin:$PATH
. "$(dirname "$0")/meta_lib.sh"
meta_lib_init rpcmtls 6
T0=$(date +%s.%N)
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2),$(addr 3)"
CA=$DIR/ca
tls() { echo "--rpc-tls-ca $CA/ca.pem --rpc-tls-cert $DIR/$1.pem --rpc-tls-key $DIR/$1.key"; }
export IOLAKE_ROOT_ACCESS_KEY=MTLSROOTKEY000000001
export IOLAKE_ROOT_SECRET_KEY=mtls-root-secret-0123456789abcdefghijklm

# ---------------------------------------------------------------- the CA
"$B/iolake-admin" ca init --dir "$CA" >/dev/null || fail "ca init"
[ "$(stat -c %a "$CA/ca.key")" = 600 ] || fail "ca.key is not mode 0600"
for n in m1 m2 m3 o1 o2 o3 gw admin; do
	"$B/iolake-admin" ca issue --dir "$CA" --name "$n" --ip 127.0.0.1 --days 1 \
		--out "$DIR/$n" >/dev/null || fail "ca issue $n"
done
[ "$(stat -c %a "$DIR/gw.key")" = 600 ] || fail "a node key is not mode 0600"
"$B/iolake-admin" ca init --dir "$DIR/ca2" >/dev/null || fail "ca init (the other CA)"
"$B/iolake-admin" ca issue --dir "$DIR/ca2" --name stranger --ip 127.0.0.1 \
	--out "$DIR/stranger" >/dev/null || fail "ca issue (the other CA)"
echo "ok   CA and 8 certificates made"

# Some of the three flags only: exit 2, naming them.
"$B/iolake-meta" --id 1 --data-dir "$DIR/bad" --listen "$(addr 1)" --peers "$PEERS" \
	--rpc-tls-ca "$CA/ca.pem" >"$DIR/bad.out" 2>&1
rc=$?
{ [ "$rc" = 2 ] && grep -q -- "--rpc-tls-ca, --rpc-tls-cert and --rpc-tls-key go together" \
	"$DIR/bad.out"; } || fail "meta with --rpc-tls-ca alone: exit $rc: $(cat "$DIR/bad.out")"
echo "ok   a partial set of --rpc-tls-* flags exits 2"

# ---------------------------------------------------------------- the cluster
MPORT=$((BASE + 6))
start_meta() {
	local extra=()
	[ "$1" = 1 ] && extra=(--metrics-listen "127.0.0.1:$MPORT")
	# shellcheck disable=SC2046  # tls: a flag list
	"$B/iolake-meta" --id "$1" --data-dir "$DIR/meta$1" --listen "$(addr "$1")" --peers "$PEERS" \
		--election-timeout 500ms --ec 2+1 $(tls "m$1") "${extra[@]}" >>"$DIR/log-meta$1" 2>&1 &
	PID["meta$1"]=$!
}
for i in 1 2 3; do start_meta $i; done
for i in 1 2 3; do
	# shellcheck disable=SC2046
	"$B/iolake-osd" --id "$i" --device "$DIR/osd$i.dev" --size 64M --meta-dir "$DIR/osd$i.idx" \
		--listen 127.0.0.1:0 --meta "$META" --host "h$i" --format $(tls "o$i") \
		>>"$DIR/log-osd$i" 2>&1 &
	PID["osd$i"]=$!
done
GWPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# shellcheck disable=SC2046
"$B/iolake-gw" --s3-listen "127.0.0.1:$GWPORT" --meta "$META" --ec 2+1 --rate-per-addr 0 \
	$(tls gw) >>"$DIR/log-gw" 2>&1 &
PID["gw"]=$!

# shellcheck disable=SC2046
admin() { "$B/iolake-admin" $(tls admin) --meta "$META" --timeout 5s "$@"; }
up=""
for _ in $(seq 150); do
	n=$(admin --json osd ls 2>/dev/null | python3 -c '
import json,sys
d=json.load(sys.stdin)
print(sum(1 for o in d.get("osds", []) if o.get("up")))' 2>/dev/null)
	[ "${n:-0}" = 3 ] && { up=1; break; }
	sleep 0.2
done
[ -n "$up" ] || fail "three OSDs not up in the map over mTLS within 30 s"
admin cluster status >"$DIR/status" || fail "iolake-admin cluster status over mTLS"
grep -q ' leader ' "$DIR/status" || fail "no leader in cluster status"
echo "ok   meta leader and 3 OSDs up over mTLS ($(python3 -c "print(round($(date +%s.%N)-$T0,1))") s)"
for _ in $(seq 150); do
	curl -sf "http://127.0.0.1:$GWPORT/health/ready" >/dev/null && break
	sleep 0.2
done
curl -sf "http://127.0.0.1:$GWPORT/health/ready" >/dev/null || fail "gateway not ready"

# ---------------------------------------------------------------- S3 through it
export AWS_ACCESS_KEY_ID=$IOLAKE_ROOT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$IOLAKE_ROOT_SECRET_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
aws_() { aws --endpoint-url "http://127.0.0.1:$GWPORT" "$@"; }
ok=""
for _ in $(seq 50); do
	aws_ s3 mb s3://mtls >/dev/null 2>"$DIR/mb.err" && { ok=1; break; }
	sleep 0.2
done
[ -n "$ok" ] || fail "aws s3 mb: $(cat "$DIR/mb.err")"
head -c 300000 /dev/urandom >"$DIR/obj"
aws_ s3 cp "$DIR/obj" s3://mtls/a/obj >/dev/null || fail "aws s3 cp (PUT)"
aws_ s3 cp s3://mtls/a/obj "$DIR/obj.back" >/dev/null || fail "aws s3 cp (GET)"
cmp -s "$DIR/obj" "$DIR/obj.back" || fail "GET returned other bytes"
aws_ s3 ls s3://mtls/a/ | grep -q ' 300000 obj$' || fail "aws s3 ls"
echo "ok   aws-cli PUT / GET / ls of 300 KB through the gateway, every RPC over mTLS"

# ---------------------------------------------------------------- refusals
metric() { # NAME REASON: the value on meta 1's /metrics
	curl -sf "http://127.0.0.1:$MPORT/metrics" |
		sed -n "s/^$1{reason=\"$2\"} \([0-9.e+]*\)$/\1/p" | head -1
}
p0=$(metric iolake_rpc_tls_refused plaintext)
h0=$(metric iolake_rpc_tls_refused handshake)
{ [ -n "$p0" ] && [ -n "$h0" ]; } || fail "iolake_rpc_tls_refused not on meta's /metrics"
out=$(curl -s -m 5 --http2-prior-knowledge -X POST -H 'content-type: application/grpc' \
	"http://$(addr 1)/iolake.meta.Meta/GetMap" -o /dev/null -w '%{http_code}' 2>&1)
rc=$?
[ "$rc" != 0 ] || [ "$out" = 000 ] || fail "plaintext h2c to meta answered: HTTP $out"
echo "ok   plaintext curl --http2-prior-knowledge to meta refused (curl exit $rc, HTTP ${out:-none})"
OSD1=$(sed -n 's/.*msg="\{0,1\}listening"\{0,1\} .* port=\([0-9]*\).*/\1/p' "$DIR/log-osd1" | head -1)
[ -n "$OSD1" ] || fail "OSD 1 logged no port"
out=$(curl -s -m 5 --http2-prior-knowledge -X POST "http://127.0.0.1:$OSD1/x/y" -o /dev/null \
	-w '%{http_code}' 2>&1)
rc=$?
[ "$rc" != 0 ] || [ "$out" = 000 ] || fail "plaintext h2c to the OSD answered: HTTP $out"
echo "ok   plaintext curl --http2-prior-knowledge to OSD 1 (:$OSD1) refused (curl exit $rc)"
"$B/iolake-admin" --meta "$(addr 1)" --timeout 2s cluster status >"$DIR/plain.out" 2>&1 &&
	fail "iolake-admin without TLS flags was answered"
# shellcheck disable=SC2046
"$B/iolake-admin" --rpc-tls-ca "$CA/ca.pem" --rpc-tls-cert "$DIR/stranger.pem" \
	--rpc-tls-key "$DIR/stranger.key" --meta "$(addr 1)" --timeout 2s cluster status \
	>"$DIR/stranger.out" 2>&1 && fail "iolake-admin with another CA's certificate was answered"
echo "ok   iolake-admin refused without TLS and with another CA's certificate"
sleep 1.1 # the refusal log prints at most one line a second per reason
p1=$(metric iolake_rpc_tls_refused plaintext)
h1=$(metric iolake_rpc_tls_refused handshake)
python3 -c "import sys; sys.exit(0 if float('$p1') >= float('$p0') + 2 else 1)" ||
	fail "plaintext refusals not counted on meta 1: $p0 -> $p1"
python3 -c "import sys; sys.exit(0 if float('$h1') >= float('$h0') + 1 else 1)" ||
	fail "handshake refusals not counted on meta 1: $h0 -> $h1"
grep -q 'rpc-tls: refused a plaintext connection' "$DIR/log-meta1" || fail "no plaintext refusal log line"
grep -q 'rpc-tls: refused a connection: TLS handshake failed' "$DIR/log-meta1" ||
	fail "no handshake refusal log line"
echo "ok   refusals counted (plaintext $p0 -> $p1, handshake $h0 -> $h1) and logged:"
grep -m1 'rpc-tls: refused a plaintext' "$DIR/log-meta1" | cut -c1-200
grep -m1 'rpc-tls: refused a connection' "$DIR/log-meta1" | cut -c1-240

# ---------------------------------------------------------------- SIGHUP
"$B/iolake-admin" ca issue --dir "$CA" --name m1-renewed --ip 127.0.0.1 --out "$DIR/m1" >/dev/null ||
	fail "ca issue (renewal)"
kill -HUP "${PID["meta1"]}"
for _ in $(seq 50); do
	grep -q 'rpc-tls: certificate reloaded' "$DIR/log-meta1" && break
	sleep 0.1
done
grep -q 'rpc-tls: certificate reloaded' "$DIR/log-meta1" || fail "SIGHUP: no reload logged"
# shellcheck disable=SC2046
"$B/iolake-admin" $(tls admin) --meta "$(addr 1)" --timeout 5s cluster status >/dev/null ||
	fail "meta 1 not answering after the reload"
aws_ s3 cp s3://mtls/a/obj - 2>/dev/null | cmp -s - "$DIR/obj" || fail "GET after the reload"
echo "ok   SIGHUP reloaded meta 1's certificate; the cluster still serves"
echo "PASS test_rpc_mtls ($(python3 -c "print(round($(date +%s.%N)-$T0,1))") s)"
