#!/bin/bash
# dpkg-query formats are single-quoted on purpose:
# shellcheck disable=SC2016
#
# test_deb_install.sh — the .debs of `make deb` installed on a fresh Debian
# 12 root, and the INSTALLED aio unit started there, answer aws-cli.
# Run by `make test-deb` (not by make test: it downloads a Debian base).
# Needs root and Debian's archive.
#
#   DEB_OUT=build/deb tests/deb/test_deb_install.sh [--break execstart|user|depends]
#   IOLAKE_DEB_MODE=auto|nspawn|chroot (default auto)
#
# 1. A bookworm root (debootstrap --variant=minbase --include=systemd,
#    systemd-sysv,dbus; sources for bookworm, -updates and -security), made
#    once and cached as /var/tmp/iolake-deb-root.tar (its .stamp names
#    suite, mirror and packages; IOLAKE_DEB_ROOT_TAR moves it), is unpacked
#    into a temporary directory under /var/tmp.
# 2. nspawn mode (auto's first choice): systemd-nspawn --boot runs the
#    root's own systemd as its PID 1 (host network, so 127.0.0.1 is shared);
#    every step below runs inside it through nsenter, and the aio unit is
#    started and stopped with systemctl: the maintainer scripts, the unit
#    and its hardening run under real systemd. chroot mode (auto falls back
#    to it when the container does not boot): proc and /dev mounted, and
#    the unit started the way systemd would start it, from the INSTALLED
#    unit file (User=, Group=, EnvironmentFile=, ExecStart= with systemd's
#    ${VAR}/$VAR expansion, LimitNOFILE=, UMask=) under setpriv.
# 3. apt-get install of iolake_*.deb and iolake-tools_*.deb inside the root,
#    so Depends is resolved from Debian's archive; then: every Depends
#    package installed, no library `not found` (ldd), each binary answers
#    --help, the system user and group iolake, /var/lib/iolake 0750, the
#    conffiles, the units (none enabled), `systemd-analyze verify`.
# 4. The test edits only /etc/iolake/aio.env (a free port, 256M OSD files,
#    --osds 6 --ec 4+2 in IOLAKE_FLAGS), starts the unit, and from the host
#    aws-cli makes a bucket, puts a 5 MiB object, gets it back byte for
#    byte and lists it; SIGTERM (exit 0, "stopped clean=true"); started
#    again, the object read again; stopped.
#    nspawn mode: a reinstall (postinst as on an upgrade) restarts the
#    running unit and starts no other; then the cluster units (meta@1,
#    osd@1..6 on 256M files, gw with the same root key) from env files as
#    docs/operations.md writes them, a 5 MiB object through their gateway.
# 5. remove keeps the conffiles and data; purge deletes /etc/iolake and
#    keeps /var/lib/iolake; a reinstall purged with IOLAKE_PURGE_DATA=yes
#    deletes the data too.
#
# --break MODE shows that the test can fail: execstart (a wrong binary in
# the installed unit), user (User= a user that does not exist), depends
# (the iolake package rebuilt without its librocksdb dependency). Each must
# make the test FAIL.
#
# Clean-up (EXIT trap): the aio process (chroot mode) or the container
# (SIGTERM to systemd-nspawn: a clean halt; SIGKILL after 30 s) by PID, the
# mounts by path, the temporary root (only once nothing is mounted in it),
# the data on /dev/shm.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
DEB_OUT=${DEB_OUT:-$TOP/build/deb}
case "$DEB_OUT" in /*) ;; *) DEB_OUT=$TOP/$DEB_OUT ;; esac
CACHE=${IOLAKE_DEB_ROOT_TAR:-/var/tmp/iolake-deb-root.tar}
MIRROR=${IOLAKE_DEB_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
MODE=${IOLAKE_DEB_MODE:-auto}
case "$MODE" in auto | nspawn | chroot) ;; *) echo "IOLAKE_DEB_MODE: auto, nspawn or chroot" >&2; exit 2 ;; esac
BREAK=
if [ "${1:-}" = --break ]; then
	BREAK=${2:?--break needs execstart, user or depends}
fi

PASS=0
step() { echo "== $*"; }
ok() { echo "ok: $*"; PASS=$((PASS + 1)); }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}'; }   # seconds since $1
fail() {
	echo "FAIL: $*" >&2
	if [ -n "${LEADER:-}" ] && [ -n "${LOG:-}" ]; then
		nsenter -t "$LEADER" -a journalctl -u iolake-aio --no-pager -o cat >"$LOG" 2>&1 || true
	fi
	[ -n "${LOG:-}" ] && [ -s "$LOG" ] && { echo "--- aio log (last 20 lines)" >&2; tail -20 "$LOG" >&2; }
	echo "$PASS passed, 1 failed"
	exit 1
}

[ "$(id -u)" = 0 ] || { echo "SKIP: test_deb_install needs root"; exit 0; }
DEB_MAIN=$(compgen -G "$DEB_OUT/iolake_*.deb" | tail -1 || true)
DEB_TOOLS=$(compgen -G "$DEB_OUT/iolake-tools_*.deb" | tail -1 || true)
if [ -z "$DEB_MAIN" ] || [ -z "$DEB_TOOLS" ]; then
	fail "no iolake_*.deb / iolake-tools_*.deb in $DEB_OUT: run make deb"
fi

R=
W=
PID=
LOG=
MOUNTS=()
NSPAWN=
cleanup() {
	local rc=$? m i t
	set +e
	if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
		kill -TERM "$NSPAWN"
		for ((t = 0; t < 300; t++)); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$NSPAWN" 2>/dev/null; then
			echo "cleanup: container did not halt in 30 s: SIGKILL systemd-nspawn $NSPAWN"
			kill -KILL "$NSPAWN"
		fi
		wait "$NSPAWN" 2>/dev/null
	fi
	[ -z "$R" ] || rmdir "/run/systemd/nspawn/propagate/$(basename "$R")" 2>/dev/null
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		echo "cleanup: SIGKILL aio pid $PID"
		kill -KILL "$PID"
		wait "$PID" 2>/dev/null
	fi
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		m=${MOUNTS[i]}
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if [ -n "$R" ]; then
		if grep -q " $R/" /proc/mounts; then
			echo "cleanup: mounts left under $R, not deleting it:" >&2
			grep " $R/" /proc/mounts >&2
			rc=1
		else
			rm -rf --one-file-system "$R"
		fi
	fi
	[ -n "$W" ] && rm -rf "$W"
	exit "$rc"
}
trap cleanup EXIT

W=$(mktemp -d /dev/shm/iolake-deb-test.XXXXXX)

# ---------------------------------------------------------------- 1. root
step "a fresh Debian $SUITE root"
INCLUDE=systemd,systemd-sysv,dbus
STAMP_WANT="suite=$SUITE mirror=$MIRROR variant=minbase include=$INCLUDE sources=main,updates,security"
if [ -s "$CACHE" ] && [ "$(cat "$CACHE.stamp" 2>/dev/null)" = "$STAMP_WANT" ]; then
	echo "cached: $CACHE ($(du -m "$CACHE" | cut -f1) MiB, $(date -r "$CACHE" -u +%FT%TZ))"
else
	if ! command -v debootstrap >/dev/null; then
		echo "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
	fi
	B0=$(mktemp -d /var/tmp/iolake-deb-bootstrap.XXXXXX)
	echo "debootstrap --variant=minbase --include=$INCLUDE $SUITE $B0 $MIRROR (minutes)"
	t0=$(date +%s)
	if ! debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$B0" "$MIRROR" \
		>"$W/debootstrap.log" 2>&1; then
		tail -20 "$W/debootstrap.log" >&2
		rm -rf --one-file-system "$B0"
		fail "debootstrap failed"
	fi
	cat >"$B0/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian}/debian-security $SUITE-security main
EOF
	tar --numeric-owner -C "$B0" -cf "$CACHE.tmp" .
	mv "$CACHE.tmp" "$CACHE"
	echo "$STAMP_WANT" >"$CACHE.stamp"
	rm -rf --one-file-system "$B0"
	echo "bootstrapped in $(($(date +%s) - t0)) s, cached as $CACHE"
fi

R=$(mktemp -d /var/tmp/iolake-deb-root.XXXXXX)
tar --numeric-owner -C "$R" -xf "$CACHE"
chmod 0755 "$R"
cp /etc/resolv.conf "$R/etc/resolv.conf"
# Where the .debs go in the root (a booted container mounts a tmpfs on /tmp).
DEBDIR=/root/iolake-debs

LEADER=
boot_container() {   # -> 0 when the root's systemd runs as the container's PID 1
	local t st t0
	if ! command -v systemd-nspawn >/dev/null; then
		echo "installing systemd-container (systemd-nspawn)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-container >/dev/null 2>&1 ||
			{ echo "no systemd-nspawn: apt-get install systemd-container failed"; return 1; }
	fi
	# --register=no --keep-unit: no systemd on the host to register with.
	systemd-nspawn --boot --register=no --keep-unit --console=passive -q -D "$R" \
		>"$W/nspawn.log" 2>&1 </dev/null &
	NSPAWN=$!
	t0=$(now)
	for ((t = 0; t < 600; t++)); do
		kill -0 "$NSPAWN" 2>/dev/null || { echo "systemd-nspawn exited: $(tail -3 "$W/nspawn.log")"; NSPAWN=; return 1; }
		LEADER=$(pgrep -P "$NSPAWN" | head -1 || true)
		if [ -n "$LEADER" ]; then
			st=$(nsenter -t "$LEADER" -a systemctl is-system-running 2>/dev/null || true)
			case "$st" in running | degraded) break ;; esac
		fi
		sleep 0.1
	done
	[ "$t" -lt 600 ] || { echo "the container's systemd is not running after 60 s (state: ${st:-none})"; return 1; }
	echo "container booted in $(since "$t0") s: systemd-nspawn pid $NSPAWN, its systemd is host pid $LEADER (state $st)"
}

if [ "$MODE" != chroot ]; then
	if boot_container; then
		MODE=nspawn
	elif [ "$MODE" = nspawn ]; then
		fail "IOLAKE_DEB_MODE=nspawn: the container did not boot"
	else
		echo "NOTE: systemd-nspawn --boot does not work here: chroot mode (the unit started as systemd would)"
		if [ -n "$NSPAWN" ]; then kill -TERM "$NSPAWN"; wait "$NSPAWN" || true; NSPAWN=; fi
		MODE=chroot
	fi
fi
if [ "$MODE" = chroot ]; then
	for m in proc dev; do
		case $m in
		proc) mount -t proc proc "$R/proc" ;;
		dev) mount --bind /dev "$R/dev" ;;
		esac
		MOUNTS+=("$R/$m")
	done
fi
in_root() {
	if [ "$MODE" = nspawn ]; then
		nsenter -t "$LEADER" -a /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
	else
		chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
	fi
}
! in_root dpkg-query -W librocksdb7.8 >/dev/null 2>&1 || fail "the fresh root already has librocksdb"
! in_root getent passwd iolake >/dev/null || fail "the fresh root already has a user iolake"
ok "fresh root in $R, $MODE mode (no librocksdb, no user iolake)"

# ---------------------------------------------------------------- 2. install
step "apt-get install the packages"
mkdir -p "$R$DEBDIR"
cp "$DEB_MAIN" "$DEB_TOOLS" "$R$DEBDIR/"
if [ "$BREAK" = depends ]; then
	# The package without librocksdb in Depends: nothing else changes.
	dpkg-deb -R "$DEB_MAIN" "$W/unpacked"
	sed -i '/^Depends:/s/librocksdb[^,]*, //; /^Depends:/s/, librocksdb[^,]*//' "$W/unpacked/DEBIAN/control"
	grep '^Depends:' "$W/unpacked/DEBIAN/control"
	dpkg-deb --root-owner-group --build "$W/unpacked" "$R$DEBDIR/$(basename "$DEB_MAIN")" >/dev/null
	echo "BREAK: iolake rebuilt without its librocksdb dependency"
