#!/bin/bash
# netns-cluster.sh — a real N-node IOLake cluster on one Linux host, one
# network namespace per node, for tests that kill, isolate or slow a node.
#
# Each node I (1..N) is a namespace PREFIX-nI with one veth (eth0,
# SUBNET.I/24) into a bridge PREFIX-br in the root namespace (which holds
# SUBNET.254, so clients on the host reach every node). Node I runs one
# iolake-meta (every node is a voter), K iolake-osd (--host nI: the node is
# the failure domain) on sparse files under DIR/nI, and one iolake-gw.
# Everything the script creates is recorded under DIR (state, pids), and
# `down` removes exactly that: the recorded processes (by PID, checked
# against their command line), namespaces and links. Needs root
# (CAP_NET_ADMIN, CAP_SYS_ADMIN for `ip netns`).
#
# Usage: see usage() below or infra/README.md.
set -euo pipefail

PROG=${0##*/}

usage() {
	cat <<'EOF'
Usage:
  netns-cluster.sh up --dir DIR --build BUILD [--nodes 6] [--osds-per-node 2]
                   [--prefix iol] [--subnet 10.77.0] [--ec 4+2] [--osd-size 256M]
                   [--osd-down-after 10s] [--osd-out-after 1h] [--timeout 60]
                   [--osd-flags "--recovery-rate 32M ..."]
                   [--meta-flags "--snapshot-bytes 8M ..."]
                   [--gw-flags "--rate-per-user 100 ..."] [--rpc-tls]
                   --rpc-tls: mutual TLS on every RPC port: a cluster CA in
                   DIR/ca (iolake-admin ca init), a certificate per node
                   (DIR/nI/node.pem, its IP) and one for iolake-admin
  netns-cluster.sh down    --dir DIR
  netns-cluster.sh status  --dir DIR
  netns-cluster.sh kill    --dir DIR NODE     SIGKILL every process of NODE
  netns-cluster.sh start   --dir DIR NODE     restart NODE's processes on its data
  netns-cluster.sh rolling-restart --dir DIR [--timeout 60]
                                             node after node: SIGTERM, start on its
                                             data, wait for `iolake-admin cluster
                                             wait-healthy` before the next
  netns-cluster.sh kill-meta  --dir DIR NODE   SIGKILL NODE's meta member only
  netns-cluster.sh start-meta --dir DIR NODE   restart NODE's meta member on its data
  netns-cluster.sh kill-osd  --dir DIR NODE J [--destroy]
                                             SIGKILL NODE's OSD J; --destroy also
                                             deletes its device file and index
                                             (a dead drive)
  netns-cluster.sh start-osd --dir DIR NODE J  restart NODE's OSD J (on a new,
                                             formatted drive, same id, when
                                             --destroy removed it)
  netns-cluster.sh add-node  --dir DIR         one more node (OSDs and a gateway,
                                             no meta member): expansion
  netns-cluster.sh isolate --dir DIR NODE     NODE's link down (a partition)
  netns-cluster.sh heal    --dir DIR NODE     NODE's link up again
  netns-cluster.sh slow    --dir DIR NODE [--delay 50ms] [--loss 1%] [--rate 8mbit]
  netns-cluster.sh unslow  --dir DIR NODE
  netns-cluster.sh exec    --dir DIR NODE -- CMD [ARGS...]
NODE is a node number (1..N) or nI.
EOF
}

die() {
	echo "$PROG: $*" >&2
	exit 1
}

log() { echo "$PROG: $*" >&2; }

# ------------------------------------------------------------------ state

# DIR/state holds KEY=VALUE lines written by `up`; read back without
# evaluating anything (only known keys, values checked when used).
load_state() {
	[ -f "$DIR/state" ] || die "no cluster state in $DIR (run up first)"
	local key val
	while IFS='=' read -r key val; do
		case "$key" in
		PREFIX) PREFIX=$val ;;
		NODES) NODES=$val ;;
		MEMBERS) MEMBERS=$val ;;
		OSDS) OSDS=$val ;;
		SUBNET) SUBNET=$val ;;
		BUILD) BUILD=$val ;;
		EC) EC=$val ;;
		OSD_SIZE) OSD_SIZE=$val ;;
		DOWN_AFTER) DOWN_AFTER=$val ;;
		OUT_AFTER) OUT_AFTER=$val ;;
		OSD_FLAGS) OSD_FLAGS=$val ;;
		META_FLAGS) META_FLAGS=$val ;;
		GW_FLAGS) GW_FLAGS=$val ;;
		RPC_TLS) RPC_TLS=$val ;;
		BRIDGE) BRIDGE=$val ;;
		NETNS) ;;  # one line per namespace, read by down
		VETH) ;;   # one line per root-side veth, read by down
		*) die "unknown key '$key' in $DIR/state" ;;
		esac
	done <"$DIR/state"
	# A state written before add-node existed: every node is a member.
	MEMBERS=${MEMBERS:-$NODES}
}

