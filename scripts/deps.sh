#!/bin/sh
# Install the Debian packages IOLake builds and tests with, only when some
# are missing: a second run with everything present touches no package
# database. Called by the Makefile; safe to run by hand.
#
# Usage: scripts/deps.sh [--check]   (--check: list what is missing, install nothing)
set -eu

PKGS="build-essential pkg-config dpkg-dev help2man
liburing-dev libisal-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
librocksdb-dev libssl-dev libraft-dev liblz4-dev libuv1-dev libhttp-parser-dev
libexpat1-dev check libfuse3-dev fuse3
clang libclang-rt-14-dev
awscli python3-boto3 python3-requests s3cmd rclone restic s3fs python3-prometheus-client
golang-go golang-github-aws-aws-sdk-go-v2-dev golang-github-aws-aws-sdk-go-dev ruby-aws-sdk-s3
postgresql pgbackrest s3backer davix
nodejs chromium
nginx wrk fio
iproute2 shellcheck"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done

[ -z "$missing" ] && exit 0
if [ "${1:-}" = "--check" ]; then
	echo "missing Debian packages:$missing"
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing Debian packages:$missing" >&2
	echo "deps: run 'sudo scripts/deps.sh' (or make as root) to install them" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
