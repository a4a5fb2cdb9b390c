#!/bin/sh
# Run every unit-test binary given; print one line per binary and the
# failing output in full. Exit non-zero if any failed.
#   tests/run-unit.sh BUILD_DIR TEST_BIN...
set -u
build=$1; shift
fail=0
for t in "$@"; do
	name=${t#"$build"/tests/unit/}
	log="$t.log"
	start=$(date +%s)
	# Check forks each test; its default per-test timeout is 4 s, our suites
	# set their own with tcase_set_timeout.
	if "$t" >"$log" 2>&1; then
		printf '  PASS    %-36s %3ss  %s\n' "$name" $(( $(date +%s) - start )) \
			"$(grep -E '^[0-9]+%: Checks' "$log" | tail -1)"
	else
		printf '  FAIL    %s (log: %s)\n' "$name" "$log"
		# Check's own verdict lines first ("file:line:F:case:test:...",
		# ":E:" for a crash or timeout): a long log is cut by whoever
		# shows it, and these say what failed.
		grep -E '^[^ ]+:[0-9]+:[EF]:' "$log" | sed 's/^/    ! /'
		sed 's/^/    | /' "$log" | tail -60
		fail=1
	fi
done
exit $fail
