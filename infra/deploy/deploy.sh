#!/bin/bash
# deploy.sh — install an IOLake cluster on hosts over ssh, as systemd units.
#
# From a cluster description (cluster.conf: see cluster.conf.example) it
# writes, per host, the environment files (/etc/iolake/meta-ID.env,
# osd-ID.env, gw.env) and the units filled in from the templates next to
# this script, into a local staging directory; then, host after host, it
# copies the binaries (renamed into place, so running ones are replaced
# safely), the env files and the units, and runs `systemctl daemon-reload`
# and `systemctl enable --now` on the host's units. With --dry-run it
# prints every command (shell-quoted) and runs none; the staging directory
# is still written, for inspection (--out) or `systemd-analyze verify`.
#
#   deploy.sh --build BUILD [--conf FILE] [--hosts h1,h2,...] [--dry-run]
#             [--out DIR] [--format] [--restart]
#
#   --conf     cluster description (default: cluster.conf next to this script)
#   --hosts    deploy to these hosts of the description only (default: all);
#              the meta peers and addresses always come from the whole file
#   --out      staging directory (default: a temporary one, removed at exit)
#   --format   pass --format to the OSDs: format devices that have no
#              superblock (a new cluster or a new device). Written into the
#              env files: deploy again without it once they are formatted,
#              so a device whose superblock is lost is refused, not formatted
#   --restart  also `systemctl restart` the units (after an upgrade: enable
#              --now does not restart a running service)
#   --rolling  with --restart: one host at a time, and before the first and
#              after each `iolake-admin cluster wait-healthy` (every meta
#              member answering with a leader, every OSD up and in, every PG
#              active+clean), run here against the conf's meta addresses; a
#              host that does not come back healthy within --wait seconds
#              (default 600) stops the rollout, the hosts after it untouched
#
# The cluster key (docs/security.md): CONF.key next to the description,
# made with `iolake-admin cluster init-key` on the first run and kept;
# every host with a meta member or a gateway gets it as
# /etc/iolake/cluster.key (the service user's, mode 0600) and
# --secret-key-file. Keep a copy of it apart from the hosts.
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "$0")" && pwd)

die() {
	echo "$PROG: $*" >&2
	exit 1
}

CONF=$HERE/cluster.conf BUILD="" HOSTS="" DRY="" OUT="" FORMAT="" RESTART="" ROLLING="" WAIT=600
while [ $# -gt 0 ]; do
	case "$1" in
	--conf) CONF=${2:?--conf needs a value}; shift 2 ;;
	--build) BUILD=${2:?--build needs a value}; shift 2 ;;
	--hosts) HOSTS=${2:?--hosts needs a value}; shift 2 ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--dry-run) DRY=1; shift ;;
	--format) FORMAT=1; shift ;;
	--restart) RESTART=1; shift ;;
	--rolling) ROLLING=1; RESTART=1; shift ;;
	--wait) WAIT=${2:?--wait needs seconds}; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
[ -n "$BUILD" ] || die "--build BUILD is required"
[ -d "$BUILD" ] || die "--build: $BUILD: no such directory"
BUILD=$(cd "$BUILD" && pwd)
[ -f "$CONF" ] || die "--conf: $CONF: no such file"
for b in iolake-meta iolake-osd iolake-gw iolake-admin; do
	[ -x "$BUILD/$b" ] || die "--build: $BUILD/$b missing (make first)"
done

# ------------------------------------------------------------------ cluster.conf

EC=4+2 META_PORT=7000 OSD_PORT=7100 S3_PORT=9000 BINDIR=/usr/local/bin
DATADIR=/var/lib/iolake SVC_USER=iolake SSH_USER=root
META_FLAGS="" OSD_FLAGS="" GW_FLAGS=""
H_NAME=() H_ADDR=() H_META=() H_GW=() H_OSDS=()

