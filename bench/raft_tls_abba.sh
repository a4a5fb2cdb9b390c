#!/bin/bash
# raft_tls_abba.sh — what mutual TLS on meta's RPC and Raft ports costs
# (issue 16): bench-meta (3 voters in one process, PutObject commits with
# 1 and 64 in flight, p50/p99/max per op from submit to commit) run plain,
# TLS, TLS, plain (ABBA) with a meta certificate from a CA made here.
#
#   bench/raft_tls_abba.sh [BUILD_DIR] [DURATION]      (build, 3s)
#
# Prints each run's table; data and certificates on /dev/shm, removed.
set -eu
B=${1:-build}
D=${2:-3s}
DIR=$(mktemp -d /dev/shm/iolake-raft-tls-abba-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$B/iolake-admin" ca init --dir "$DIR/ca" >/dev/null
"$B/iolake-admin" ca issue --dir "$DIR/ca" --name bench-meta --role meta --ip 127.0.0.1 \
	--out "$DIR/m" >/dev/null
TLS=(--rpc-tls-ca "$DIR/ca/ca.pem" --rpc-tls-cert "$DIR/m.pem" --rpc-tls-key "$DIR/m.key")
for run in plain tls tls plain; do
	echo "== $run"
	if [ "$run" = tls ]; then
		"$B/bench-meta" --duration "$D" "${TLS[@]}"
	else
		"$B/bench-meta" --duration "$D"
	fi
done