fi
in_root apt-get update -qq >"$W/apt.log" 2>&1 || { cat "$W/apt.log"; fail "apt-get update in the root"; }
t0=$(date +%s)
in_root apt-get install -y -q --no-install-recommends \
	"$DEBDIR/$(basename "$DEB_MAIN")" "$DEBDIR/$(basename "$DEB_TOOLS")" >>"$W/apt.log" 2>&1 ||
	{ tail -30 "$W/apt.log"; fail "apt-get install of the packages"; }
grep -E '^(Setting up|iolake)' "$W/apt.log" | sed 's/^/  /' | head -40
ok "apt-get install ./iolake_*.deb ./iolake-tools_*.deb in $(($(date +%s) - t0)) s ($(grep -c '^Setting up' "$W/apt.log") packages set up)"

step "what the packages installed"
for pkg in iolake iolake-tools; do
	deps=$(in_root dpkg-query -W -f='${Depends}' "$pkg")
	echo "  $pkg Depends: $deps"
	IFS=, read -r -a alts <<<"$deps"
	for d in "${alts[@]}"; do
		name=$(echo "$d" | sed 's/^ *//; s/[ (|].*//')
		in_root dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q 'install ok installed' ||
			fail "$pkg depends on $name, which is not installed"
	done
done
ok "every Depends package is installed"
for b in iolake-aio iolake-meta iolake-osd iolake-gw iolake-admin iolake-s3-bench; do
	[ -x "$R/usr/bin/$b" ] || fail "/usr/bin/$b missing"
	out=$(in_root ldd "/usr/bin/$b")
	if echo "$out" | grep -q 'not found'; then
		fail "/usr/bin/$b: libraries not found in the root: $(echo "$out" | grep 'not found' | tr -s ' \t' ' ')"
	fi
	in_root "/usr/bin/$b" --help >"$W/help.out" 2>&1 || fail "/usr/bin/$b --help: $(head -3 "$W/help.out")"
	grep -q -- '--' "$W/help.out" || fail "/usr/bin/$b --help printed no flags"
	grep -q '^\.TH' <(zcat "$R/usr/share/man/man1/$b.1.gz" 2>/dev/null) || fail "no manual page $b.1.gz"
