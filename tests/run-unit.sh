#!/bin/sh
# Run every unit-test binary given (tests/run-tests.py: several at a time,
# TEST_JOBS, the ones marked `make-test: alone` by themselves); one line
# per binary, the failing output in full. Exit non-zero if any failed.
#   tests/run-unit.sh BUILD_DIR TEST_BIN...
exec python3 "$(dirname "$0")/run-tests.py" unit "$@"
