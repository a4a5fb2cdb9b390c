#!/bin/bash
# test_root_creds.sh — a deployed cluster given known credentials (issue
# 15): three iolake-meta members started with IOLAKE_ROOT_ACCESS_KEY /
# IOLAKE_ROOT_SECRET_KEY and an iolake-gw with --root-credentials FILE;
# aws-cli answers both keys as user root. `iolake-admin user add NAME
# --access-key K --secret-key S` imports a key (aws-cli then uses it), and
# refuses a key id already in use without creating the user. A key whose
# secret changed in the file is replaced when the gateway restarts (the old
# secret refused, the new one answered). Bad credentials on the command
# line or in the environment stop with a clear error and exit 2.
set -u
export PATH=/usr/bin:/bin:$PATH
. "$(dirname "$0")/meta_lib.sh"
meta_lib_init rootcr 8
PEERS="1@$(addr 1),2@$(addr 2),3@$(addr 3)"
META="$(addr 1),$(addr 2),$(addr 3)"
S3="127.0.0.1:$((BASE + 7))"
ENV_AK=AKROOTFROMENV0001 ENV_SK=env-secret-0123456789abcdef
FILE_AK=AKROOTFROMFILE001 FILE_SK=file-secret-0123456789abcdef
printf 'access_key=%s\nsecret_key=%s\n' "$FILE_AK" "$FILE_SK" >"$DIR/creds"

for i in 1 2 3; do
	IOLAKE_ROOT_ACCESS_KEY=$ENV_AK IOLAKE_ROOT_SECRET_KEY=$ENV_SK "$B/iolake-meta" --id $i \
		--data-dir "$DIR/m$i" --listen "$(addr $i)" --peers "$PEERS" \
		--election-timeout 500ms >>"$DIR/log$i" 2>&1 &
	PID[m$i]=$!
done
start_gw() {
	"$B/iolake-gw" --s3-listen "$S3" --meta "$META" --root-credentials "$DIR/creds" \
		--gc-interval 0 >>"$DIR/log-gw" 2>&1 &
	PID[gw]=$!
}
start_gw
admin() { "$B/iolake-admin" --meta "$META" --timeout 5s "$@"; }
s3() { # s3 AK SK ARGS...: aws-cli against the gateway
	local ak=$1 sk=$2
	shift 2
	AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_DEFAULT_REGION=us-east-1 \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
		AWS_SHARED_CREDENTIALS_FILE=/dev/null \
		aws --endpoint-url "http://$S3" s3 "$@"
}
poll() { # poll SECONDS CMD...
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.3
	done
}

poll 30 s3 "$ENV_AK" "$ENV_SK" ls || fail "the environment's root key is not answered within 30 s"
echo "ok: root key from the members' environment answered"
poll 30 s3 "$FILE_AK" "$FILE_SK" ls || fail "the gateway's --root-credentials key is not answered"
echo "ok: root key from the gateway's --root-credentials file answered"
s3 "$FILE_AK" "$FILE_SK" mb s3://known-keys >/dev/null || fail "mb with the file's root key"
# Asked once, on purpose: the polls above left the env key cached as
# unknown on whichever gateway loops were asked before it existed. Until
# creating a key bumped creds_epoch, this ask failed (InvalidAccessKeyId)
# whenever it landed on such a loop within 5 s: 1 run in 3.
s3 "$ENV_AK" "$ENV_SK" ls | grep -q known-keys || fail "the bucket is not listed with the env key"
s3 "$ENV_AK" wrong-secret-0123456789 ls >/dev/null 2>&1 && fail "a wrong secret was accepted"
admin --json user ls | python3 -c '
import json, sys
u = [x for x in json.load(sys.stdin)["users"] if x["name"] == "root"]
assert len(u) == 1, u' || fail "user ls does not show exactly one root"

# Import a known key.
out=$(admin user add alice --access-key AKALICE0000000001 --secret-key alice-secret-0123456789) ||
	fail "user add with --access-key / --secret-key: $out"
echo "$out" | grep -q "AKALICE0000000001" || fail "user add does not print the imported key: $out"
poll 10 s3 AKALICE0000000001 alice-secret-0123456789 ls || fail "aws-cli with alice's imported key"
echo "ok: user add imported alice's key; aws-cli uses it"
out=$(admin user add bob --access-key AKALICE0000000001 --secret-key bob-secret-0123456789abc 2>&1) &&
	fail "a key id in use was imported again: $out"
echo "$out" | grep -q "already in use" || fail "no clear error for a key in use: $out"
admin --json user ls | grep -q '"bob"' && fail "bob was created although his key was refused"
echo "ok: a key id in use is refused, and no user made: $out"
for bad in "--access-key AKONLY000000001" "--access-key a! --secret-key 0123456789abcdefgh" \
	"--access-key AKSHORTSECRET001 --secret-key short" "--secret"; do
	# shellcheck disable=SC2086
	out=$(admin user add carol $bad 2>&1)
	rc=$?
	[ $rc = 2 ] || fail "user add carol $bad: exit $rc, not 2 ($out)"
	echo "ok: user add carol $bad -> exit 2: $out"
done

# A changed secret replaces the key's secret once the gateway restarts.
kill "${PID[gw]}"
wait "${PID[gw]}" 2>/dev/null
NEW_SK=file-secret-rotated-0123456789
printf 'access_key=%s\nsecret_key=%s\n' "$FILE_AK" "$NEW_SK" >"$DIR/creds"
start_gw
poll 30 s3 "$FILE_AK" "$NEW_SK" ls || fail "the rotated secret is not answered"
s3 "$FILE_AK" "$FILE_SK" ls >/dev/null 2>&1 && fail "the old secret still works after rotation"
echo "ok: the file's changed secret replaced the old one"

# Bad credentials stop a process with a clear error.
out=$(IOLAKE_ROOT_ACCESS_KEY=AKNOSECRET00001 "$B/iolake-meta" --id 9 --data-dir "$DIR/bad" \
	--listen 127.0.0.1:1 --peers 9@127.0.0.1:1 2>&1)
rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "IOLAKE_ROOT_SECRET_KEY" ||
	fail "iolake-meta with only the access key set: exit $rc: $out"
echo "ok: iolake-meta, access key without secret -> exit 2: $out"
out=$("$B/iolake-gw" --s3-listen 127.0.0.1:1 --meta "$META" --root-credentials "$DIR/none" 2>&1)
rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "no such file" ||
	fail "iolake-gw with a missing credentials file: exit $rc: $out"
echo "ok: iolake-gw, missing --root-credentials file -> exit 2: $out"
echo "PASS test_root_creds"