done
ok "6 binaries: every library resolved (ldd), --help answers, a manual page each"

pw=$(in_root getent passwd iolake) || fail "no user iolake"
IFS=: read -r _ _ uid gid _ home shell <<<"$pw"
[ "$uid" -lt 1000 ] || fail "user iolake has uid $uid, not a system uid"
[ "$(in_root getent group iolake | cut -d: -f3)" = "$gid" ] || fail "user iolake's primary group is not iolake"
[ "$home" = /var/lib/iolake ] || fail "iolake's home is $home"
[ "$shell" = /usr/sbin/nologin ] || fail "iolake's shell is $shell"
ok "system user iolake (uid $uid, group iolake $gid, home $home, shell $shell)"
[ "$(stat -c '%u:%g %a' "$R/var/lib/iolake")" = "$uid:$gid 750" ] ||
	fail "/var/lib/iolake is $(stat -c '%u:%g %a' "$R/var/lib/iolake"), want $uid:$gid 750"
ok "/var/lib/iolake iolake:iolake 0750"
conff=$(in_root dpkg-query -W -f='${Conffiles}' iolake)
for f in /etc/iolake/aio.env /etc/iolake/gw.env; do
	echo "$conff" | grep -q "^ $f " || fail "$f is not a conffile of iolake: $conff"
	[ "$(stat -c '%u:%g %a' "$R$f")" = "0:$gid 640" ] || fail "$f is $(stat -c '%u:%g %a' "$R$f"), want root:iolake 0640"