ns_name() { echo "$PREFIX-n$1"; }
veth_name() { echo "$PREFIX-v$1"; }
node_ip() { echo "$SUBNET.$1"; }

META_PORT=7000   # Raft on META_PORT + 1
OSD_PORT0=7100   # OSD j listens on OSD_PORT0 + j
S3_PORT=9000

meta_addrs() {
	local i out=""
	for i in $(seq 1 "$MEMBERS"); do out="$out${out:+,}$(node_ip "$i"):$META_PORT"; done
	echo "$out"
}

meta_peers() {
	local i out=""
	for i in $(seq 1 "$MEMBERS"); do out="$out${out:+,}$i@$(node_ip "$i"):$META_PORT"; done
	echo "$out"
}

# node_arg ARG: "3" or "n3" -> 3, checked against NODES.
node_arg() {
	local n=${1#n}
	case "$n" in '' | *[!0-9]*) die "bad node '$1' (a number 1..$NODES or nI)" ;; esac
	if [ "$n" -lt 1 ] || [ "$n" -gt "$NODES" ]; then die "node $n out of range 1..$NODES"; fi
	echo "$n"
}

# ------------------------------------------------------------------ processes

# spawn NODE ROLE BINARY ARGS...: run BINARY inside NODE's namespace in the
# background (ip netns exec execs it, so $! is the service's own PID), log
# to DIR/nI/ROLE.log, record "nI ROLE PID".
spawn() {
	local node=$1 role=$2 bin=$3
	shift 3
	# The environment marks the process as this cluster's (see ours());
	# the subshell and env exec, so the PID stays the service's. Its
	# working directory is its node's: a core dump (if the caller's ulimit
	# allows one and core_pattern is a plain name) lands in DIR/nI.
	(cd "$DIR/n$node" && exec ip netns exec "$(ns_name "$node")" env "IOLAKE_NETNS_CLUSTER=$DIR" \
		"$BUILD/$bin" "$@") </dev/null >>"$DIR/n$node/$role.log" 2>&1 &
	echo "n$node $role $!" >>"$DIR/pids"
}

# start_osd NODE J: NODE's OSD J on its device file; a missing file (a
# new cluster, or a drive destroyed by kill-osd --destroy) is created
# sparse and formatted: the same OSD id on a blank drive.
start_osd() {
	local n=$1 j=$2 id fmt=() extra=()
	id=$(((n - 1) * OSDS + j))
	if [ ! -e "$DIR/n$n/osd$j.dev" ]; then
		# Sparse: N*K files of OSD_SIZE on tmpfs cost only what is written.
		truncate -s "$OSD_SIZE" "$DIR/n$n/osd$j.dev"
		rm -rf "$DIR/n$n/osd$j.idx"
		fmt=(--format)
	fi
	# shellcheck disable=SC2206  # OSD_FLAGS is a flag list, split on spaces
	[ -z "$OSD_FLAGS" ] || extra=($OSD_FLAGS)
	# shellcheck disable=SC2046  # tls_flags: a flag list, split on spaces
	spawn "$n" "osd$j" iolake-osd --id "$id" --device "$DIR/n$n/osd$j.dev" \
		--meta-dir "$DIR/n$n/osd$j.idx" --listen "$(node_ip "$n"):$((OSD_PORT0 + j))" \
		--meta "$(meta_addrs)" --host "n$n" "${fmt[@]}" $(tls_flags "n$n") "${extra[@]}"
}

# start_meta NODE: NODE's meta member on its data.
start_meta() {
	local n=$1 extra=()
	# shellcheck disable=SC2206  # META_FLAGS is a flag list, split on spaces
	[ -z "$META_FLAGS" ] || extra=($META_FLAGS)
	# The first PG table waits for every OSD of `up` and is placed in rank
	# order (not join order); a restart has a map already and ignores it.
	# shellcheck disable=SC2046  # tls_flags: a flag list, split on spaces
	spawn "$n" meta iolake-meta --id "$n" --data-dir "$DIR/n$n/meta" \
		--listen "$(node_ip "$n"):$META_PORT" --peers "$(meta_peers)" \
		--osd-down-after "$DOWN_AFTER" --osd-out-after "$OUT_AFTER" --ec "$EC" \
		--expect-osds $((NODES * OSDS)) $(tls_flags "n$n") "${extra[@]}"
}

