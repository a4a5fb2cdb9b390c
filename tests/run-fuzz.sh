#!/bin/sh
# Run every libFuzzer target in BUILD_DIR over its seed corpus
# (tests/fuzz/corpus/<name>/).
#   tests/run-fuzz.sh BUILD_DIR SECONDS
# SECONDS > 0: explore for that long per target, keeping new inputs in
#              BUILD_DIR/corpus/<name> (copy good ones into the seed corpus).
# SECONDS = 0: deterministic replay for make test: the seeds plus a fixed
#              number of mutations from a fixed seed, so a pass or a failure
#              repeats exactly.
# FUZZ_RUNS=N in the environment (make fuzz FUZZ_RUNS=N): explore for N
#              executions per target instead of SECONDS, from a fixed seed,
#              and print executions, seconds, executions/s and peak RSS.
# FUZZ_TARGETS="a b" runs only those targets (names without fuzz_).
set -u
build=$1
secs=$2
runs=${FUZZ_RUNS:-}
only=${FUZZ_TARGETS:-}
top=$(cd "$(dirname "$0")/.." && pwd)
# Leaks that are not IOLake's (each entry says why): tests/fuzz/lsan.supp.
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top/tests/fuzz/lsan.supp"
fail=0
for f in "$build"/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	if [ -n "$only" ]; then
		case " $only " in *" ${name#fuzz_} "*) ;; *) continue ;; esac
	fi
	seeds="$top/tests/fuzz/corpus/${name#fuzz_}"
	work="$build/corpus/$name"
	mkdir -p "$seeds" "$work"
	log="$build/$name.log"
	# libFuzzer writes new inputs into the FIRST corpus directory: always
	# the scratch one under the build dir, never the committed seeds.
	if [ -n "$runs" ]; then
		set -- -seed=1 -runs="$runs" "$work" "$seeds"
	elif [ "$secs" -gt 0 ]; then
		set -- -max_total_time="$secs" "$work" "$seeds"
	else
		rm -rf "$work" && mkdir -p "$work"
		set -- -seed=1 -runs=20000 "$work" "$seeds"
	fi
	t0=$(date +%s)
	# Crash, timeout and slow-unit inputs go beside the log, not into the
	# caller's working directory (a checkout's top, where git sees them).
	if "$f" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/$name-" "$@" >"$log" 2>&1; then
		t=$(( $(date +%s) - t0 ))
		printf '  PASS    %-36s %s\n' "fuzz/$name" \
			"$(awk -v t="$t" '/^stat::number_of_executed_units/ { n = $2 }
				/^stat::peak_rss_mb/ { rss = $2 }
				END { printf "%d runs in %d s (%d/s), peak RSS %d MB", n, t,
				      t ? n / t : n, rss }' "$log")"
	else
		printf '  FAIL    fuzz/%s (log: %s)\n' "$name" "$log"
		tail -40 "$log" | sed 's/^/    | /'
		fail=1
	fi
done
exit $fail
