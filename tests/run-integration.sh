#!/bin/sh
# Run every integration test (tests/integration/test_*.sh, test_*.py) in
# name order with the build dir in IOLAKE_BUILD. Exit non-zero if any failed.
#   tests/run-integration.sh BUILD_DIR
set -u
# The clients the tests promise are Debian's (aws-cli, python3-boto3,
# s3cmd; scripts/deps.sh installs them): /usr/bin first, so a pyenv or pip
# install earlier in PATH (newer botocore, other defaults) is not what runs.
PATH=/usr/bin:/bin:$PATH
export PATH
export IOLAKE_BUILD="$(cd "$1" && pwd)"
cd "$(dirname "$0")/integration" || exit 1
fail=0
for t in test_*.sh test_*.py; do
	[ -e "$t" ] || continue
	start=$(date +%s)
	if ./"$t" >"$IOLAKE_BUILD/$t.log" 2>&1; then
		# A test that cannot run here exits 0 after a "SKIP test_...: why"
		# line; one that skipped a step it cannot run prints "SKIP step:".
		if grep -q '^SKIP test_' "$IOLAKE_BUILD/$t.log"; then
			printf '  SKIP    %-36s %s\n' "integration/$t" "$(grep -m1 '^SKIP test_' "$IOLAKE_BUILD/$t.log" | cut -d: -f2-)"
			continue
		fi
		printf '  PASS    %-36s %3ss\n' "integration/$t" $(( $(date +%s) - start ))
		grep '^SKIP step:' "$IOLAKE_BUILD/$t.log" | sed 's/^/          /' || true
	else
		printf '  FAIL    integration/%s (log: %s)\n' "$t" "$IOLAKE_BUILD/$t.log"
		tail -60 "$IOLAKE_BUILD/$t.log" | sed 's/^/    | /'
		fail=1
	fi
done
exit $fail