# --rpc-tls: the cluster CA (once, by up) and a certificate per node (its
# IP) or for iolake-admin ("admin", made beside the CA); tls_flags prints
# the --rpc-tls-* flags of one (nothing without --rpc-tls). Paths have no
# spaces (DIR is checked by up).
make_ca() {
	[ "$RPC_TLS" = 1 ] || return 0
	[ -f "$DIR/ca/ca.pem" ] || "$BUILD/iolake-admin" ca init --dir "$DIR/ca" >/dev/null ||
		die "up: iolake-admin ca init failed"
	[ -f "$DIR/ca/admin.pem" ] || "$BUILD/iolake-admin" ca issue --dir "$DIR/ca" --name admin \
		--role admin --out "$DIR/ca/admin" >/dev/null || die "up: iolake-admin ca issue admin failed"
}
node_cert() {
	local n=$1
	[ "$RPC_TLS" = 1 ] && [ ! -f "$DIR/n$n/node.pem" ] || return 0
	# One certificate per node, shared by its member, OSDs and gateway:
	# every role (issue 16's per-process roles would need one each).
	"$BUILD/iolake-admin" ca issue --dir "$DIR/ca" --name "n$n" --ip "$(node_ip "$n")" \
		--role meta,osd,gw,admin --node "$n" --out "$DIR/n$n/node" >/dev/null || die "iolake-admin ca issue n$n failed"
}
tls_flags() {
	[ "$RPC_TLS" = 1 ] || return 0
	local p=$DIR/$1/node
	[ "$1" = admin ] && p=$DIR/ca/admin
	echo "--rpc-tls-ca $DIR/ca/ca.pem --rpc-tls-cert $p.pem --rpc-tls-key $p.key"
}

start_node() {
	local n=$1 j
	mkdir -p "$DIR/n$n"
	node_cert "$n"
	# Nodes added after up (add-node) hold OSDs and a gateway, no member.
	[ "$n" -gt "$MEMBERS" ] || start_meta "$n"
	for j in $(seq 1 "$OSDS"); do start_osd "$n" "$j"; done
	local gwx=()
	# shellcheck disable=SC2206  # GW_FLAGS is a flag list, split on spaces
	[ -z "$GW_FLAGS" ] || gwx=($GW_FLAGS)
	# shellcheck disable=SC2046  # tls_flags: a flag list, split on spaces
	spawn "$n" gw iolake-gw --s3-listen "$(node_ip "$n"):$S3_PORT" --meta "$(meta_addrs)" --ec "$EC" \
		$(tls_flags "n$n") "${gwx[@]}"
}

# ours PID: the process is alive and is one of this cluster's: its
# environment holds IOLAKE_NETNS_CLUSTER=DIR (spawn sets it; command lines
# do not do: iolake-gw's names no directory). A PID reused by another
# process is never signalled.
ours() {
	local e st
	# A process, not a thread of one: /proc/TID answers for every thread
	# too (hidden from listings only), with its process's environment, and
	# a recorded PID long dead comes back as some thread's id in a long run
	# (thread ids share the PID space). SIGKILL to such a "PID" kills the
	# whole process the thread belongs to.
	st=$(cat "/proc/$1/status" 2>/dev/null) || return 1
	[[ $st == *$'\n'"Tgid:"$'\t'"$1"$'\n'* ]] || return 1
	# Read whole, then match ("tr | grep -q" under pipefail can fail with
	# SIGPIPE after a match). A zombie's environ reads empty: not alive.
	e=$(tr '\0' '\n' 2>/dev/null <"/proc/$1/environ") || return 1
	[[ $'\n'$e$'\n' == *$'\n'"IOLAKE_NETNS_CLUSTER=$DIR"$'\n'* ]]
}

# is_role PID nI ROLE: ours, and the process DIR/pids recorded as nI's
# ROLE: its command line names that node's meta dir, OSD device or S3
# address. Over a long run (a soak spawns thousands of processes) a PID
# recorded for a process long dead can come back as another process of
# this cluster; ours alone would take it for the dead one.
is_role() {
	local c n=${2#n} want
	ours "$1" || return 1
	case "$3" in
	meta) want=" --data-dir $DIR/n$n/meta " ;;
	gw) want=" --s3-listen $(node_ip "$n"):$S3_PORT " ;;
	osd*) want=" --device $DIR/n$n/$3.dev " ;;
	*) return 1 ;;
	esac
	c=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") || return 1
	[[ " $c" == *"$want"* ]]
}

# node_pids NODE (or "all"): PIDs recorded for it that are still its.
node_pids() {
	local node role pid
	[ -f "$DIR/pids" ] || return 0
	while read -r node role pid; do
		[ "$1" = all ] || [ "$node" = "n$1" ] || continue
		if is_role "$pid" "$node" "$role"; then echo "$pid"; fi
	done <"$DIR/pids"
	return 0
}

