#!/bin/bash
# test_rpc_mtls.sh — mutual TLS on every RPC port of a small cluster on
# 127.0.0.1: three iolake-meta members, three iolake-osd (EC 2+1) and one
# iolake-gw, each started with --rpc-tls-ca/--rpc-tls-cert/--rpc-tls-key
# from a CA made by `iolake-admin ca init` / `ca issue`.
#
# Shows (about 30 s on a quiet machine):
#   - the cluster forms over mTLS: a leader, the three OSDs up in the map
#     (OSD -> meta), the gateway ready (gateway -> meta), and aws-cli PUT /
#     GET / list through the gateway (gateway -> OSDs); iolake-admin with
#     its own certificate reads cluster status;
#   - refused: a plaintext h2c client (`curl --http2-prior-knowledge`) on
#     meta's port and on an OSD's; iolake-admin without TLS flags, and
#     with a certificate from another CA; each refusal is logged by meta
#     ("rpc-tls: refused ...") and counted on its /metrics
#     (iolake_rpc_tls_refused{reason="plaintext"|"handshake"});
#   - the native protocol on the gateway (--native-listen, two loops):
#     `iolake` with a user-role certificate puts and gets over mTLS; a
#     client without TLS is refused;
#   - a service given only some of the three flags exits 2 naming them;
#   - SIGHUP reloads meta's certificate (a new one from the same CA; the
#     reload is logged) and the cluster still serves.
#   - Raft over mutual TLS (issue 16): the members elect and replicate with
#     TLS on their Raft port (handshakes on /metrics, the start line says
#     "RPC and Raft"); the Raft port refuses a plaintext mux preamble
#     (iolake_raft_tls_refused{reason="plaintext"}); member 3 restarted
#     without TLS does not get in (refused both ways) and rejoins with it;
#   - roles (issue 16): every certificate names its role (and node id); an
#     OSD's certificate calling meta's ListUsers is refused
#     (PERMISSION_DENIED, logged "rpc-authz: call refused by role"); an
#     OSD started as id 4 with OSD 1's certificate never registers;
#   - revocation: the gateway's and member 3's certificates revoked with
#     `ca revoke` (another CA's refused), members 1 and 2 SIGHUPed: they
#     drop member 3's open Raft connections (reason=revoked) and the
#     gateway's RPC connections; a signed GET through the gateway fails;
#   - with IOLAKE_BUILD=build-asan: no sanitizer report in any log.
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
# The metas also read the revocation list (SIGHUP reloads it).
mtls() { echo "$(tls "$1") --rpc-tls-crl $DIR/crl.pem"; }
export IOLAKE_ROOT_ACCESS_KEY=MTLSROOTKEY000000001
export IOLAKE_ROOT_SECRET_KEY=mtls-root-secret-0123456789abcdefghijklm

# ---------------------------------------------------------------- the CA
"$B/iolake-admin" ca init --dir "$CA" >/dev/null || fail "ca init"
[ "$(stat -c %a "$CA/ca.key")" = 600 ] || fail "ca.key is not mode 0600"
issue() { # NAME ROLE [NODE]
	local node=()
	[ -n "${3:-}" ] && node=(--node "$3")
	"$B/iolake-admin" ca issue --dir "$CA" --name "$1" --role "$2" "${node[@]}" --ip 127.0.0.1 \
		--days 1 --out "$DIR/$1" >/dev/null || fail "ca issue $1"
}
for i in 1 2 3; do issue "m$i" meta "$i"; issue "o$i" osd "$i"; done
issue gw gw
issue admin admin
[ "$(stat -c %a "$DIR/gw.key")" = 600 ] || fail "a node key is not mode 0600"
"$B/iolake-admin" ca issue --dir "$CA" --name noid --role osd --ip 127.0.0.1 --out "$DIR/noid" \
	>/dev/null 2>"$DIR/noid.err" && fail "ca issue --role osd without --node was accepted"
