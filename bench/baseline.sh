#!/bin/sh
# baseline.sh — the make-bench cells (PUT then GET of 4 KiB and 64 KiB at
# 32 in flight, 4 MiB at 8) run by iolake-s3-bench against any S3 endpoint
# and against a fresh iolake-aio on the same machine, printed side by side:
#
#   bench/baseline.sh --endpoint URL --access-key K --secret-key S
#                     [--bucket NAME] [--region R] [--build DIR]
#                     [--workdir TMPFS] [--quick] [--json FILE]
#
# The other store keeps its data wherever it was started; iolake-aio's goes
# on --workdir (a tmpfs outside /dev; without it one is mounted for the run,
# which needs root). Start the other store with its data on the same kind
# of storage, or the comparison measures the storage. Objects PUT to the
# other store stay in its bucket (default iolake-baseline) under
# baseline/<size>/.
exec python3 "$(dirname "$0")/baseline.py" "$@"