# stop_pids SIGNAL_FIRST PID...: send SIGNAL_FIRST, wait up to 10 s, then
# SIGKILL what is left and wait until it is gone.
stop_pids() {
	local sig=$1 p left i
	shift
	[ $# -gt 0 ] || return 0
	for p in "$@"; do kill "-$sig" "$p" 2>/dev/null || true; done
	for i in $(seq 100); do
		left=""
		for p in "$@"; do if ours "$p"; then left="$left $p"; fi; done
		[ -n "$left" ] || return 0
		[ "$sig" = KILL ] || [ "$i" -lt 100 ] || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	[ -z "$left" ] || { log "still running after SIG$sig, sending SIGKILL:$left"; kill -KILL $left 2>/dev/null || true; }
	for i in $(seq 50); do
		left=""
		for p in "$@"; do if ours "$p"; then left="$left $p"; fi; done
		[ -n "$left" ] || return 0
		sleep 0.1
	done
	die "processes did not exit after SIGKILL:$left"
}

# ------------------------------------------------------------------ waiting

# shellcheck disable=SC2046  # tls_flags: a flag list, split on spaces
admin() { "$BUILD/iolake-admin" $(tls_flags admin) --meta "$(meta_addrs)" --timeout 3s "$@"; }

# until_ok WHAT SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
until_ok() {
	local what=$1 secs=$2 end=$(($(date +%s) + $2))
	shift 2
	while [ "$(date +%s)" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	# One last attempt, its output kept to say why. Only after a timeout:
	# asking again after a success could meet a state that moved on.
	local last
	if last=$("$@" 2>&1); then return 0; fi
	[ -z "$last" ] || printf '%s\n' "$last" | tail -20 | sed "s/^/$PROG: last attempt: /" >&2
	die "timed out after ${secs}s waiting for $what (logs: $DIR/n*/*.log)"
}

has_leader() {
	admin --json cluster status | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["leaders"] == 1 else 1)'
}

# osds_up [NODE]: every OSD (or every OSD of NODE) is up in the map.
osds_up() {
	admin --json osd ls | python3 -c '
import json, sys
want, node = int(sys.argv[1]), sys.argv[2]
d = json.load(sys.stdin)
osds = d["osds"] if isinstance(d, dict) else d
if node:
    osds = [o for o in osds if o.get("host") == node]
ok = len(osds) == want and all(o.get("up") for o in osds)
if not ok:
    print("want %d up%s; map epoch %s has %s" % (want, " on " + node if node else "",
          d.get("epoch") if isinstance(d, dict) else "?",
          [(o.get("id"), o.get("host"), o.get("up"), o.get("in")) for o in osds]), file=sys.stderr)
sys.exit(0 if ok else 1)' "$@"
}

# gw_ready NODE: its gateway answers /health/ready 200; else says what it
# answered (000: nothing in 2 s) and what its /metrics says of its map.
gw_ready() {
	local url out code
	url="http://$(node_ip "$1"):$S3_PORT"
	out=$(curl -s -m 2 -w '\n%{http_code}' "$url/health/ready")
	code=${out##*$'\n'}
	[ "$code" = 200 ] && return 0
	echo "node $1's gateway: /health/ready answered $code: ${out%$'\n'*}"
	curl -s -m 2 "$url/metrics" | grep -E '^iolake_gw_(map_epoch|osds_up|loops_ready|loop_connections_total)'
	# its S3 listener's accept queue (Recv-Q) and backlog (Send-Q)
	ip netns exec "$(ns_name "$1")" ss -Hltn "sport = :$S3_PORT" 2>&1
	return 1
}

# member_answers NODE: NODE's meta member answers Status.
# shellcheck disable=SC2046
member_answers() { "$BUILD/iolake-admin" $(tls_flags admin) --meta "$(node_ip "$1"):$META_PORT" --timeout 2s cluster status; }

# registered NODE OSD COUNT: the OSD's log holds more than COUNT
# "registered with meta" lines (COUNT taken before it was started).
registered() { [ "$(grep -c 'msg="registered with meta"' "$DIR/n$1/osd$2.log")" -gt "$3" ]; }

# start_node_wait NODE: start_node, then wait until this start's processes
# serve: the member answers, each OSD registered anew, the gateway is ready.
# (The map may still show the node's OSDs up from before a kill, so "up in
# the map" alone would not show that the new processes run.)
start_node_wait() {
	local n=$1 j before=()
	for j in $(seq 1 "$OSDS"); do
		before[j]=$(grep -c 'msg="registered with meta"' "$DIR/n$n/osd$j.log" 2>/dev/null || true)
		before[j]=${before[j]:-0}
	done
	local first
	first=$(($(wc -l <"$DIR/pids") + 1))
	start_node "$n"
	[ "$n" -gt "$MEMBERS" ] || until_ok "node $n's meta member to answer" "$TIMEOUT" member_answers "$n"
	for j in $(seq 1 "$OSDS"); do
		until_ok "node $n's osd$j to register with meta" "$TIMEOUT" registered "$n" "$j" "${before[j]}"
	done
	until_ok "node $n's OSDs up in the map" "$TIMEOUT" osds_up "$OSDS" "n$n"
	until_ok "node $n's gateway /health/ready" "$TIMEOUT" gw_ready "$n"
	check_started "$n" "$first"
}

# ------------------------------------------------------------------ verbs

cmd_up() {
	[ -n "$BUILD" ] || die "up: --build BUILD is required"
	BUILD=$(cd "$BUILD" && pwd)
	local b
	for b in iolake-meta iolake-osd iolake-gw iolake-admin; do
		[ -x "$BUILD/$b" ] || die "up: $BUILD/$b missing (make first)"
	done
	case "$PREFIX" in *[!a-z0-9]* | '') die "up: --prefix: lower-case letters and digits only" ;; esac
	# Interface names are at most 15 bytes: PREFIX-v99.
	[ ${#PREFIX} -le 10 ] || die "up: --prefix: at most 10 characters"
	[[ $SUBNET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "up: --subnet: three octets, e.g. 10.77.0"
	[[ $NODES =~ ^[1-9][0-9]?$ ]] || die "up: --nodes: 1..99"
	[[ $OSDS =~ ^[1-9][0-9]?$ ]] || die "up: --osds-per-node: 1..99"
	[[ $EC =~ ^[0-9]+\+[0-9]+$ ]] || die "up: --ec: K+M"
	if [ -f "$DIR/state" ]; then die "up: $DIR/state exists: a cluster is (or was) up there; run down first"; fi
	if [[ $'\n'$(ip netns list) == *$'\n'"$PREFIX-n"* ]]; then die "up: namespaces $PREFIX-n* exist already"; fi
	ip link show "$PREFIX-br" >/dev/null 2>&1 && die "up: link $PREFIX-br exists already"
	if [[ $(ip -4 addr show) == *"inet $SUBNET."* ]]; then die "up: $SUBNET.0/24 is in use on this host (--subnet)"; fi
	mkdir -p "$DIR"
	DIR=$(cd "$DIR" && pwd)
	case "$DIR" in *[[:space:]]*) die "up: --dir: no spaces in the path" ;; esac
	BRIDGE=$PREFIX-br
	MEMBERS=$NODES

	# Record each name before creating it, so down removes whatever exists
	# even when up fails half way.
	{
		echo "PREFIX=$PREFIX"
		echo "NODES=$NODES"
		echo "MEMBERS=$NODES"
		echo "OSDS=$OSDS"
		echo "SUBNET=$SUBNET"
		echo "BUILD=$BUILD"
		echo "EC=$EC"
		echo "OSD_SIZE=$OSD_SIZE"
		echo "DOWN_AFTER=$DOWN_AFTER"
		echo "OUT_AFTER=$OUT_AFTER"
		echo "OSD_FLAGS=$OSD_FLAGS"
		echo "META_FLAGS=$META_FLAGS"
		echo "GW_FLAGS=$GW_FLAGS"
		echo "RPC_TLS=$RPC_TLS"
		echo "BRIDGE=$BRIDGE"
	} >"$DIR/state"
	: >"$DIR/pids"
	ip link add "$BRIDGE" type bridge
	ip addr add "$SUBNET.254/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	local n
	make_ca
	for n in $(seq 1 "$NODES"); do node_net "$n"; done
	for n in $(seq 1 "$NODES"); do start_node "$n"; done
	until_ok "a meta leader" "$TIMEOUT" has_leader
	until_ok "all $((NODES * OSDS)) OSDs up in the map" "$TIMEOUT" osds_up $((NODES * OSDS)) ""
	for n in $(seq 1 "$NODES"); do until_ok "node $n's gateway /health/ready" "$TIMEOUT" gw_ready "$n"; done
	if [ ! -s "$DIR/credentials" ]; then
		# iolake-meta and iolake-gw create no root user (only iolake-aio
		# does): make one and keep its key, as iolake-aio keeps its own.
		local out
		out=$(admin --json user add root) || die "up: iolake-admin user add root failed"
		(
			umask 077
			python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print("AWS_ACCESS_KEY_ID=" + d["access_key"])
print("AWS_SECRET_ACCESS_KEY=" + d["secret_key"])' "$out" >"$DIR/credentials"
		)
	fi
	cmd_status
}

# node_net NODE: NODE's namespace and its veth into the bridge (each name
# recorded in DIR/state before it is created).
node_net() {
	local n=$1 ns v
	ns=$(ns_name "$n")
	v=$(veth_name "$n")
	echo "NETNS=$ns" >>"$DIR/state"
	ip netns add "$ns"
	echo "VETH=$v" >>"$DIR/state"
	ip link add "$v" type veth peer name "$PREFIX-p$n"
	ip link set "$PREFIX-p$n" netns "$ns"
	ip -n "$ns" link set "$PREFIX-p$n" name eth0
	ip -n "$ns" addr add "$(node_ip "$n")/24" dev eth0
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 up
	ip link set "$v" master "$BRIDGE"
	ip link set "$v" up
}

# add-node: node NODES+1 with its OSDs (new drives) and a gateway, no meta
# member: cluster expansion. Returns once its OSDs are up in the map.
cmd_add_node() {
	local n=$((NODES + 1))
	[ "$n" -le 99 ] || die "add-node: at most 99 nodes"
	node_net "$n"
	sed -i "s/^NODES=.*/NODES=$n/" "$DIR/state"
	NODES=$n
	start_node_wait "$n"
	log "added node $n ($(node_ip "$n")): $OSDS OSDs, a gateway, no meta member"
}

cmd_status() {
	local n
	echo "nodes: $NODES (namespaces $PREFIX-n1..$PREFIX-n$NODES, bridge $BRIDGE, $SUBNET.0/24)"
	echo "meta: $(meta_addrs) ($MEMBERS members)"
	[ "$RPC_TLS" != 1 ] || echo "rpc: mutual TLS, CA $DIR/ca/ca.pem (iolake-admin: $(tls_flags admin))"
	for n in $(seq 1 "$NODES"); do echo "s3 endpoint n$n: http://$(node_ip "$n"):$S3_PORT"; done
	echo "credentials ($DIR/credentials):"
	sed 's/^/  /' "$DIR/credentials"
}

cmd_down() {
	if [ ! -f "$DIR/state" ]; then
		log "down: no state in $DIR: nothing to do"
		return 0
	fi
	load_state
	local key val
	local n all
	all=$(node_pids all)
	# Also any process of this cluster in its namespaces that was not
	# recorded: deleting a namespace does not end what runs in it.
	for n in $(seq 1 "$NODES"); do all="$all $(ns_ours "$n")"; done
	# shellcheck disable=SC2046
	stop_pids TERM $(echo "$all" | tr ' ' '\n' | sort -un)
	rm -f "$DIR/pids"
	# Links first: deleting a veth end removes its peer at once, while a
	# deleted namespace takes its interfaces away asynchronously.
	while IFS='=' read -r key val; do
		if [ "$key" = VETH ] && ip link show "$val" >/dev/null 2>&1; then ip link del "$val"; fi
	done <"$DIR/state"
	while IFS='=' read -r key val; do
		if [ "$key" = NETNS ] && [ -e "/run/netns/$val" ]; then ip netns del "$val"; fi
	done <"$DIR/state"
	if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
	rm -f "$DIR/state"
	log "down: stopped, namespaces and links of $PREFIX removed (data left in $DIR)"
}

# ns_ours NODE: PIDs of this cluster's processes inside NODE's namespace,
# whether recorded or not (ip netns pids sees every process in it).
ns_ours() {
	local p
	for p in $(ip netns pids "$(ns_name "$1")" 2>/dev/null); do
		if ours "$p"; then echo "$p"; fi
	done
	return 0
}

cmd_kill() {
	local n left
	n=$(node_arg "$1")
	# shellcheck disable=SC2046
	stop_pids KILL $(node_pids "$n")
	left=$(ns_ours "$n")
	if [ -n "$left" ]; then
		# Not recorded (or missed): the node must be empty all the same.
		log "kill: unrecorded processes in node $n: $(echo "$left" | tr '\n' ' ')"
		# shellcheck disable=SC2086
		stop_pids KILL $left
	fi
	log "killed node $n"
}

# osd_arg J: an OSD number of a node, 1..OSDS.
osd_arg() {
	case "$1" in '' | *[!0-9]*) die "bad OSD number '$1' (1..$OSDS)" ;; esac
	if [ "$1" -lt 1 ] || [ "$1" -gt "$OSDS" ]; then die "OSD $1 out of range 1..$OSDS"; fi
	echo "$1"
}

# role_pids NODE ROLE: PIDs recorded for NODE's ROLE that are still its.
role_pids() {
	local node role pid
	[ -f "$DIR/pids" ] || return 0
	while read -r node role pid; do
		if [ "$node" = "n$1" ] && [ "$role" = "$2" ] && is_role "$pid" "$node" "$role"; then
			echo "$pid"
		fi
	done <"$DIR/pids"
	return 0
}

cmd_kill_osd() {
	local n j
	n=$(node_arg "$1")
	j=$(osd_arg "$2")
	local pids
	pids=$(role_pids "$n" "osd$j" | paste -sd' ')
	# shellcheck disable=SC2086
	stop_pids KILL $pids
	if [ "$DESTROY" = 1 ]; then
		rm -rf "$DIR/n$n/osd$j.dev" "$DIR/n$n/osd$j.idx"
		log "killed node $n's osd$j (id $(((n - 1) * OSDS + j)), pid ${pids:-none running}) and destroyed its drive"
	else
		log "killed node $n's osd$j (id $(((n - 1) * OSDS + j)), pid ${pids:-none running})"
	fi
}

cmd_start_osd() {
	local n j before first
	n=$(node_arg "$1")
	j=$(osd_arg "$2")
	[ -z "$(role_pids "$n" "osd$j")" ] || die "start-osd: node $n's osd$j is running (kill-osd it first)"
	before=$(grep -c 'msg="registered with meta"' "$DIR/n$n/osd$j.log" 2>/dev/null || true)
	first=$(($(wc -l <"$DIR/pids") + 1))
	start_osd "$n" "$j"
	until_ok "node $n's osd$j to register with meta" "$TIMEOUT" registered "$n" "$j" "${before:-0}"
	check_started "$n" "$first"
	log "started node $n's osd$j"
}

# check_started NODE FIRST_LINE: every process recorded for NODE from line
# FIRST_LINE of DIR/pids on is still running (a port still held by an old
# process, say, makes a new one exit at once).
check_started() {
	local node role pid
	while read -r node role pid; do
		[ "$node" = "n$1" ] || continue
		is_role "$pid" "$node" "$role" || die "node $1: $role (pid $pid) exited: $(tail -3 "$DIR/n$1/$role.log")"
	done < <(tail -n "+$2" "$DIR/pids")
}

meta_node_arg() {
	local n
	n=$(node_arg "$1")
	[ "$n" -le "$MEMBERS" ] || die "node $n runs no meta member (members are nodes 1..$MEMBERS)"
	echo "$n"
}

cmd_kill_meta() {
	local n
	n=$(meta_node_arg "$1")
	local pids
	pids=$(role_pids "$n" meta | paste -sd' ')
	# shellcheck disable=SC2086
	stop_pids KILL $pids
	log "killed node $n's meta member (pid ${pids:-none running})"
}

cmd_start_meta() {
	local n first
	n=$(meta_node_arg "$1")
	[ -z "$(role_pids "$n" meta)" ] || die "start-meta: node $n's member is running (kill-meta it first)"
	first=$(($(wc -l <"$DIR/pids") + 1))
	start_meta "$n"
	until_ok "node $n's meta member to answer" "$TIMEOUT" member_answers "$n"
	check_started "$n" "$first"
	log "started node $n's meta member"
}

cmd_start() {
	local n
	n=$(node_arg "$1")
	[ -z "$(node_pids "$n")$(ns_ours "$n")" ] || die "start: node $n still has processes running (kill it first)"
	[ -d "$DIR/n$n/meta" ] || [ "$n" -gt "$MEMBERS" ] || die "start: node $n has no data under $DIR/n$n"
	start_node_wait "$n"
	log "started node $n"
}

# rolling-restart: as infra/deploy/deploy.sh --rolling does with systemd:
# healthy first, then node after node stopped (SIGTERM, SIGKILL after 10 s)
# and started on its data, and the whole cluster healthy again (every
# member answering with a leader, every OSD up and in, every PG
# active+clean) within --timeout before the next node.
cmd_rolling_restart() {
	local n t0
	admin_wait() { admin cluster wait-healthy "$TIMEOUT" >&2; }
	admin_wait || die "rolling-restart: the cluster is not healthy; not starting"
	for n in $(seq 1 "$NODES"); do
		t0=$(date +%s%N)
		# shellcheck disable=SC2046
		stop_pids TERM $(node_pids "$n")
		start_node_wait "$n"
		admin_wait || die "rolling-restart: not healthy within $TIMEOUT s after node $n; stopping here"
		log "rolling-restart: node $n restarted, cluster healthy again after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	done
}

cmd_isolate() {
	local n
	n=$(node_arg "$1")
	ip link set "$(veth_name "$n")" down
	log "isolated node $n ($(veth_name "$n") down)"
}

cmd_heal() {
	local n
	n=$(node_arg "$1")
	ip link set "$(veth_name "$n")" up
	log "healed node $n ($(veth_name "$n") up)"
}

# tc_both NODE ARGS...: run "tc qdisc ARGS" on both ends of NODE's link
# (root side, then eth0 in the namespace), so both directions are shaped.
tc_both() {
	local n=$1
	shift
	tc qdisc "$1" dev "$(veth_name "$n")" "${@:2}" &&
		ip netns exec "$(ns_name "$n")" tc qdisc "$1" dev eth0 "${@:2}"
}

cmd_slow() {
	local n delay="" loss="" rate="" err
	n=$(node_arg "$1")
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--delay) delay=${2:?--delay needs a value}; shift 2 ;;
		--loss) loss=${2:?--loss needs a value}; shift 2 ;;
		--rate) rate=${2:?--rate needs a value}; shift 2 ;;
		*) die "slow: unknown flag $1" ;;
		esac
	done
	[ -n "$delay$loss$rate" ] || die "slow: give --delay, --loss and/or --rate"
	if [ -n "$delay$loss" ]; then
		local args=(netem)
		[ -z "$delay" ] || args+=(delay "$delay")
		[ -z "$loss" ] || args+=(loss "$loss")
		[ -z "$rate" ] || args+=(rate "$rate")
		if ! err=$(tc_both "$n" replace root "${args[@]}" 2>&1); then
			if echo "$err" | grep -qi "unknown"; then
				die "slow: tc netem is not available in this kernel (sch_netem not built or not loadable): --delay/--loss cannot be emulated here; --rate alone works (tbf)"
			fi
			die "slow: tc failed: $err"
		fi
	else
		# Rate alone: tbf, built into more kernels than netem.
		err=$(tc_both "$n" replace root tbf rate "$rate" burst 32kbit latency 400ms 2>&1) ||
			die "slow: tc tbf failed: $err"
	fi
	log "node $n slowed:${delay:+ delay $delay each way}${loss:+ loss $loss each way}${rate:+ rate $rate each way}"
}

