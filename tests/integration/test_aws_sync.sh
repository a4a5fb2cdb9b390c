#!/bin/bash
# test_aws_sync.sh — aws-cli's high-level commands on iolake-aio with its
# default multipart settings (8 MiB threshold and parts): `aws s3 cp` of a
# 200 MiB file (a 25-part upload; downloaded back by ranged GETs), `aws s3
# sync` of a tree of 1,000 small files up and back (a second sync copies
# nothing), `aws s3 cp --recursive` round trip of a tree with a multipart
# file in it; every round trip compared byte for byte (cmp, diff -r), and
# `aws s3api list-multipart-uploads` empty afterwards.
set -euo pipefail
cd "$(dirname "$0")"
. ./aio_lib.sh

# aio_lib.sh pins single PUTs for the older tests; this one wants aws-cli's
# defaults (multipart from 8 MiB on, 8 MiB parts), with 32 requests in
# flight instead of 10 (AWS_CONCURRENCY): the 1,000-file sync is bound by
# aws-cli's per-file overhead, and overlapping more of it saves ~15 s.
cat > "$AWS_CONFIG_FILE" <<CFG
[default]
region = us-east-1
s3 =
  addressing_style = path
  max_concurrent_requests = ${AWS_CONCURRENCY:-32}
CFG

fail() { echo "FAIL: $*"; exit 1; }
OSD_SIZE=1G aio_start "$T/data"
S3="aws --endpoint-url $EP s3"
API="aws --endpoint-url $EP s3api"
t0=$(date +%s)
lap() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

$S3 mb s3://sync >/dev/null

# 1. One 200 MiB file: multipart up, ranged GETs down.
head -c $((200 << 20)) /dev/urandom > "$T/big"
$S3 cp --no-progress "$T/big" s3://sync/big >/dev/null
etag=$($API head-object --bucket sync --key big --query ETag --output text)
[[ $etag == *-25\" ]] || fail "200 MiB upload ETag $etag is not a 25-part multipart ETag"
want=$(python3 - "$T/big" <<'PY'
import hashlib, sys
d = b""
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(8 << 20)
        if not b:
            break
        d += hashlib.md5(b).digest()
print('"%s-%d"' % (hashlib.md5(d).hexdigest(), len(d) // 16))
PY
)
[ "$etag" = "$want" ] || fail "ETag $etag, want $want (MD5 of the part MD5s)"
$S3 cp --no-progress s3://sync/big "$T/big.out" >/dev/null
cmp "$T/big" "$T/big.out" || fail "200 MiB file differs after the round trip"
rm -f "$T/big.out"
lap "ok: 200 MiB aws s3 cp up (multipart, ETag $etag) and down, byte for byte"

# 2. aws s3 sync of 1,000 small files (0 B .. 20 KiB: inline and sharded).
python3 - "$T/tree" <<'PY'
import os, random, sys
rnd = random.Random(int(os.environ.get("SEED", "6")))
root = sys.argv[1]
for d in range(10):
    os.makedirs(os.path.join(root, "d%02d" % d, "sub"), exist_ok=True)
for i in range(1000):
    sub = "sub/" if i % 3 == 0 else ""
    path = os.path.join(root, "d%02d" % (i % 10), sub + "f%04d.bin" % i)
    with open(path, "wb") as f:
        f.write(rnd.randbytes(rnd.choice([0, 1, 100, 4096, 4097, 9000, 20000])))
PY
[ "$(find "$T/tree" -type f | wc -l)" -eq 1000 ] || fail "tree is not 1000 files"
$S3 sync --no-progress "$T/tree" s3://sync/tree >/dev/null
lap "sync up done"
n=$($S3 ls --recursive s3://sync/tree/ | wc -l)
[ "$n" -eq 1000 ] || fail "sync up: $n keys, want 1000"
again=$($S3 sync --no-progress "$T/tree" s3://sync/tree)
[ -z "$again" ] || fail "a second sync copied again: $(head -3 <<<"$again")"
lap "second sync done"
$S3 sync --no-progress s3://sync/tree "$T/back" >/dev/null
diff -r "$T/tree" "$T/back" || fail "synced tree differs"
lap "ok: aws s3 sync of 1,000 files up and back, diff -r clean; a second sync copies nothing"

# 3. aws s3 cp --recursive round trip, with a multipart file in the tree.
mkdir -p "$T/rec/deep/er"
head -c $((20 << 20)) /dev/urandom > "$T/rec/deep/er/mid.bin"
for i in $(seq 1 50); do head -c $((i * 97)) /dev/urandom > "$T/rec/s$i"; done
$S3 cp --no-progress --recursive "$T/rec" s3://sync/rec >/dev/null
$S3 cp --no-progress --recursive s3://sync/rec "$T/rec.out" >/dev/null
diff -r "$T/rec" "$T/rec.out" || fail "cp --recursive tree differs"
lap "ok: aws s3 cp --recursive round trip (51 files, one multipart), diff -r clean"

# 4. No upload left behind.
ups=$($API list-multipart-uploads --bucket sync --output json)
if grep -q UploadId <<<"$ups"; then fail "uploads left: $ups"; fi
lap "ok: list-multipart-uploads is empty"
$S3 rb --force s3://sync >/dev/null
aio_stop
echo "PASS test_aws_sync"