"$B/iolake-admin" ca issue --dir "$CA" --name norole --ip 127.0.0.1 --out "$DIR/norole" \
	>/dev/null 2>&1 && fail "ca issue without --role was accepted"
"$B/iolake-admin" ca crl --dir "$CA" --out "$DIR/crl.pem" >/dev/null || fail "ca crl"
"$B/iolake-admin" ca init --dir "$DIR/ca2" >/dev/null || fail "ca init (the other CA)"
"$B/iolake-admin" ca issue --dir "$DIR/ca2" --name stranger --role admin --ip 127.0.0.1 \
	--out "$DIR/stranger" >/dev/null || fail "ca issue (the other CA)"
openssl x509 -in "$DIR/o2.pem" -noout -ext subjectAltName | grep -q 'URI:iolake:role:osd, URI:iolake:node:2' ||
	fail "o2.pem lacks its role and node URIs: $(openssl x509 -in "$DIR/o2.pem" -noout -ext subjectAltName)"
echo "ok   CA, 10 certificates with roles (iolake:role:R, iolake:node:N), an empty CRL"

# Some of the three flags only: exit 2, naming them.
"$B/iolake-meta" --id 1 --data-dir "$DIR/bad" --listen "$(addr 1)" --peers "$PEERS" \
	--rpc-tls-ca "$CA/ca.pem" >"$DIR/bad.out" 2>&1
rc=$?
{ [ "$rc" = 2 ] && grep -q -- "--rpc-tls-ca, --rpc-tls-cert and --rpc-tls-key go together" \
	"$DIR/bad.out"; } || fail "meta with --rpc-tls-ca alone: exit $rc: $(cat "$DIR/bad.out")"
echo "ok   a partial set of --rpc-tls-* flags exits 2"

