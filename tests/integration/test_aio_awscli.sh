#!/bin/bash
# test_aio_awscli.sh — iolake-aio driven by Debian's aws-cli and s3cmd:
# buckets, objects of 0 B .. 100 MiB round-tripped byte for byte (md5),
# listings with prefixes and delimiters (objects and unfinished multipart
# uploads), S3 error codes as aws-cli prints
# them, a restart on the same dir keeps everything, SIGTERM stops it within
# 5 s.
set -euo pipefail
cd "$(dirname "$0")"
. ./aio_lib.sh

fail() { echo "FAIL: $*"; exit 1; }
aio_start "$T/data"
S3="aws --endpoint-url $EP s3"
API="aws --endpoint-url $EP s3api"

# expect_err CODE cmd...: the command fails and names CODE.
expect_err() {
	local code=$1; shift
	if out=$("$@" 2>&1); then fail "'$*' succeeded, wanted $code"; fi
	grep -q "$code" <<<"$out" || fail "'$*': wanted $code, got: $out"
	echo "ok: $code from: $*"
}

$S3 mb s3://bkt
expect_err BucketAlreadyOwnedByYou $S3 mb s3://bkt
expect_err InvalidBucketName $API create-bucket --bucket Bad_Name
expect_err NoSuchBucket $S3 ls s3://nobucket
$API head-bucket --bucket bkt
$API get-bucket-location --bucket bkt