cmd_unslow() {
	local n
	n=$(node_arg "$1")
	tc qdisc del dev "$(veth_name "$n")" root 2>/dev/null || true
	ip netns exec "$(ns_name "$n")" tc qdisc del dev eth0 root 2>/dev/null || true
	log "node $n: link shaping removed"
}

cmd_exec() {
	local n
	n=$(node_arg "$1")
	shift
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || die "exec: no command"
	exec ip netns exec "$(ns_name "$n")" "$@"
}

# ------------------------------------------------------------------ main

[ $# -ge 1 ] || { usage >&2; exit 2; }
VERB=$1
shift
case "$VERB" in -h | --help | help) usage; exit 0 ;; esac

DIR="" BUILD="" NODES=6 OSDS=2 PREFIX=iol SUBNET=10.77.0 EC=4+2 OSD_SIZE=256M
DOWN_AFTER=10s OUT_AFTER=1h TIMEOUT=60 OSD_FLAGS="" META_FLAGS="" GW_FLAGS="" DESTROY=0 RPC_TLS=0
ARGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) DIR=${2:?--dir needs a value}; shift 2 ;;
	--build) BUILD=${2:?--build needs a value}; shift 2 ;;
	--nodes) NODES=${2:?--nodes needs a value}; shift 2 ;;
	--osds-per-node) OSDS=${2:?--osds-per-node needs a value}; shift 2 ;;
	--prefix) PREFIX=${2:?--prefix needs a value}; shift 2 ;;
	--subnet) SUBNET=${2:?--subnet needs a value}; shift 2 ;;
	--ec) EC=${2:?--ec needs a value}; shift 2 ;;
	--osd-size) OSD_SIZE=${2:?--osd-size needs a value}; shift 2 ;;
	--osd-down-after) DOWN_AFTER=${2:?--osd-down-after needs a value}; shift 2 ;;
	--osd-out-after) OUT_AFTER=${2:?--osd-out-after needs a value}; shift 2 ;;
	--timeout) TIMEOUT=${2:?--timeout needs a value}; shift 2 ;;
	--osd-flags) OSD_FLAGS=${2?--osd-flags needs a value}; shift 2 ;;
	--meta-flags) META_FLAGS=${2?--meta-flags needs a value}; shift 2 ;;
	--gw-flags) GW_FLAGS=${2?--gw-flags needs a value}; shift 2 ;;
	--destroy) DESTROY=1; shift ;;
	--rpc-tls) RPC_TLS=1; shift ;;
	--) ARGS+=("$@"); break ;;
	*) ARGS+=("$1"); shift ;;
	esac
