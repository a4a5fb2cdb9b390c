#!/bin/bash
# test_tls.sh — iolake-aio serving S3 over TLS (--tls-cert/--tls-key),
# certificates from a test CA made here with openssl (SAN 127.0.0.1 and
# localhost). aws-cli (--ca-bundle) and boto3 (verify=) PUT, GET, list and
# multipart byte for byte; plain HTTP to the TLS port is answered 400 in
# plain text and closed; a client trusting another CA refuses the server;
# SIGHUP with a new certificate: a new connection sees the new serial
# (openssl s_client) while a connection opened before keeps working;
# SIGHUP with a broken file keeps the old certificate (and says so in the
# log); the TLS counters in /metrics; TLS 1.1 refused, 1.2 and 1.3 taken.
set -euo pipefail
cd "$(dirname "$0")"
. ./aio_lib.sh

fail() { echo "FAIL: $*"; [ -f "$T/aio.err" ] && tail -5 "$T/aio.err"; exit 1; }

# --- certificates
C=$T/certs
mkdir -p "$C"
mkcert() { # mkcert NAME SERIAL CA
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/$1.key" \
		-out "$C/$1.csr" -subj /CN=localhost 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$C/ext"
	openssl x509 -req -in "$C/$1.csr" -CA "$C/$3.pem" -CAkey "$C/$3.key" -set_serial "$2" \
		-out "$C/$1.pem" -days 2 -extfile "$C/ext" 2>/dev/null
}
for ca in ca otherca; do
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/$ca.key" \
		-out "$C/$ca.pem" -days 2 -subj "/CN=iolake test $ca" 2>/dev/null
done
mkcert one 0x1001 ca
mkcert two 0x2002 ca
cp "$C/one.pem" "$C/srv.pem"
cp "$C/one.key" "$C/srv.key"

AIO_SCHEME=https AIO_CURL_OPTS="--cacert $C/ca.pem"
aio_start "$T/data" --tls-cert "$C/srv.pem" --tls-key "$C/srv.key"
echo "ok: aio up at $EP"
# The banner follows readiness by a moment.
for _ in $(seq 50); do grep -q "S3 endpoint:" "$T/aio.out" && break; sleep 0.1; done
grep -q "S3 endpoint:  https://" "$T/aio.out" || fail "banner does not say https"

serial() { # the serial a new connection sees
	openssl s_client -connect "127.0.0.1:$PORT" -servername localhost -CAfile "$C/ca.pem" \
		</dev/null 2>/dev/null | openssl x509 -noout -serial | cut -d= -f2
}
[ "$(serial)" = 1001 ] || fail "serial $(serial), wanted 1001"

# --- aws-cli
S3="aws --endpoint-url $EP --ca-bundle $C/ca.pem s3"
API="aws --endpoint-url $EP --ca-bundle $C/ca.pem s3api"
mkdir -p "$T/in" "$T/out"
head -c 4096 /dev/urandom >"$T/in/small"
head -c 20000000 /dev/urandom >"$T/in/big" # multipart with aws-cli's 8 MiB threshold
$S3 mb s3://tls >/dev/null
$S3 cp --no-progress "$T/in/small" s3://tls/small >/dev/null
$S3 cp --no-progress "$T/in/big" s3://tls/dir/big >/dev/null
$S3 cp --no-progress s3://tls/small "$T/out/small" >/dev/null
$S3 cp --no-progress s3://tls/dir/big "$T/out/big" >/dev/null
cmp "$T/in/small" "$T/out/small" || fail "aws-cli small differs"
cmp "$T/in/big" "$T/out/big" || fail "aws-cli big differs"
n=$($API list-objects-v2 --bucket tls --query 'length(Contents)' --output text)
[ "$n" = 2 ] || fail "list: $n keys"
etag=$($API head-object --bucket tls --key dir/big --query ETag --output text)
case "$etag" in *-3\"*|*-3) ;; *) fail "big was not multipart: $etag" ;; esac
echo "ok: aws-cli over TLS: put/get 4 KiB and 20 MB (multipart, $etag), list"

# --- boto3
python3 - "$EP" "$C/ca.pem" <<'PY'
import hashlib, os, sys
import boto3
from botocore.config import Config
ep, ca = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=ep, verify=ca, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
s3.create_bucket(Bucket="tls-boto")
body = os.urandom(100000)
s3.put_object(Bucket="tls-boto", Key="a/one", Body=body)
assert s3.get_object(Bucket="tls-boto", Key="a/one")["Body"].read() == body
part = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(1234)]
up = s3.create_multipart_upload(Bucket="tls-boto", Key="a/mp")["UploadId"]
parts = []
for i, p in enumerate(part, 1):
    r = s3.upload_part(Bucket="tls-boto", Key="a/mp", UploadId=up, PartNumber=i, Body=p)
    parts.append({"PartNumber": i, "ETag": r["ETag"]})
s3.complete_multipart_upload(Bucket="tls-boto", Key="a/mp", UploadId=up,
                             MultipartUpload={"Parts": parts})
got = s3.get_object(Bucket="tls-boto", Key="a/mp")["Body"].read()
assert hashlib.md5(got).digest() == hashlib.md5(b"".join(part)).digest(), "multipart differs"
r = s3.get_object(Bucket="tls-boto", Key="a/mp", Range="bytes=5242870-5242889")["Body"].read()
assert r == b"".join(part)[5242870:5242890], "range differs"
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="tls-boto", Prefix="a/")["Contents"]]
assert keys == ["a/mp", "a/one"], keys
print("ok: boto3 over TLS: put/get, multipart (3 parts), range, list")
PY