mkdir -p "$T/in" "$T/out"
for spec in 0:0 1:1 4k:4096 64k:65536 1m:1048576 100m:104857600; do
	name=${spec%%:*}; size=${spec#*:}
	head -c "$size" /dev/urandom > "$T/in/$name"
done
for f in 0 1 4k 64k 1m; do $S3 cp --no-progress "$T/in/$f" "s3://bkt/sizes/$f" >/dev/null; done
$API put-object --bucket bkt --key sizes/100m --body "$T/in/100m" >/dev/null
for f in 0 1 4k 64k 1m; do $S3 cp --no-progress "s3://bkt/sizes/$f" "$T/out/$f" >/dev/null; done
$API get-object --bucket bkt --key sizes/100m "$T/out/100m" >/dev/null
for f in 0 1 4k 64k 1m 100m; do
	a=$(md5sum < "$T/in/$f"); b=$(md5sum < "$T/out/$f")
	[ "$a" = "$b" ] || fail "object $f differs after the round trip"
	etag=$($API head-object --bucket bkt --key "sizes/$f" --query ETag --output text)
	[ "$etag" = "\"${a%% *}\"" ] || fail "ETag of $f is $etag, md5 ${a%% *}"
done
echo "ok: 0 B, 1 B, 4 KiB, 64 KiB, 1 MiB, 100 MiB round-trip (md5 and ETag)"

# Listings: prefixes and delimiters, against what was written.
for k in a/1 a/2 a/b/3 a/b/4 b/5 c; do
	echo "$k" > "$T/in/k"
	$API put-object --bucket bkt --key "tree/$k" --body "$T/in/k" >/dev/null
done
got=$($API list-objects-v2 --bucket bkt --prefix tree/ --query 'Contents[].Key' --output text | tr '\t' ' ')
[ "$got" = "tree/a/1 tree/a/2 tree/a/b/3 tree/a/b/4 tree/b/5 tree/c" ] || fail "listing: $got"
got=$($API list-objects-v2 --bucket bkt --prefix tree/ --delimiter / --query '[Contents[].Key, CommonPrefixes[].Prefix]' --output text | tr '\t\n' '  ')
[ "$got" = "tree/c tree/a/ tree/b/ " ] || fail "delimited listing: '$got'"
got=$($API list-objects-v2 --bucket bkt --prefix tree/a/ --delimiter / --query '[Contents[].Key, CommonPrefixes[].Prefix]' --output text | tr '\t\n' '  ')
[ "$got" = "tree/a/1 tree/a/2 tree/a/b/ " ] || fail "delimited listing of a/: '$got'"
got=$($S3 ls s3://bkt/tree/ | awk '{print $NF}' | tr '\n' ' ')
[ "$got" = "a/ b/ c " ] || fail "s3 ls: '$got'"
n=$($S3 ls --recursive s3://bkt | wc -l)
[ "$n" = 12 ] || fail "s3 ls --recursive: $n keys, want 12"
echo "ok: listings match what was written"

# Unfinished multipart uploads by "folder": aws-cli's own pagination with
# pages of one walks common prefixes and uploads alike. (They stay: the
# test's data dir goes at the end, and uploads are not listed as keys.)
for k in mp/a/1 mp/b/x/1 mp/c; do
	$API create-multipart-upload --bucket bkt --key "$k" >/dev/null
done
# (json: aws-cli merges the pages first; text would print each page.)
got=$($API list-multipart-uploads --bucket bkt --prefix mp/ --delimiter / --page-size 1 \
	--query '[CommonPrefixes[].Prefix, Uploads[].Key]' --output json |
	python3 -c 'import json, sys; print(" ".join(sum(json.load(sys.stdin), [])))')
[ "$got" = "mp/a/ mp/b/ mp/c" ] || fail "list-multipart-uploads --delimiter /: '$got'"
echo "ok: list-multipart-uploads with a delimiter, pages of one"

# Metadata through s3api.
$API put-object --bucket bkt --key meta --body "$T/in/1" --content-type text/x-test \
	--cache-control max-age=5 --metadata color=blue >/dev/null
h=$($API head-object --bucket bkt --key meta --output json)
grep -q '"ContentType": "text/x-test"' <<<"$h" || fail "content type: $h"
grep -q '"color": "blue"' <<<"$h" || fail "metadata: $h"
grep -q '"CacheControl": "max-age=5"' <<<"$h" || fail "cache control: $h"

expect_err NoSuchKey $API get-object --bucket bkt --key nope "$T/out/x"
expect_err NoSuchBucket $API get-object --bucket nobkt --key nope "$T/out/x"
expect_err 404 $API head-object --bucket bkt --key nope
expect_err BucketNotEmpty $S3 rb s3://bkt
expect_err InvalidRange $API get-object --bucket bkt --key sizes/1 --range bytes=5-9 "$T/out/x"
$API get-object --bucket bkt --key sizes/1m --range bytes=1000-1999 "$T/out/r" >/dev/null
cmp <(tail -c +1001 "$T/in/1m" | head -c 1000) "$T/out/r" || fail "range read"
$S3 rm s3://bkt/sizes/4k
expect_err NoSuchKey $API get-object --bucket bkt --key sizes/4k "$T/out/x"
$API delete-object --bucket bkt --key never-was >/dev/null   # 204 as S3

# s3cmd with its own config.
cat > "$T/s3cfg" <<CFG
[default]
access_key = $AWS_ACCESS_KEY_ID
secret_key = $AWS_SECRET_ACCESS_KEY
host_base = 127.0.0.1:$PORT
host_bucket = 127.0.0.1:$PORT
use_https = False
signature_v2 = False
bucket_location = us-east-1
CFG
s3cmd -c "$T/s3cfg" mb s3://s3c
s3cmd -c "$T/s3cfg" put --disable-multipart "$T/in/1m" s3://s3c/one >/dev/null
s3cmd -c "$T/s3cfg" get --force s3://s3c/one "$T/out/s3c" >/dev/null
cmp "$T/in/1m" "$T/out/s3c" || fail "s3cmd round trip"
s3cmd -c "$T/s3cfg" ls s3://s3c | grep -q "s3://s3c/one" || fail "s3cmd ls"
s3cmd -c "$T/s3cfg" del s3://s3c/one >/dev/null
s3cmd -c "$T/s3cfg" rb s3://s3c >/dev/null
echo "ok: s3cmd mb/put/get/ls/del/rb"

# s3cmd as `s3cmd --configure` leaves it: bucket_location US, which it
# signs new buckets' requests for. S3 answers AuthorizationHeaderMalformed
# with the right <Region>, and s3cmd signs again for it; without that
# element it gives up ("Could not determine bucket the location").
grep -v '^bucket_location' "$T/s3cfg" > "$T/s3cfg-us"
echo "bucket_location = US" >> "$T/s3cfg-us"
s3cmd -c "$T/s3cfg-us" mb s3://s3c-us || fail "s3cmd mb with bucket_location US"
s3cmd -c "$T/s3cfg-us" put --disable-multipart "$T/in/4k" s3://s3c-us/k >/dev/null ||
	fail "s3cmd put with bucket_location US"
s3cmd -c "$T/s3cfg-us" get --force s3://s3c-us/k "$T/out/s3c-us" >/dev/null
cmp "$T/in/4k" "$T/out/s3c-us" || fail "s3cmd US round trip"
info=$(s3cmd -c "$T/s3cfg-us" info s3://s3c-us) || fail "s3cmd info"
grep -q "Location: *us-east-1" <<<"$info" || fail "s3cmd info: location: $info"
grep -q "Payer: *BucketOwner" <<<"$info" || fail "s3cmd info: payer (GetBucketRequestPayment): $info"
s3cmd -c "$T/s3cfg-us" del s3://s3c-us/k >/dev/null
s3cmd -c "$T/s3cfg-us" rb s3://s3c-us >/dev/null
# The error body itself: a request signed for another region names ours.
now=$(date -u +%Y%m%dT%H%M%SZ)
body=$(curl -s -H "Authorization: AWS4-HMAC-SHA256 Credential=$AWS_ACCESS_KEY_ID/${now%%T*}/eu-west-9/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=$(printf "0%.0s" $(seq 64))" \
	-H "x-amz-date: $now" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$EP/bkt")
grep -q "<Code>AuthorizationHeaderMalformed</Code>.*<Region>us-east-1</Region>" <<<"$body" ||
	fail "wrong-region error body: $body"
echo "ok: s3cmd with bucket_location US (re-signs for the <Region> of the error)"

m=$(curl -sf "$EP/metrics"); grep -q "^iolake_gw_requests_total" <<<"$m" || fail "/metrics"
curl -sf "$EP/health/live" >/dev/null || fail "/health/live"

# Restart on the same dir keeps everything; SIGTERM is clean and quick.
aio_stop
aio_start "$T/data"
$API get-object --bucket bkt --key sizes/100m "$T/out/100m.2" >/dev/null
cmp "$T/in/100m" "$T/out/100m.2" || fail "100 MiB object after restart"
n=$($S3 ls --recursive s3://bkt | wc -l)
[ "$n" = 12 ] || fail "after restart: $n keys, want 12"
aio_stop
echo "PASS"