done
ok "conffiles /etc/iolake/aio.env, gw.env (root:iolake 0640)"
UNITDIR=$R/lib/systemd/system
for u in iolake-aio.service iolake-meta@.service iolake-osd@.service iolake-gw.service; do
	[ -f "$UNITDIR/$u" ] || fail "unit $u not installed"
done
! compgen -G "$R/etc/systemd/system/*.wants/iolake*" >/dev/null ||
	fail "a unit was enabled on install: $(compgen -G "$R/etc/systemd/system/*.wants/iolake*")"
if [ "$MODE" = nspawn ]; then
	st=$(in_root systemctl is-enabled iolake-aio.service || true)
	[ "$st" = disabled ] || fail "systemctl is-enabled iolake-aio: $st, want disabled"
	st=$(in_root systemctl is-active iolake-aio.service || true)
	[ "$st" = inactive ] || fail "systemctl is-active iolake-aio after install: $st, want inactive"
fi
ok "units installed in /lib/systemd/system, none enabled or started"

if [ "$MODE" = nspawn ]; then
	in_root install -m 0640 /usr/share/doc/iolake/examples/meta-ID.env /etc/iolake/meta-1.env
	in_root install -m 0640 /usr/share/doc/iolake/examples/osd-ID.env /etc/iolake/osd-1.env
	out=$(in_root systemd-analyze verify iolake-aio.service iolake-gw.service \
		iolake-meta@1.service iolake-osd@1.service 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
	rm "$R/etc/iolake/meta-1.env" "$R/etc/iolake/osd-1.env"
	ok "systemd-analyze verify (the container's systemd): iolake-aio, iolake-gw, iolake-meta@1, iolake-osd@1"
elif command -v systemd-analyze >/dev/null && [ -d /usr/lib/systemd/system ]; then
	# verify needs the system's targets: the host's units, copied into a
	# separate verify root that holds the installed units and binaries.
	V=$W/verify
	mkdir -p "$V/usr/lib/systemd" "$V/usr/bin" "$V/etc/iolake" "$V/lib"
	cp -a /usr/lib/systemd/system "$V/usr/lib/systemd/"
	cp "$UNITDIR"/iolake-* "$V/usr/lib/systemd/system/"
	cp "$R"/usr/bin/iolake-* "$V/usr/bin/"
	cp "$R"/etc/iolake/*.env "$V/etc/iolake/"
	out=$(systemd-analyze verify --root="$V" iolake-aio.service iolake-gw.service \
		iolake-meta@1.service iolake-osd@1.service 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
	ok "systemd-analyze verify: iolake-aio, iolake-gw, iolake-meta@1, iolake-osd@1"
else
	echo "SKIP step: systemd-analyze verify: not on this host"
fi

# ---------------------------------------------------------------- 3. start
UNIT=$UNITDIR/iolake-aio.service
case "$BREAK" in
execstart)
	sed -i 's|^ExecStart=/usr/bin/iolake-aio|ExecStart=/usr/bin/iolake-aoi|' "$UNIT"
	echo "BREAK: installed unit's ExecStart names /usr/bin/iolake-aoi" ;;
user)
	sed -i 's|^User=iolake$|User=iolake-nobody|' "$UNIT"
	echo "BREAK: installed unit's User=iolake-nobody" ;;
esac
[ "$MODE" != nspawn ] || in_root systemctl daemon-reload

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -i "s|^IOLAKE_S3_LISTEN=.*|IOLAKE_S3_LISTEN=127.0.0.1:$PORT|; s|^IOLAKE_OSD_SIZE=.*|IOLAKE_OSD_SIZE=256M|; s|^IOLAKE_FLAGS=.*|IOLAKE_FLAGS=--osds 6 --ec 4+2|" \
	"$R/etc/iolake/aio.env"

unit_key() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }
declare -A ENV
ARGV=()
# Reads the installed unit and its EnvironmentFile as systemd would.
load_unit() {
	local envf exec w name val rest
	envf=$(unit_key EnvironmentFile)
	envf=${envf#-}
	[ -n "$envf" ] || fail "the unit has no EnvironmentFile="
	[ -f "$R$envf" ] || fail "EnvironmentFile=$envf does not exist in the root"
	ENV=()
	while IFS= read -r line || [ -n "$line" ]; do
		case "$line" in '' | '#'* | ';'*) continue ;; esac
		name=${line%%=*}
		val=${line#*=}
		val=${val#\"}; val=${val%\"}
		ENV[$name]=$val
	done <"$R$envf"
	exec=$(unit_key ExecStart)
	exec=${exec#[-@+!]}
	[ -n "$exec" ] || fail "the unit has no ExecStart="
	ARGV=()
	read -r -a words <<<"$exec"
	for w in "${words[@]}"; do
		if [[ $w =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
			# $VAR: split on white space into words (none when empty)
			read -r -a rest <<<"${ENV[${BASH_REMATCH[1]}]:-}"
			ARGV+=("${rest[@]}")
		else
			# ${VAR}: one word
			while [[ $w =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
				w=${w//"${BASH_REMATCH[0]}"/${ENV[${BASH_REMATCH[1]}]:-}}
			done
			ARGV+=("$w")
		fi
	done
	[[ ${ARGV[0]} == /* ]] || fail "ExecStart= does not start with an absolute path: ${ARGV[0]}"
}

start_aio_chroot() {   # LABEL
	local user group nofile um envargs=() k t t0
	user=$(unit_key User)
	group=$(unit_key Group)
	nofile=$(unit_key LimitNOFILE)
	um=$(unit_key UMask)
	[ -n "$user" ] || fail "the unit has no User="
	load_unit
	for k in "${!ENV[@]}"; do envargs+=("$k=${ENV[$k]}"); done
	# Without CAP_SYS_RESOURCE systemd sets the closest limit it can (its
	# setrlimit_closest): the hard limit.
	if [ -n "$nofile" ] && [ "$(ulimit -Hn)" != unlimited ] && [ "$nofile" -gt "$(ulimit -Hn)" ]; then
		echo "  LimitNOFILE=$nofile above this shell's hard limit: $(ulimit -Hn), as systemd would"
		nofile=$(ulimit -Hn)
	fi
	echo "start ($1): User=$user Group=${group:-$user} LimitNOFILE=${nofile:-default} UMask=${um:-0022}"
	echo "  ExecStart: ${ARGV[*]}"
	LOG=$W/aio.log
	echo "---- start $1" >>"$LOG"
	(
		[ -z "$nofile" ] || ulimit -n "$nofile"
		[ -z "$um" ] || umask "$um"
		exec chroot "$R" setpriv --reuid="$user" --regid="${group:-$user}" --init-groups \
			--no-new-privs -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			"${envargs[@]}" "${ARGV[@]}"
	) >>"$LOG" 2>&1 </dev/null &
	PID=$!
	t0=$(now)
	for ((t = 0; t < 600; t++)); do
		kill -0 "$PID" 2>/dev/null || { wait "$PID" || true; fail "aio ($1) exited before it was ready"; }
		if curl -sf -o /dev/null "http://127.0.0.1:$PORT/health/ready"; then
			break
		fi
		sleep 0.1
	done
	[ "$t" -lt 600 ] || fail "aio ($1) not ready on 127.0.0.1:$PORT within 60 s"
	local puid
	puid=$(awk '/^Uid:/ {print $2}' "/proc/$PID/status")
	[ "$puid" = "$uid" ] || fail "aio runs as uid $puid, not iolake ($uid)"
	ok "aio ($1) ready on 127.0.0.1:$PORT in $(since "$t0") s, pid $PID, uid $puid (iolake)"
}

stop_aio_chroot() {   # LABEL
	local t rc=0 t0
	t0=$(now)
	kill -TERM "$PID"
	for ((t = 0; t < 300; t++)); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$PID" 2>/dev/null && fail "aio ($1) still running 30 s after SIGTERM"
	wait "$PID" || rc=$?
	PID=
	[ "$rc" = 0 ] || fail "aio ($1) exited $rc after SIGTERM"
	tail -5 "$LOG" | grep -q 'stopped.*clean=true' || fail "aio ($1) did not log a clean stop"
	ok "aio ($1) SIGTERM: exit 0 in $(since "$t0") s, clean=true"
}

# nspawn mode: systemctl in the container; the journal is the log.
journal() { in_root journalctl -u iolake-aio --no-pager -o cat >"$LOG" 2>&1 || true; }
start_aio_nspawn() {   # LABEL
	local t st mp t0
	LOG=$W/aio.log
	load_unit   # ENV, for the test's own use (data dir)
	t0=$(now)
	in_root systemctl start iolake-aio.service || fail "systemctl start iolake-aio ($1)"
	for ((t = 0; t < 600; t++)); do
		# A start that failed shows as SubState auto-restart (Restart=on-failure)
		# or failed.
		st=$(in_root systemctl show -p ActiveState -p SubState --value iolake-aio.service | tr '\n' ' ')
		case "$st" in
		"active running "*) ;;
		*auto-restart* | *failed* | inactive*)
			journal
			fail "iolake-aio ($1) did not start: $st$(in_root systemctl show -p Result -p ExecMainStatus -p NRestarts iolake-aio | tr '\n' ' ')" ;;
		esac
		[ "$st" = "active running " ] && curl -sf -o /dev/null "http://127.0.0.1:$PORT/health/ready" && break
		sleep 0.1
	done
	[ "$t" -lt 600 ] || { journal; fail "aio ($1) not ready on 127.0.0.1:$PORT within 60 s"; }
	mp=$(in_root systemctl show -p MainPID --value iolake-aio.service)
	st=$(in_root awk '/^Uid:/ {u=$2} /^NoNewPrivs:/ {n=$2} END {print u, n}' "/proc/$mp/status")
	[ "$st" = "$uid 1" ] || fail "aio's MainPID $mp: uid and NoNewPrivs are '$st', want '$uid 1'"
	in_root awk '$5 == "/" && $6 ~ /^ro/ {f=1} END {exit !f}' "/proc/$mp/mountinfo" ||
		fail "aio's / is writable: ProtectSystem=strict not in effect"
	ok "systemctl start iolake-aio ($1): ready on 127.0.0.1:$PORT in $(since "$t0") s, MainPID $mp, uid $uid (iolake), NoNewPrivs, / read-only"
}
stop_aio_nspawn() {   # LABEL
	local n0 n1 res t0
	journal
	n0=$(grep -c 'stopped.*clean=true' "$LOG" || true)
	t0=$(now)
	in_root systemctl stop iolake-aio.service || fail "systemctl stop iolake-aio ($1)"
	# Death by SIGTERM's default action would be ExecMainStatus=15 (with
	# Result=success: systemd counts SIGTERM as clean); aio exits 0.
	res=$(in_root systemctl show -p Result -p ExecMainStatus iolake-aio.service | sort | tr '\n' ' ')
	[ "$res" = "ExecMainStatus=0 Result=success " ] ||
		fail "iolake-aio ($1) after systemctl stop: $res"
	journal
	n1=$(grep -c 'stopped.*clean=true' "$LOG" || true)
	[ "$n1" -gt "$n0" ] || fail "aio ($1) did not log a clean stop"
	ok "systemctl stop iolake-aio ($1): SIGTERM, exit 0 (${res% }) in $(since "$t0") s, clean=true"
}
start_aio() { if [ "$MODE" = nspawn ]; then start_aio_nspawn "$@"; else start_aio_chroot "$@"; fi; }
stop_aio() { if [ "$MODE" = nspawn ]; then stop_aio_nspawn "$@"; else stop_aio_chroot "$@"; fi; }

step "start the installed aio unit"
start_aio first
[ "$MODE" != nspawn ] || journal
CRED=$R${ENV[IOLAKE_DATA_DIR]}/root-credentials
[ -f "$CRED" ] || fail "no root-credentials in ${ENV[IOLAKE_DATA_DIR]}"
[ "$(stat -c '%u %a' "$CRED")" = "$uid 600" ] || fail "root-credentials is $(stat -c '%u %a' "$CRED"), want iolake 0600"
grep -q 'S3 endpoint:  http://127.0.0.1:'"$PORT" "$LOG" || fail "the banner (journal) does not name the endpoint"
ok "root-credentials in ${ENV[IOLAKE_DATA_DIR]} (iolake, 0600); the banner names the endpoint"

# ---------------------------------------------------------------- 4. aws-cli
AK=$(sed -n 's/^access_key=//p' "$CRED")
SK=$(sed -n 's/^secret_key=//p' "$CRED")
s3() { env -i PATH=/usr/bin:/bin HOME="$W" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" \
	AWS_DEFAULT_REGION=us-east-1 aws --endpoint-url "http://127.0.0.1:$PORT" "$@"; }
step "aws-cli against the installed aio"
head -c $((5 << 20)) /dev/urandom >"$W/obj"
s3 s3 mb s3://debtest >/dev/null || fail "aws s3 mb"
s3 s3 cp --quiet "$W/obj" s3://debtest/dir/obj.bin || fail "aws s3 cp (put)"
s3 s3 cp --quiet s3://debtest/dir/obj.bin "$W/back" || fail "aws s3 cp (get)"
cmp "$W/obj" "$W/back" || fail "the object read back differs"
s3 s3 ls --recursive s3://debtest/ | grep -q " 5242880 dir/obj.bin$" || fail "aws s3 ls does not list dir/obj.bin with 5242880 bytes"
ok "aws-cli: mb, put 5 MiB, get byte for byte ($(md5sum <"$W/obj" | cut -c1-12)), ls"
stop_aio first

step "start again on the same data"
start_aio second
rm -f "$W/back"
s3 s3 cp --quiet s3://debtest/dir/obj.bin "$W/back" || fail "aws s3 cp (get after restart)"
cmp "$W/obj" "$W/back" || fail "the object read after the restart differs"
ok "after a restart: the 5 MiB object read byte for byte"
if [ "$MODE" = nspawn ]; then
	# An upgrade (here a reinstall: postinst configure with the old
	# version) restarts the running unit, and only that.
	mp0=$(in_root systemctl show -p MainPID --value iolake-aio.service)
	in_root apt-get install -y -q --reinstall "$DEBDIR/$(basename "$DEB_MAIN")" >>"$W/apt.log" 2>&1 ||
		fail "apt-get install --reinstall iolake"
	start_aio upgraded   # waits until ready; a no-op start of the running unit
	mp1=$(in_root systemctl show -p MainPID --value iolake-aio.service)
	[ "$mp1" != "$mp0" ] || fail "the reinstall did not restart the running unit (MainPID $mp0)"
	st=$(in_root systemctl is-active iolake-gw.service || true)
	[ "$st" = inactive ] || fail "the reinstall started iolake-gw: $st"
	rm -f "$W/back"
	s3 s3 cp --quiet s3://debtest/dir/obj.bin "$W/back" || fail "aws s3 cp (get after the upgrade)"
	cmp "$W/obj" "$W/back" || fail "the object read after the upgrade differs"
	ok "apt-get install --reinstall: aio restarted (MainPID $mp0 -> $mp1), gw still inactive, the object read byte for byte"
fi
stop_aio second

# ---------------------------------------------------------------- 4b. cluster units
# nspawn mode: the cluster's units on this one host, from their env files
# as docs/operations.md says: iolake-meta@1 (one voter), iolake-osd@1..6
# (256M files, each its own --host), iolake-gw with a known root key.
if [ "$MODE" = nspawn ]; then
	step "the cluster units: iolake-meta@1, iolake-osd@1..6, iolake-gw"
	BASE=$(python3 -c '
import random, socket
for _ in range(200):
    b = random.randrange(10000, 32000)
    try:
        ss = [socket.socket() for _ in range(9)]
        for i, x in enumerate(ss): x.bind(("127.0.0.1", b + i))
        print(b); break
    except OSError: pass
    finally:
        for x in ss: x.close()')
	[ -n "$BASE" ] || fail "no 9 free consecutive ports"
	E=$R/etc/iolake
	printf 'IOLAKE_DATA_DIR=/var/lib/iolake/meta-1\nIOLAKE_LISTEN=127.0.0.1:%s\nIOLAKE_PEERS=1@127.0.0.1:%s\nIOLAKE_FLAGS=--ec 4+2\n' \
		"$BASE" "$BASE" >"$E/meta-1.env"
	units=(iolake-meta@1.service)
	for i in 1 2 3 4 5 6; do
		printf 'IOLAKE_DEVICE=/var/lib/iolake/osd-%s.dev\nIOLAKE_META_DIR=/var/lib/iolake/osd-%s\nIOLAKE_LISTEN=127.0.0.1:%s\nIOLAKE_META=127.0.0.1:%s\nIOLAKE_HOST=h%s\nIOLAKE_FLAGS=--size 256M --format\n' \
			"$i" "$i" $((BASE + 1 + i)) "$BASE" "$i" >"$E/osd-$i.env"
		units+=("iolake-osd@$i.service")
	done
	GWPORT=$((BASE + 8))
	printf 'IOLAKE_S3_LISTEN=127.0.0.1:%s\nIOLAKE_META=127.0.0.1:%s\nIOLAKE_FLAGS=--ec 4+2\nIOLAKE_ROOT_ACCESS_KEY=%s\nIOLAKE_ROOT_SECRET_KEY=%s\n' \
		"$GWPORT" "$BASE" "$AK" "$SK" >"$E/gw.env"
	units+=(iolake-gw.service)
	in_root chown root:iolake /etc/iolake/meta-1.env /etc/iolake/gw.env /etc/iolake/osd-{1,2,3,4,5,6}.env
	in_root chmod 0640 /etc/iolake/meta-1.env /etc/iolake/gw.env /etc/iolake/osd-{1,2,3,4,5,6}.env
	s3gw() { env -i PATH=/usr/bin:/bin HOME="$W" AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" \
		AWS_DEFAULT_REGION=us-east-1 aws --endpoint-url "http://127.0.0.1:$GWPORT" "$@"; }
	t0=$(now)
	in_root systemctl start "${units[@]}" || fail "systemctl start ${units[*]}"
	for ((t = 0; t < 600; t++)); do
		for u in "${units[@]}"; do
			st=$(in_root systemctl show -p ActiveState -p SubState --value "$u" | tr '\n' ' ')
			case "$st" in "active running ") ;; *)
				in_root journalctl -u "$u" --no-pager -o cat | tail -15 >&2
				fail "$u did not start: $st" ;;
			esac
		done
		curl -sf -o /dev/null "http://127.0.0.1:$GWPORT/health/ready" &&
			s3gw s3 mb s3://cluster >/dev/null 2>&1 && break
		sleep 0.1
	done
	[ "$t" -lt 600 ] || fail "the cluster's gateway did not take a bucket in 600 tries"
	ok "9 units active (meta@1, osd@1..6, gw) under systemd; gw on 127.0.0.1:$GWPORT took a bucket $(since "$t0") s after systemctl start"
	s3gw s3 cp --quiet "$W/obj" s3://cluster/obj.bin || fail "aws s3 cp (put, cluster)"
	rm -f "$W/back"
	s3gw s3 cp --quiet s3://cluster/obj.bin "$W/back" || fail "aws s3 cp (get, cluster)"
	cmp "$W/obj" "$W/back" || fail "the object read from the cluster differs"
	ok "aws-cli against the cluster units: 5 MiB put, got back byte for byte"
	in_root systemctl stop "${units[@]}" || fail "systemctl stop the cluster units"
	for u in "${units[@]}"; do
		res=$(in_root systemctl show -p Result -p ExecMainStatus "$u" | sort | tr '\n' ' ')
		[ "$res" = "ExecMainStatus=0 Result=success " ] || fail "$u after systemctl stop: $res"
	done
	ok "systemctl stop: all 9 exit 0 on SIGTERM"
	rm -f "$E"/meta-1.env "$E"/osd-?.env
fi

# ---------------------------------------------------------------- 5. remove, purge
step "remove and purge"
in_root apt-get remove -y -q iolake >>"$W/apt.log" 2>&1 || fail "apt-get remove iolake"
[ ! -e "$R/usr/bin/iolake-aio" ] || fail "remove left /usr/bin/iolake-aio"
[ -f "$R/etc/iolake/aio.env" ] || fail "remove deleted the conffile aio.env"
[ -f "$CRED" ] || fail "remove deleted the data"
ok "apt-get remove: binaries gone, conffiles and data kept"
in_root apt-get purge -y -q iolake >>"$W/apt.log" 2>&1 || fail "apt-get purge iolake"
[ ! -e "$R/etc/iolake" ] || fail "purge left /etc/iolake: $(ls -A "$R/etc/iolake")"
[ -f "$CRED" ] || fail "purge without IOLAKE_PURGE_DATA deleted the data"
grep -q 'purge keeps the stored data' "$W/apt.log" || fail "purge did not say it kept the data"
ok "apt-get purge: /etc/iolake gone, /var/lib/iolake kept (and said so)"
in_root dpkg -i "$DEBDIR/$(basename "$DEB_MAIN")" >>"$W/apt.log" 2>&1 || fail "dpkg -i again"
in_root IOLAKE_PURGE_DATA=yes dpkg --purge iolake >>"$W/apt.log" 2>&1 || fail "dpkg --purge with IOLAKE_PURGE_DATA=yes"
[ ! -e "$R/var/lib/iolake" ] || fail "IOLAKE_PURGE_DATA=yes purge left /var/lib/iolake"
ok "reinstall, then IOLAKE_PURGE_DATA=yes purge: /var/lib/iolake gone"

echo "$PASS passed, 0 failed"
