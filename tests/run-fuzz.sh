#!/bin/sh
# Run every libFuzzer target in BUILD_DIR over its seed corpus
# (tests/fuzz/corpus/<name>/).
#   tests/run-fuzz.sh BUILD_DIR SECONDS
# SECONDS > 0: explore for that long per target, keeping new inputs in
#              BUILD_DIR/corpus/<name> (copy good ones into the seed corpus).
# SECONDS = 0: deterministic replay for make test: the seeds plus a fixed
#              number of mutations from a fixed seed, so a pass or a failure
#              repeats exactly.
set -u
build=$1
secs=$2
top=$(cd "$(dirname "$0")/.." && pwd)
fail=0
for f in "$build"/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	seeds="$top/tests/fuzz/corpus/${name#fuzz_}"
	work="$build/corpus/$name"
	mkdir -p "$seeds" "$work"
	log="$build/$name.log"
	# libFuzzer writes new inputs into the FIRST corpus directory: always
	# the scratch one under the build dir, never the committed seeds.
	if [ "$secs" -gt 0 ]; then
		set -- -max_total_time="$secs" "$work" "$seeds"
	else
		rm -rf "$work" && mkdir -p "$work"
		set -- -seed=1 -runs=20000 "$work" "$seeds"
	fi
	if "$f" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" >"$log" 2>&1; then
		printf '  PASS    %-36s %s\n' "fuzz/$name" \
			"$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2 " runs"}')"
	else
		printf '  FAIL    fuzz/%s (log: %s)\n' "$name" "$log"
		tail -40 "$log" | sed 's/^/    | /'
		fail=1
	fi
done
exit $fail