done
[ -n "$DIR" ] || die "$VERB: --dir DIR is required"
# Absolute, as the processes' command lines name it (see ours()).
if [ -d "$DIR" ]; then DIR=$(cd "$DIR" && pwd); fi
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout: whole seconds"

case "$VERB" in
up) [ ${#ARGS[@]} -eq 0 ] || die "up: unexpected argument ${ARGS[0]}"; cmd_up ;;
down) cmd_down ;;
status) load_state; cmd_status ;;
add-node) [ ${#ARGS[@]} -eq 0 ] || die "add-node: no argument expected"; load_state; cmd_add_node ;;
rolling-restart) [ ${#ARGS[@]} -eq 0 ] || die "rolling-restart: no argument expected"; load_state; cmd_rolling_restart ;;
kill | start | isolate | heal | unslow | kill-meta | start-meta)
	[ ${#ARGS[@]} -eq 1 ] || die "$VERB: one NODE expected"
	load_state
	"cmd_${VERB/-/_}" "${ARGS[0]}"
	;;
kill-osd | start-osd)
	[ ${#ARGS[@]} -eq 2 ] || die "$VERB: NODE and OSD number expected"
	load_state
	"cmd_${VERB/-/_}" "${ARGS[@]}"
	;;
slow | exec)
	[ ${#ARGS[@]} -ge 1 ] || die "$VERB: NODE expected"
	load_state
	"cmd_$VERB" "${ARGS[@]}"
	;;
*) usage >&2; exit 2 ;;
esac