# ---------------------------------------------------------------- the cluster
MPORT=$((BASE + 6))
MPORT3=$((BASE + 7))
start_meta() {
	local extra=()
	[ "$1" = 1 ] && extra=(--metrics-listen "127.0.0.1:$MPORT")
	[ "$1" = 3 ] && extra=(--metrics-listen "127.0.0.1:$MPORT3")
	# shellcheck disable=SC2046  # tls: a flag list
	"$B/iolake-meta" --id "$1" --data-dir "$DIR/meta$1" --listen "$(addr "$1")" --peers "$PEERS" \
		--election-timeout 500ms --ec 2+1 $(mtls "m$1") "${extra[@]}" "${@:2}" >>"$DIR/log-meta$1" 2>&1 &
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
GWPORT=$(python3 "$(dirname "$0")/free_port.py")
# shellcheck disable=SC2046
# No root credentials for the gateway: meta makes sure of them (a gateway
# doing it needs the admin role too: docs/security.md).
NPORT=$(python3 "$(dirname "$0")/free_port.py")
env -u IOLAKE_ROOT_ACCESS_KEY -u IOLAKE_ROOT_SECRET_KEY "$B/iolake-gw" --s3-listen "127.0.0.1:$GWPORT" --meta "$META" --ec 2+1 \
	--gw-loops 2 --native-listen "127.0.0.1:$NPORT" $(tls gw) >>"$DIR/log-gw" 2>&1 &
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
	code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GWPORT/health/ready")
	[ "$code" = 200 ] && break
	sleep 0.2
done
[ "$code" = 200 ] ||
	fail "gateway not ready (it answered $code; 000: nothing in 5 s); its connections per loop and map: $(curl -s --max-time 5 \
		"http://127.0.0.1:$GWPORT/metrics" | grep -E '^iolake_gw_(loop_connections_total|map_epoch|loops_ready)')"

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

# ---------------------------------------------------------------- the native protocol
# Its port takes the gateway's mutual TLS too, on both loops (gateway/
# native_loops.c hands connections over before any TLS): a client with a
# user-role certificate puts and gets; one without TLS is refused.
issue alice user
nat() {
	"$B/iolake" --endpoint "127.0.0.1:$NPORT" --access-key "$IOLAKE_ROOT_ACCESS_KEY" \
		--secret-key "$IOLAKE_ROOT_SECRET_KEY" "$@"
}
natls() { nat --tls-ca "$CA/ca.pem" --tls-cert "$DIR/alice.pem" --tls-key "$DIR/alice.key" "$@"; }
npids=()
for i in 1 2 3 4; do
	natls put "mtls/n/obj$i" "$DIR/obj" >"$DIR/nat$i.out" 2>&1 &
	npids+=($!)
done
for i in 1 2 3 4; do
	wait "${npids[$((i - 1))]}" || fail "iolake put over mTLS: $(cat "$DIR/nat$i.out")"
done
for i in 1 2 3 4; do
	natls get "mtls/n/obj$i" "$DIR/nat$i.back" >/dev/null 2>&1 || fail "iolake get obj$i over mTLS"
	cmp -s "$DIR/obj" "$DIR/nat$i.back" || fail "iolake get obj$i returned other bytes"
done
nat get mtls/n/obj1 - >/dev/null 2>"$DIR/nat.plain" && fail "a native call without TLS was answered"
per_loop=$(curl -sf "http://127.0.0.1:$GWPORT/metrics" |
	sed -n 's/^iolake_gw_native_loop_connections_total{loop="\([0-9]\)"} \([0-9.e+]*\)$/\1:\2/p' | tr '\n' ' ')
[ -n "$per_loop" ] || fail "no iolake_gw_native_loop_connections_total on the gateway's /metrics"
echo "ok   native put x4 / get x4 of 300 KB over mTLS (a user-role certificate), refused without TLS; connections per loop: $per_loop"

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
"$B/iolake-admin" ca issue --dir "$CA" --name m1-renewed --role meta --node 1 --ip 127.0.0.1 \
	--out "$DIR/m1" >/dev/null ||
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

# ---------------------------------------------------------------- Raft over TLS
mval() { # PORT NAME LABELS: a value on that /metrics (labels as k="v")
	curl -sf "http://127.0.0.1:$1/metrics" | sed -n "s/^$2{$3} \([0-9.e+]*\)$/\1/p" | head -1
}
ge() { python3 -c "import sys; sys.exit(0 if float('${1:-0}') >= float('${2:-0}') else 1)"; }
grep -q 'rpc-tls: mutual TLS on RPC and Raft' "$DIR/log-meta1" || fail "meta 1 did not log TLS on Raft"
rs0=$(mval "$MPORT" iolake_raft_tls_handshakes 'side="server"')
rc0=$(mval "$MPORT" iolake_raft_tls_handshakes 'side="client"')
{ ge "$rs0" 1 && ge "$rc0" 1; } || fail "meta 1: Raft TLS handshakes server=$rs0 client=$rc0"
echo "ok   Raft over mutual TLS: meta 1 handshakes server=$rs0 client=$rc0; the cluster elected and replicated above"
RAFT1=$(( BASE + 1 ))   # member 1's Raft port: RPC port + 1
pt0=$(mval "$MPORT" iolake_raft_tls_refused 'reason="plaintext"')
python3 - "$RAFT1" <<'PY' || fail "the Raft port answered a plaintext preamble"
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
addr = b"127.0.0.1:1\0".ljust(16, b"\0")
s.sendall(b"IOLRMUX1" + struct.pack("<QQQQ", 0, 1, 9, len(addr)) + addr + b"\0" * 64)
try:
    data = s.recv(100)
except (ConnectionResetError, socket.timeout):
    data = b""
sys.exit(0 if data == b"" else 1)
PY
sleep 0.2
pt1=$(mval "$MPORT" iolake_raft_tls_refused 'reason="plaintext"')
ge "$pt1" "$(python3 -c "print(float('${pt0:-0}') + 1)")" ||
	fail "plaintext Raft preamble not counted: $pt0 -> $pt1"
grep -q 'raft-tls: refused a Raft connection.*reason=plaintext' "$DIR/log-meta1" ||
	fail "no raft-tls plaintext refusal logged"
echo "ok   member 1's Raft port closed a plaintext mux preamble (iolake_raft_tls_refused{reason=\"plaintext\"} $pt0 -> $pt1)"

# Member 3 restarted without TLS: refused both ways, never reaches the
# others; back with TLS it rejoins.
kill "${PID[meta3]}"; wait "${PID[meta3]}" 2>/dev/null
"$B/iolake-meta" --id 3 --data-dir "$DIR/meta3" --listen "$(addr 3)" --peers "$PEERS" \
	--election-timeout 500ms --ec 2+1 >>"$DIR/log-meta3-plain" 2>&1 &
PID[meta3]=$!
for _ in $(seq 50); do
	grep -q 'raft mux refused a connection.*reason=bad_magic' "$DIR/log-meta3-plain" && break
	sleep 0.1
done
grep -q 'raft mux refused a connection.*reason=bad_magic' "$DIR/log-meta3-plain" ||
	fail "plaintext member 3 did not refuse its TLS peers: $(tail -5 "$DIR/log-meta3-plain")"
sleep 1
pt2=$(mval "$MPORT" iolake_raft_tls_refused 'reason="plaintext"')
ge "$pt2" "$(python3 -c "print(float('$pt1') + 1)")" ||
	fail "meta 1 did not refuse plaintext member 3: $pt1 -> $pt2"
kill "${PID[meta3]}"; wait "${PID[meta3]}" 2>/dev/null
start_meta 3
for _ in $(seq 100); do
	s3=$(mval "$MPORT3" iolake_raft_tls_handshakes 'side="server"')
	c3=$(mval "$MPORT3" iolake_raft_tls_handshakes 'side="client"')
	{ ge "$s3" 1 && ge "$c3" 1; } && break
	sleep 0.1
done
{ ge "$s3" 1 && ge "$c3" 1; } || fail "member 3 back with TLS: Raft handshakes server=$s3 client=$c3"
echo "ok   member 3 without TLS: refused both ways (meta 1 plaintext $pt1 -> $pt2; member 3 logs bad_magic); with TLS again it is back in (its Raft handshakes server=$s3 client=$c3)"

# ---------------------------------------------------------------- roles
admin user ls >/dev/null || fail "iolake-admin (role admin) user ls"
# shellcheck disable=SC2046
"$B/iolake-admin" $(tls o1) --meta "$META" --timeout 3s user ls >"$DIR/osd-admin.out" 2>&1 &&
	fail "an OSD certificate listed users"
grep -q 'rpc-authz: call refused by role.*ListUsers' "$DIR"/log-meta* || fail "no rpc-authz log line for ListUsers"
echo "ok   an OSD's certificate calling meta's ListUsers is refused ($(head -c 80 "$DIR/osd-admin.out")); meta logged:"
grep -h -m1 'rpc-authz: call refused by role.*ListUsers' "$DIR"/log-meta* | cut -c1-240
sleep 1.1 # one rpc-authz line a second
# shellcheck disable=SC2046
"$B/iolake-osd" --id 4 --device "$DIR/osd4.dev" --size 64M --meta-dir "$DIR/osd4.idx" \
	--listen 127.0.0.1:0 --meta "$META" --host h4 --format $(tls o1) >>"$DIR/log-osd4" 2>&1 &
PID[osd4]=$!
for _ in $(seq 50); do
	grep -q 'rpc-authz: call refused by role.*osd 4' "$DIR"/log-meta* && break
	sleep 0.1
done
grep -q 'rpc-authz: call refused by role.*osd 4' "$DIR"/log-meta* || fail "OSD 4 with OSD 1's certificate not refused"
admin --json osd ls | python3 -c '
import json,sys
sys.exit(1 if any(o.get("id") == 4 for o in json.load(sys.stdin).get("osds", [])) else 0)' ||
	fail "OSD 4 registered with OSD 1's certificate"
kill "${PID[osd4]}"; wait "${PID[osd4]}" 2>/dev/null
echo "ok   an OSD registering as 4 with OSD 1's certificate is refused:"
grep -h -m1 'rpc-authz: call refused by role.*osd 4' "$DIR"/log-meta* | cut -c1-220

# No legitimate caller was refused by the role table: every refusal line
# is one of the two above (OSD 1's certificate).
bad=$(grep -h 'rpc-authz: call refused by role' "$DIR"/log-meta* | grep -v 'peer_cn=o1 ' || true)
[ -z "$bad" ] || fail "the role table refused a legitimate call: $bad"
echo "ok   no other call was refused by role (gateway, OSDs, admin, members)"
# ---------------------------------------------------------------- revocation
# curl signs SigV4 itself: no aws-cli start-up per request.
s3get() { # KEY OUT: the HTTP status of a GET through the gateway (000: none in 6 s)
	curl -s -m 6 -o "$2" -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "http://127.0.0.1:$GWPORT/$1"
}
code=$(s3get mtls/a/obj "$DIR/obj.curl")
{ [ "$code" = 200 ] && cmp -s "$DIR/obj" "$DIR/obj.curl"; } || fail "signed curl GET before the revocation: $code $(head -c 300 "$DIR/obj.curl")"
"$B/iolake-admin" ca revoke --dir "$CA" "$DIR/gw.pem" >/dev/null || fail "ca revoke gw"
"$B/iolake-admin" ca revoke --dir "$CA" "$DIR/m3.pem" >/dev/null || fail "ca revoke m3"
"$B/iolake-admin" ca revoke --dir "$CA" "$DIR/stranger.pem" >/dev/null 2>&1 &&
	fail "ca revoke accepted another CA's certificate"
cp "$CA/crl.pem" "$DIR/crl.pem.tmp" && mv "$DIR/crl.pem.tmp" "$DIR/crl.pem"
for i in 1 2; do kill -HUP "${PID["meta$i"]}"; done
for _ in $(seq 50); do
	grep -q 'raft-tls.*reason=revoked' "$DIR/log-meta1" "$DIR/log-meta2" && break
	sleep 0.1
done
grep -q 'raft-tls.*reason=revoked' "$DIR/log-meta1" "$DIR/log-meta2" ||
	fail "no member dropped member 3's revoked Raft connections"
echo "ok   member 3's certificate revoked: members 1 and 2 dropped its Raft connections at the reload:"
grep -h -m1 'raft-tls.*reason=revoked' "$DIR/log-meta1" "$DIR/log-meta2" | head -1 | cut -c1-240
code=$(s3get mtls/a/obj "$DIR/obj.revoked")
[ "$code" != 200 ] || fail "GET through the revoked gateway answered 200"
grep -q 'rpc-tls: dropped a connection: its certificate is revoked\|certificate revoked' \
	"$DIR/log-meta1" "$DIR/log-meta2" || fail "no meta logged the revoked gateway"
echo "ok   gateway certificate revoked (ca revoke, SIGHUP): its GET answers $code; meta logged:"
grep -h -m1 'rpc-tls: dropped a connection: its certificate is revoked\|certificate revoked' \
	"$DIR/log-meta1" "$DIR/log-meta2" | cut -c1-220

# An ASan build (IOLAKE_BUILD=build-asan) reports into the logs: the
# members stopped above (SIGTERM) ran their leak check on the way out.
san=$(grep -l 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$DIR"/log* 2>/dev/null || true)
[ -z "$san" ] || fail "sanitizer report in: $san"
echo "PASS test_rpc_mtls ($(python3 -c "print(round($(date +%s.%N)-$T0,1))") s)"
