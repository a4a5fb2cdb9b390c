# aio_lib.sh — shared by the iolake-aio integration tests (sourced, not run).
# Starts build/iolake-aio on a temp dir under /dev/shm with fixed root
# credentials and a random port, waits for /health/ready, and kills what
# it started (by PID) on exit.
B=${IOLAKE_BUILD:-$(cd "$(dirname "$0")/../../build" && pwd)}
T=$(mktemp -d /dev/shm/iolake-it.XXXXXX)
AIO_PID=
export IOLAKE_ROOT_ACCESS_KEY=AKIAIOLAKETEST000001
export IOLAKE_ROOT_SECRET_KEY=iolake-test-secret-key-0123456789abcdef
export AWS_ACCESS_KEY_ID=$IOLAKE_ROOT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$IOLAKE_ROOT_SECRET_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE=$T/aws-config AWS_SHARED_CREDENTIALS_FILE=$T/aws-credentials
# aws-cli's defaults (multipart above 8 MiB); path-style addressing.
cat > "$AWS_CONFIG_FILE" <<CFG
[default]
region = us-east-1
s3 =
  addressing_style = path
CFG
: > "$AWS_SHARED_CREDENTIALS_FILE"

aio_cleanup() {
	# "|| true": under set -e a failing kill or wait (137 after -9) would end
	# the trap before the rm.
	if [ -n "$AIO_PID" ]; then kill -9 "$AIO_PID" 2>/dev/null || true; wait "$AIO_PID" 2>/dev/null || true; fi
	rm -rf "$T"
}
trap aio_cleanup EXIT

# free_port: a port free on 127.0.0.1 now, below the ephemeral range
# (free_port.py says why).
free_port() {
	python3 "$(dirname "${BASH_SOURCE[0]}")/free_port.py"
}

# aio_start DATA_DIR [flags...]: start, wait until ready (60 s max: ~1-3 s
# quiet, 20-37 s seen at load 20-45; a wait, not a check of speed).
aio_start() {
	local dir=$1; shift
	PORT=${PORT:-$(free_port)}
	EP=${AIO_SCHEME:-http}://127.0.0.1:$PORT  # AIO_SCHEME=https + AIO_CURL_OPTS for TLS
	"$B/iolake-aio" --data-dir "$dir" --s3-listen 127.0.0.1:$PORT --osd-size ${OSD_SIZE:-256M} "$@" \
		>>"$T/aio.out" 2>>"$T/aio.err" &
	AIO_PID=$!
	for _ in $(seq 1 600); do
		# shellcheck disable=SC2086
		if curl -sf ${AIO_CURL_OPTS:-} "$EP/health/ready" >/dev/null 2>&1; then return 0; fi
		kill -0 "$AIO_PID" 2>/dev/null || { tail -20 "$T/aio.err"; echo "aio died"; return 1; }
		sleep 0.1
	done
	tail -20 "$T/aio.err"; echo "aio not ready after 60 s"; return 1
}

# aio_stop: SIGTERM, must exit 0 within 5 s.
aio_stop() {
	local t0=$(date +%s%N)
	kill -TERM "$AIO_PID"
	for _ in $(seq 1 50); do
		kill -0 "$AIO_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$AIO_PID" 2>/dev/null; then echo "FAIL: aio still running 5 s after SIGTERM"; return 1; fi
	wait "$AIO_PID"; local rc=$?
	AIO_PID=
	echo "aio stopped in $(( ($(date +%s%N) - t0) / 1000000 )) ms, exit $rc"
	[ $rc -eq 0 ]
}