# --- plain HTTP to the TLS port: a plain 400 that says why, then closed
out=$(curl -s -i --max-time 5 "http://127.0.0.1:$PORT/health/live" || true)
grep -q "^HTTP/1.1 400" <<<"$out" || fail "plain HTTP got: $out"
grep -q "HTTPS" <<<"$out" || fail "plain HTTP: no explanation: $out"
grep -qi "^connection: close" <<<"$out" || fail "plain HTTP: not closed: $out"
echo "ok: plain HTTP to the TLS port -> 400 'This port speaks HTTPS', closed"

# --- a client trusting another CA refuses the server
if out=$(aws --endpoint-url "$EP" --ca-bundle "$C/otherca.pem" s3 ls 2>&1); then
	fail "aws-cli trusted a certificate from another CA"
fi
grep -qi "ssl\|certificate" <<<"$out" || fail "wrong CA: unexpected error: $out"
rc=0; curl -s --max-time 5 --cacert "$C/otherca.pem" "$EP/health/live" >/dev/null || rc=$?
[ "$rc" = 60 ] || fail "curl with another CA: exit $rc, wanted 60"
echo "ok: a client trusting another CA refuses (aws-cli: SSL error; curl exit 60)"

# --- protocol versions
rc=0; curl -s --max-time 5 --cacert "$C/ca.pem" --tls-max 1.1 "$EP/health/live" >/dev/null || rc=$?
[ "$rc" != 0 ] || fail "TLS 1.1 accepted"
v12=$(curl -s --max-time 5 --cacert "$C/ca.pem" --tlsv1.2 --tls-max 1.2 -w '%{http_version}' -o /dev/null "$EP/health/live")
[ "$v12" = 1.1 ] || fail "TLS 1.2: $v12"
alpn=$(openssl s_client -connect "127.0.0.1:$PORT" -alpn h2,http/1.1 -CAfile "$C/ca.pem" </dev/null 2>/dev/null | grep -i '^ALPN')
grep -q "http/1.1" <<<"$alpn" || fail "ALPN: $alpn"
echo "ok: TLS 1.1 refused, 1.2 and 1.3 served; ALPN: $alpn"

# --- SIGHUP: a new certificate for new connections, old ones keep going
python3 - "$PORT" "$C/ca.pem" "$AIO_PID" "$C" <<'PY'
import os, shutil, signal, socket, ssl, subprocess, sys, time
port, ca, pid, cdir = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ssl.create_default_context(cafile=ca)
def get(conn):
    conn.sendall(b"GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
    data = b""
    while not data.endswith(b"\r\n\r\nok\n"):
        chunk = conn.recv(4096)
        assert chunk, "connection closed: %r" % data
        data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data
def serial(conn):
    return "%X" % int(conn.getpeercert()["serialNumber"], 16)
old = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
get(old)
assert serial(old) == "1001", serial(old)
shutil.copy(os.path.join(cdir, "two.pem"), os.path.join(cdir, "srv.pem"))
shutil.copy(os.path.join(cdir, "two.key"), os.path.join(cdir, "srv.key"))
os.kill(pid, signal.SIGHUP)
deadline = time.time() + 5
while True:
    new = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    s = serial(new)
    get(new)
    new.close()
    if s == "2002":
        break
    assert time.time() < deadline, "still serial %s after SIGHUP" % s
    time.sleep(0.1)
get(old)
get(old)
assert serial(old) == "1001"
old.close()
print("ok: SIGHUP: new connections get serial 2002; one opened before keeps serial 1001 and works")
PY
[ "$(serial)" = 2002 ] || fail "s_client serial $(serial) after reload, wanted 2002"

# A broken file on reload: logged, the old certificate stays.
echo "-----BEGIN CERTIFICATE-----garbage" >"$C/srv.pem"
kill -HUP "$AIO_PID"
for _ in $(seq 50); do grep -q "reload failed" "$T/aio.err" && break; sleep 0.1; done
grep -q "reload failed; the old certificate stays" "$T/aio.err" || fail "no log of the failed reload"
[ "$(serial)" = 2002 ] || fail "serial $(serial) after a broken reload, wanted 2002"
$S3 cp --no-progress s3://tls/small "$T/out/small2" >/dev/null
cmp "$T/in/small" "$T/out/small2" || fail "GET after a broken reload"
echo "ok: SIGHUP with a broken certificate: logged, still serving serial 2002"

# --- counters
m=$(curl -sf --cacert "$C/ca.pem" "$EP/metrics")
val() { awk -v k="$1" '$1 == k { print $2 }' <<<"$m"; }
[ "$(val iolake_gw_tls_reloads)" = 1 ] || fail "tls_reloads $(val iolake_gw_tls_reloads)"
[ "$(val iolake_gw_tls_reload_failures)" = 1 ] || fail "reload_failures $(val iolake_gw_tls_reload_failures)"
[ "$(val iolake_gw_http_plain_on_tls_total)" = 1 ] || fail "plain_on_tls $(val iolake_gw_http_plain_on_tls_total)"
hs=$(val iolake_gw_tls_handshakes); fl=$(val iolake_gw_tls_handshake_failures)
v12=$(val 'iolake_gw_tls_version_handshakes{version="TLSv1.2"}')
v13=$(val 'iolake_gw_tls_version_handshakes{version="TLSv1.3"}')
[ "${hs%.*}" -ge 10 ] && [ "${fl%.*}" -ge 3 ] && [ "${v12%.*}" -ge 1 ] && [ "${v13%.*}" -ge 5 ] ||
	fail "counters: handshakes $hs failures $fl TLSv1.2 $v12 TLSv1.3 $v13"
echo "ok: /metrics: handshakes $hs, failures $fl (other CA, TLS 1.1), TLSv1.2 $v12, TLSv1.3 $v13"

aio_stop
echo "PASS test_tls"
