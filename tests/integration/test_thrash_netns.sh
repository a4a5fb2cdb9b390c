#!/bin/bash
# test_thrash_netns.sh — random faults under a verified load on a real
# six-node cluster in network namespaces (infra/netns-cluster.sh: 6 nodes
# x 2 OSDs, EC 4+2, failure domain = node, six meta voters), driven by
# thrash_netns.py: OSDs, meta members and whole nodes SIGKILLed and
# restarted, drives destroyed and rebuilt, nodes partitioned, processes
# stopped (SIGSTOP) and continued, links slowed and lossy, at most two
# nodes at a time; then every fault ended, the cluster healthy again, and
# every acknowledged byte read back and the bucket listed against the
# writers' model. Fails on any wrong byte, lost or resurrected key, or
# process that died by itself.
#
# THRASH_SECONDS (default 75) sizes the run (`make soak-thrash` runs it
# for 30 minutes); THRASH_FAULTS picks fault kinds (default all);
# SEED replays a run's choices (the timing of a real cluster does not
# replay). Needs root and `ip netns` (else SKIP).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
NETNS_TEST=test_thrash_netns
# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
. "$HERE/netns_lib.sh"
SECS=${THRASH_SECONDS:-75}
FAULTS=${THRASH_FAULTS:-osd,drive,meta,node,isolate,pause,slow}

# A process that dies by itself leaves a core in its node's directory
# (netns-cluster.sh runs each there); thrash_netns.py prints its stack.
ulimit -c unlimited
step "up: 6 nodes x 2 OSDs, EC 4+2; thrash for $SECS s, faults $FAULTS, seed $SEED"
# OSD files are sparse, 1G each, so 12 of them fit in tmpfs whatever
# happens (12 x 4G ran a 24 GiB machine out of memory once, when the
# allocator's next-fit still grew the files to 3-4 x their live data).
# Orphans of failed writes are swept after 2 minutes instead of 24 hours:
# that bounds them too, and puts the sweep's deletes under the same faults
# and the same byte-for-byte check.
"$CL" up --dir "$DIR" --build "$B" --prefix "$PFX" --subnet "$SUBNET" --nodes 6 --osds-per-node 2 \
	--ec 4+2 --osd-size 1G --osd-down-after 3s --osd-out-after 15s \
	--osd-flags "--orphan-grace 120s --orphan-scan-interval 30s" || fail "up"
python3 "$HERE/thrash_netns.py" --dir "$DIR" --cl "$CL" --seconds "$SECS" --seed "$SEED" \
	--faults "$FAULTS" || fail "thrash (seed $SEED): see the violations above"
step "PASS $NETNS_TEST"