lineno=0
while IFS= read -r line || [ -n "$line" ]; do
	lineno=$((lineno + 1))
	line=${line%%#*}
	read -r -a w <<<"$line"
	[ ${#w[@]} -gt 0 ] || continue
	bad() { die "$CONF:$lineno: $*"; }
	case "${w[0]}" in
	ec | *_port | bindir | datadir | user | ssh_user)
		[ ${#w[@]} -eq 2 ] || bad "${w[0]} takes one value" ;;
	esac
	case "${w[0]}" in
	ec) [[ ${w[1]:-} =~ ^[0-9]+\+[0-9]+$ ]] || bad "ec K+M"; EC=${w[1]} ;;
	meta_port) [[ ${w[1]:-} =~ ^[0-9]+$ ]] || bad "meta_port PORT"; META_PORT=${w[1]} ;;
	osd_port) [[ ${w[1]:-} =~ ^[0-9]+$ ]] || bad "osd_port PORT"; OSD_PORT=${w[1]} ;;
	s3_port) [[ ${w[1]:-} =~ ^[0-9]+$ ]] || bad "s3_port PORT"; S3_PORT=${w[1]} ;;
	# Paths go into remote shell commands and unit files: no spaces or
	# shell characters.
	bindir) [[ ${w[1]:-} =~ ^/[A-Za-z0-9/._-]*$ ]] || bad "bindir ABSOLUTE_PATH"; BINDIR=${w[1]} ;;
	datadir) [[ ${w[1]:-} =~ ^/[A-Za-z0-9/._-]*$ ]] || bad "datadir ABSOLUTE_PATH"; DATADIR=${w[1]} ;;
	user) [[ ${w[1]:-} =~ ^[a-z_][a-z0-9_-]*$ ]] || bad "user NAME"; SVC_USER=${w[1]} ;;
	ssh_user) [[ ${w[1]:-} =~ ^[a-z_][a-z0-9_-]*$ ]] || bad "ssh_user NAME"; SSH_USER=${w[1]} ;;
	meta_flags) META_FLAGS=${w[*]:1} ;;
	osd_flags) OSD_FLAGS=${w[*]:1} ;;
	gw_flags) GW_FLAGS=${w[*]:1} ;;
	host)
		[ ${#w[@]} -eq 6 ] || bad "host NAME ADDRESS META_ID|- yes|no ID:DEVICE,...|-"
		[[ ${w[1]} =~ ^[A-Za-z0-9._-]+$ ]] || bad "host name '${w[1]}'"
		[[ ${w[2]} =~ ^[A-Za-z0-9.:-]+$ ]] || bad "address '${w[2]}'"
		[[ ${w[3]} =~ ^([1-9][0-9]*|-)$ ]] || bad "META_ID: a number or -"
		[[ ${w[4]} =~ ^(yes|no)$ ]] || bad "GW: yes or no"
		[[ ${w[5]} =~ ^(-|[1-9][0-9]*:/[A-Za-z0-9/._-]+(,[1-9][0-9]*:/[A-Za-z0-9/._-]+)*)$ ]] || bad "OSDS: ID:/DEVICE,... or -"
		H_NAME+=("${w[1]}") H_ADDR+=("${w[2]}") H_META+=("${w[3]}") H_GW+=("${w[4]}") H_OSDS+=("${w[5]}")
		;;
	*) bad "unknown keyword '${w[0]}'" ;;
	esac
done <"$CONF"
[ ${#H_NAME[@]} -gt 0 ] || die "$CONF: no host"
if [ -n "$FORMAT" ]; then OSD_FLAGS="--format${OSD_FLAGS:+ $OSD_FLAGS}"; fi

# Uniqueness: host names, meta ids, OSD ids.
dups() { sort | uniq -d | head -1; }
d=$(printf '%s\n' "${H_NAME[@]}" | dups)
[ -z "$d" ] || die "$CONF: host $d listed twice"
d=$(printf '%s\n' "${H_META[@]}" | grep -v '^-$' | dups || true)
[ -z "$d" ] || die "$CONF: meta id $d used twice"
d=$(printf '%s\n' "${H_OSDS[@]}" | tr ',' '\n' | grep -v '^-$' | cut -d: -f1 | dups || true)
[ -z "$d" ] || die "$CONF: OSD id $d used twice"

PEERS="" METAS=""
for i in "${!H_NAME[@]}"; do
	[ "${H_META[i]}" = - ] && continue
	PEERS="$PEERS${PEERS:+,}${H_META[i]}@${H_ADDR[i]}:$META_PORT"
	METAS="$METAS${METAS:+,}${H_ADDR[i]}:$META_PORT"
done
[ -n "$PEERS" ] || die "$CONF: no host runs a meta member"
# Every OSD of the inventory: a new cluster's first PG table waits for
# them and is placed in rank order, not in the order they register.
NOSDS=$(printf '%s\n' "${H_OSDS[@]}" | tr ',' '\n' | grep -vc '^-$' || true)

SELECTED=()
if [ -z "$HOSTS" ]; then
	SELECTED=("${!H_NAME[@]}")
else
	IFS=, read -r -a want <<<"$HOSTS"
	for h in "${want[@]}"; do
		found=""
		for i in "${!H_NAME[@]}"; do [ "${H_NAME[i]}" = "$h" ] && found=$i; done
		[ -n "$found" ] || die "--hosts: $h is not in $CONF"
		SELECTED+=("$found")
	done
fi

# ------------------------------------------------------------------ staging

if [ -z "$OUT" ]; then
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/iolake-deploy.XXXXXX")
	trap 'rm -rf "$OUT"' EXIT
else
	mkdir -p "$OUT"
fi

# unit TEMPLATE DEST: fill in @BINDIR@ and @USER@.
unit() { sed "s|@BINDIR@|$BINDIR|g; s|@USER@|$SVC_USER|g" "$HERE/$1" >"$2"; }

# The cluster key, made once (locally; a dry run makes it too).
KEY=$CONF.key KEYFLAG="--secret-key-file /etc/iolake/cluster.key"
if [ ! -e "$KEY" ]; then
	"$BUILD/iolake-admin" cluster init-key --out "$KEY" >/dev/null || die "cannot make $KEY"
fi

# stage I: write host I's env files and units under OUT/NAME; sets UNITS.
stage() {
	local i=$1 dir=$OUT/${H_NAME[$1]} spec n=0 id dev
	rm -rf "$dir"
	mkdir -p "$dir/etc/iolake" "$dir/etc/systemd/system"
	UNITS=()
	if [ "${H_META[i]}" != - ] || [ "${H_GW[i]}" = yes ]; then
		install -m 0600 "$KEY" "$dir/etc/iolake/cluster.key"
	fi
	if [ "${H_META[i]}" != - ]; then
		id=${H_META[i]}
		{
			echo "# iolake-meta@$id on ${H_NAME[i]}: written by deploy.sh from $(basename "$CONF")"
			echo "IOLAKE_DATA_DIR=$DATADIR/meta-$id"
			echo "IOLAKE_LISTEN=${H_ADDR[i]}:$META_PORT"
			echo "IOLAKE_PEERS=$PEERS"
			echo "IOLAKE_FLAGS=--ec $EC --expect-osds $NOSDS $KEYFLAG${META_FLAGS:+ $META_FLAGS}"
		} >"$dir/etc/iolake/meta-$id.env"
		unit iolake-meta@.service "$dir/etc/systemd/system/iolake-meta@.service"
		UNITS+=("iolake-meta@$id.service")
	fi
	if [ "${H_OSDS[i]}" != - ]; then
		IFS=, read -r -a spec <<<"${H_OSDS[i]}"
		for s in "${spec[@]}"; do
			id=${s%%:*} dev=${s#*:} n=$((n + 1))
			{
				echo "# iolake-osd@$id on ${H_NAME[i]}: written by deploy.sh from $(basename "$CONF")"
				echo "IOLAKE_DEVICE=$dev"
				echo "IOLAKE_META_DIR=$DATADIR/osd-$id"
				echo "IOLAKE_LISTEN=${H_ADDR[i]}:$((OSD_PORT + n))"
				echo "IOLAKE_META=$METAS"
				echo "IOLAKE_HOST=${H_NAME[i]}"
				echo "IOLAKE_FLAGS=$OSD_FLAGS"
			} >"$dir/etc/iolake/osd-$id.env"
			UNITS+=("iolake-osd@$id.service")
		done
		unit iolake-osd@.service "$dir/etc/systemd/system/iolake-osd@.service"
	fi
	if [ "${H_GW[i]}" = yes ]; then
		{
			echo "# iolake-gw on ${H_NAME[i]}: written by deploy.sh from $(basename "$CONF")"
			echo "IOLAKE_S3_LISTEN=${H_ADDR[i]}:$S3_PORT"
			echo "IOLAKE_META=$METAS"
			echo "IOLAKE_FLAGS=--ec $EC $KEYFLAG${GW_FLAGS:+ $GW_FLAGS}"
		} >"$dir/etc/iolake/gw.env"
		unit iolake-gw.service "$dir/etc/systemd/system/iolake-gw.service"
		UNITS+=("iolake-gw.service")
	fi
}

# ------------------------------------------------------------------ commands

# quote ARG: ARG as the shell reads it back: bare when it has only safe
# characters, else in single quotes.
quote() {
	case "$1" in
	'' | *[!A-Za-z0-9@%+=:,./_-]*) printf "'%s'" "${1//\'/\'\\\'\'}" ;;
	*) printf '%s' "$1" ;;
	esac
}

run() {
	if [ -n "$DRY" ]; then
		local a out=""
		for a in "$@"; do out="$out${out:+ }$(quote "$a")"; done
		echo "$out"
	else
		"$@"
	fi
}

SSH_OPTS=(-o BatchMode=yes -o ConnectTimeout=10)
BINS=(iolake-meta iolake-osd iolake-gw iolake-admin)

deploy_host() {
	local i=$1 dst=$SSH_USER@${H_ADDR[$1]} dir=$OUT/${H_NAME[$1]} b files
	stage "$i"
	[ -n "$DRY" ] && echo "# host ${H_NAME[i]} (${H_ADDR[i]}): ${UNITS[*]}"
	run ssh "${SSH_OPTS[@]}" "$dst" "install -d -m 0755 $BINDIR $BINDIR/.iolake-new /etc/iolake && { getent passwd $SVC_USER >/dev/null || useradd --system --home-dir $DATADIR --shell /usr/sbin/nologin $SVC_USER; } && install -d -o $SVC_USER -g $SVC_USER -m 0750 $DATADIR"
	files=()
	for b in "${BINS[@]}"; do files+=("$BUILD/$b"); done
	run scp -q "${SSH_OPTS[@]}" "${files[@]}" "$dst:$BINDIR/.iolake-new/"
	# rename(2) over a running binary is safe; writing into it is not.
	run ssh "${SSH_OPTS[@]}" "$dst" "cd $BINDIR && for b in ${BINS[*]}; do chmod 0755 .iolake-new/\$b && mv -f .iolake-new/\$b \$b; done"
	files=("$dir"/etc/iolake/*.env)
	run scp -q "${SSH_OPTS[@]}" "${files[@]}" "$dst:/etc/iolake/"
	run ssh "${SSH_OPTS[@]}" "$dst" "chown root:$SVC_USER /etc/iolake/*.env && chmod 0640 /etc/iolake/*.env"
	if [ -e "$dir/etc/iolake/cluster.key" ]; then
		# Made 0600 before its bytes arrive: never readable by others.
		run ssh "${SSH_OPTS[@]}" "$dst" "install -m 0600 -o $SVC_USER -g $SVC_USER /dev/null /etc/iolake/cluster.key.new"
		run scp -q "${SSH_OPTS[@]}" "$dir/etc/iolake/cluster.key" "$dst:/etc/iolake/cluster.key.new"
		run ssh "${SSH_OPTS[@]}" "$dst" "mv -f /etc/iolake/cluster.key.new /etc/iolake/cluster.key"
	fi
	files=("$dir"/etc/systemd/system/*.service)
	run scp -q "${SSH_OPTS[@]}" "${files[@]}" "$dst:/etc/systemd/system/"
	run ssh "${SSH_OPTS[@]}" "$dst" "systemctl daemon-reload && systemctl enable --now ${UNITS[*]}"
	if [ -n "$RESTART" ]; then run ssh "${SSH_OPTS[@]}" "$dst" "systemctl restart ${UNITS[*]}"; fi
}

[[ $WAIT =~ ^[1-9][0-9]*$ ]] || die "--wait: seconds, not $WAIT"
# wait_healthy WHAT: the cluster healthy within --wait seconds, or stop.
wait_healthy() {
	run "$BUILD/iolake-admin" --meta "$METAS" cluster wait-healthy "$WAIT" ||
		die "$1: the cluster is not healthy after $WAIT s; stopping the rolling restart here"
}

[ -n "$DRY" ] && echo "# dry run: nothing is executed; staging in $OUT"
[ -z "$ROLLING" ] || wait_healthy "before the first host"
for i in "${SELECTED[@]}"; do
	deploy_host "$i"
	[ -z "$ROLLING" ] || wait_healthy "after host ${H_NAME[i]}"
done
if [ -z "$DRY" ]; then echo "$PROG: deployed to ${#SELECTED[@]} host(s); meta: $METAS"; fi
