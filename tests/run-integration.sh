#!/bin/sh
# Run every integration test (tests/integration/test_*.sh, test_*.py) with
# the build dir in IOLAKE_BUILD (tests/run-tests.py: several at a time,
# TEST_JOBS, the ones marked `make-test: alone` by themselves). Exit
# non-zero if any failed.
#   tests/run-integration.sh BUILD_DIR
exec python3 "$(dirname "$0")/run-tests.py" integration "$@"
