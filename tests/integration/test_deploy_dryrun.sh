#!/bin/bash
# test_deploy_dryrun.sh — infra/deploy/deploy.sh without a second host:
#
#   - --dry-run against a sample cluster.conf prints exactly the commands of
#     tests/integration/deploy_dryrun.golden (build and staging paths
#     substituted) and runs none (ssh and scp are stand-ins on PATH that
#     log every call);
#   - without --dry-run, the stand-ins receive exactly those commands;
#   - the staged env files hold the addresses, peers and flags of the conf;
#   - the generated units pass `systemd-analyze verify` in a root built from
#     the staging directory (binaries at the configured path), and a broken
#     unit does not (the check can fail);
#   - --rolling waits for `iolake-admin cluster wait-healthy` before the
#     first host and after each, and stops at a host that does not come
#     back healthy;
#   - bad descriptions are refused naming the problem;
#   - shellcheck is clean on infra/, the netns tests and bench/heal.sh.
set -euo pipefail
export PATH=/usr/bin:/bin:$PATH
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
B=${IOLAKE_BUILD:?set IOLAKE_BUILD to the build dir}
B=$(cd "$B" && pwd)
DEPLOY=$TOP/infra/deploy/deploy.sh
W=$(mktemp -d /dev/shm/iolake-deploy.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

cat >"$W/cluster.conf" <<'EOF'
# sample: three hosts, 2+1, one host without a meta member or gateway
ec 2+1
meta_port 7400
osd_port 7500
s3_port 8080
bindir /opt/iolake/bin
datadir /srv/iolake
user iol
meta_flags --osd-out-after 10m --election-timeout 500ms
gw_flags --region eu-west-1
host a1 192.0.2.1 1 yes 1:/dev/sdb,2:/dev/sdc
host a2 192.0.2.2 2 yes 3:/dev/sdb
host a3 192.0.2.3 - no  4:/dev/disk/by-id/nvme-X
EOF

# ssh / scp stand-ins: log the call (one line, arguments quoted as
# deploy.sh prints them) and succeed.
mkdir -p "$W/fakebin"
for t in ssh scp; do
	cat >"$W/fakebin/$t" <<EOF
#!/bin/bash
source <(sed -n '/^quote() {/,/^}/p' "$DEPLOY")
out=$t
for a in "\$@"; do out="\$out \$(quote "\$a")"; done
echo "\$out" >>"$W/calls"
EOF
	chmod +x "$W/fakebin/$t"
done

PATH=$W/fakebin:$PATH "$DEPLOY" --build "$B" --conf "$W/cluster.conf" --out "$W/stage" --format --dry-run \
	>"$W/dry.out" || fail "dry run exited non-zero"
[ ! -e "$W/calls" ] || fail "--dry-run ran: $(cat "$W/calls")"
sed "s|$B|@BUILD@|g; s|$W/stage|@STAGE@|g" "$W/dry.out" >"$W/dry.norm"
diff -u "$HERE/deploy_dryrun.golden" "$W/dry.norm" || fail "dry-run output differs from deploy_dryrun.golden"
echo "ok: dry run prints the golden commands ($(grep -vc '^#' "$W/dry.out") commands) and runs none"
grep -q "^ssh .* root@192.0.2.3 'systemctl daemon-reload && systemctl enable --now iolake-osd@4.service'$" "$W/dry.out" ||
	fail "no enable --now of a3's OSD"
grep -q "^scp .*$B/iolake-gw .* root@192.0.2.1:/opt/iolake/bin/.iolake-new/$" "$W/dry.out" || fail "no scp of the binaries"

# The real run (stand-ins) issues exactly the printed commands.
PATH=$W/fakebin:$PATH "$DEPLOY" --build "$B" --conf "$W/cluster.conf" --out "$W/stage2" --format >/dev/null ||
	fail "run with stand-in ssh/scp exited non-zero"
grep -v '^#' "$W/dry.out" | sed "s|$W/stage|$W/stage2|g" >"$W/want.calls"
diff -u "$W/want.calls" "$W/calls" || fail "the real run's ssh/scp calls differ from the dry run's"
echo "ok: without --dry-run, ssh/scp get exactly those $(wc -l <"$W/calls") commands"

# --rolling: one host at a time, waiting for `iolake-admin cluster
# wait-healthy` before the first and after each; an unhealthy cluster stops
# the rollout there (the hosts after it untouched). A stand-in build dir
# whose iolake-admin logs its calls and says "not healthy" at call $BAD.
mkdir -p "$W/fbuild"
for b in iolake-meta iolake-osd iolake-gw; do ln -s "$B/$b" "$W/fbuild/$b"; done
cat >"$W/fbuild/iolake-admin" <<EOF
#!/bin/bash
echo "iolake-admin \$*" >>"$W/calls"
n=\$(grep -c '^iolake-admin ' "$W/calls")
[ "\$n" != "\${BAD:-0}" ]
EOF
chmod +x "$W/fbuild/iolake-admin"
"$DEPLOY" --build "$W/fbuild" --conf "$W/cluster.conf" --out "$W/stage3" --rolling --wait 30 --dry-run \
	>"$W/roll.out" || fail "--rolling --dry-run exited non-zero"
grep -v '^#' "$W/roll.out" | grep "wait-healthy\|systemctl restart" |
	sed "s|$W/fbuild/||; s/root@192[.]0[.]2[.][0-9]* .*/root@host/" >"$W/roll.seq"
{
	echo "iolake-admin --meta 192.0.2.1:7400,192.0.2.2:7400 cluster wait-healthy 30"
	for _ in 1 2 3; do
		echo "ssh -o BatchMode=yes -o ConnectTimeout=10 root@host"
		echo "iolake-admin --meta 192.0.2.1:7400,192.0.2.2:7400 cluster wait-healthy 30"
	done
} >"$W/roll.want"
diff -u "$W/roll.want" "$W/roll.seq" || fail "--rolling: not a wait before the first host and after each restart"
echo "ok: --rolling --dry-run waits for health before the first host and after each of 3"
rm -f "$W/calls"
BAD=3 PATH=$W/fakebin:$PATH "$DEPLOY" --build "$W/fbuild" --conf "$W/cluster.conf" --out "$W/stage4" \
	--rolling --wait 30 >/dev/null 2>"$W/roll.err" && fail "--rolling went on past an unhealthy cluster"
grep -q "after host a2: the cluster is not healthy after 30 s; stopping the rolling restart here" \
	"$W/roll.err" || fail "--rolling's stop does not name the host: $(cat "$W/roll.err")"
grep -q "root@192.0.2.2 'systemctl restart" "$W/calls" || fail "--rolling: a2 was not restarted"
if grep -q "root@192.0.2.3" "$W/calls"; then fail "--rolling: a3 touched after a2 came back unhealthy"; fi
echo "ok: --rolling stops after the host that left the cluster unhealthy (a2), a3 untouched"
rm -f "$W/calls"

# Env files: what each service is started with.
env_has() { grep -qxF -- "$2" "$W/stage/$1" || fail "$1 lacks '$2': $(cat "$W/stage/$1")"; }
env_has a1/etc/iolake/meta-1.env "IOLAKE_PEERS=1@192.0.2.1:7400,2@192.0.2.2:7400"
env_has a1/etc/iolake/meta-1.env "IOLAKE_LISTEN=192.0.2.1:7400"
env_has a1/etc/iolake/meta-1.env "IOLAKE_DATA_DIR=/srv/iolake/meta-1"
# The cluster key: made once next to the conf, staged 0600 for the hosts
# with a meta member or a gateway only, and given to both.
[ "$(stat -c %a "$W/cluster.conf.key")" = 600 ] || fail "cluster.conf.key is not 0600"
cmp -s "$W/cluster.conf.key" "$W/stage/a1/etc/iolake/cluster.key" || fail "a1's staged key differs"
[ "$(stat -c %a "$W/stage/a2/etc/iolake/cluster.key")" = 600 ] || fail "a2's staged key is not 0600"
[ ! -e "$W/stage/a3/etc/iolake/cluster.key" ] || fail "a3 (OSDs only) got the cluster key"
grep -q -- "--secret-key-file /etc/iolake/cluster.key" "$W/stage/a1/etc/iolake/meta-1.env" ||
	fail "meta-1.env lacks --secret-key-file"
grep -q -- "--secret-key-file /etc/iolake/cluster.key" "$W/stage/a2/etc/iolake/gw.env" ||
	fail "a2's gw.env lacks --secret-key-file"
env_has a1/etc/iolake/meta-1.env "IOLAKE_FLAGS=--ec 2+1 --expect-osds 4 --secret-key-file /etc/iolake/cluster.key --osd-out-after 10m --election-timeout 500ms"
env_has a1/etc/iolake/osd-2.env "IOLAKE_DEVICE=/dev/sdc"
env_has a1/etc/iolake/osd-2.env "IOLAKE_LISTEN=192.0.2.1:7502"
env_has a1/etc/iolake/osd-2.env "IOLAKE_HOST=a1"
env_has a1/etc/iolake/osd-2.env "IOLAKE_FLAGS=--format"
env_has a3/etc/iolake/osd-4.env "IOLAKE_META=192.0.2.1:7400,192.0.2.2:7400"
env_has a3/etc/iolake/osd-4.env "IOLAKE_DEVICE=/dev/disk/by-id/nvme-X"
env_has a2/etc/iolake/gw.env "IOLAKE_S3_LISTEN=192.0.2.2:8080"
env_has a2/etc/iolake/gw.env "IOLAKE_FLAGS=--ec 2+1 --secret-key-file /etc/iolake/cluster.key --region eu-west-1"
[ ! -e "$W/stage/a3/etc/iolake/gw.env" ] || fail "a gateway env on a3 (gw no)"
[ ! -e "$W/stage/a3/etc/iolake/meta-1.env" ] || fail "a meta env on a3 (meta -)"
grep -q '^ExecStart=/opt/iolake/bin/iolake-osd --id %i ' "$W/stage/a1/etc/systemd/system/iolake-osd@.service" ||
	fail "bindir not filled in the OSD unit"
grep -q '^User=iol$' "$W/stage/a1/etc/systemd/system/iolake-meta@.service" || fail "user not filled in"
grep -rq '@BINDIR@\|@USER@' "$W/stage" && fail "a placeholder left in a staged unit"
echo "ok: env files and units staged as the conf says"

# systemd-analyze verify, in a root made of the staging dir: system units
# copied (verify needs sysinit.target & co), binaries where ExecStart says.
verify_root() {   # HOST ROOT
	local r=$2
	rm -rf "$r"
	mkdir -p "$r/usr/lib/systemd" "$r/opt/iolake/bin"
	cp -a /usr/lib/systemd/system "$r/usr/lib/systemd/"
	cp -a "$W/stage/$1/etc" "$r/"
	cp "$B"/iolake-{meta,osd,gw} "$r/opt/iolake/bin/"
}
if command -v systemd-analyze >/dev/null && [ -d /usr/lib/systemd/system ]; then
	for h in a1:iolake-meta@1.service:iolake-osd@1.service:iolake-osd@2.service:iolake-gw.service \
		a3:iolake-osd@4.service; do
		host=${h%%:*}
		IFS=: read -r -a units <<<"${h#*:}"
		verify_root "$host" "$W/root-$host"
		out=$(systemd-analyze verify --root="$W/root-$host" "${units[@]}" 2>&1) ||
			fail "systemd-analyze verify $host: $out"
		[ -z "$out" ] || fail "systemd-analyze verify $host warns: $out"
		echo "ok: systemd-analyze verify: ${units[*]} ($host)"
	done
	# The check can fail: a bad Restart= value and a missing binary.
	sed -i 's/^Restart=on-failure/Restart=sometimes/' "$W/root-a3/etc/systemd/system/iolake-osd@.service"
	rm "$W/root-a3/opt/iolake/bin/iolake-osd"
	out=$(systemd-analyze verify --root="$W/root-a3" iolake-osd@4.service 2>&1) && [ -z "$out" ] &&
		fail "systemd-analyze verify passed a broken unit"
	echo "$out" | grep -q 'restart specifier' || fail "verify did not name the bad Restart=: $out"
	echo "$out" | grep -q 'not executable' || fail "verify did not name the missing binary: $out"
	echo "ok: systemd-analyze verify refuses a broken unit"
else
	echo "SKIP step: systemd-analyze verify: not available here"
fi

# Bad descriptions and arguments are refused, naming the problem.
refuse() {   # PATTERN CONF-LINE... ; or PATTERN -- ARGS...
	local pat=$1 out
	shift
	if [ "$1" = -- ]; then
		shift
		out=$("$DEPLOY" --build "$B" --conf "$W/cluster.conf" --dry-run "$@" 2>&1) && fail "accepted: $*"
	else
		printf '%s\n' "$@" >"$W/bad.conf"
		out=$("$DEPLOY" --build "$B" --conf "$W/bad.conf" --dry-run 2>&1) && fail "accepted: $*"
	fi
	echo "$out" | grep -q -- "$pat" || fail "refusal of '$*' does not say '$pat': $out"
	echo "ok: refused ($pat)"
}
refuse "OSD id 2 used twice" "host a 10.0.0.1 1 yes 1:/dev/sdb,2:/dev/sdc" "host b 10.0.0.2 2 yes 2:/dev/sdb"
refuse "meta id 1 used twice" "host a 10.0.0.1 1 yes 1:/dev/sdb" "host b 10.0.0.2 1 yes 2:/dev/sdb"
refuse "no host runs a meta member" "host a 10.0.0.1 - yes 1:/dev/sdb"
refuse "bad.conf:1: unknown keyword 'hots'" "hots a 10.0.0.1 1 yes -"
refuse "bad.conf:2: GW: yes or no" "ec 4+2" "host a 10.0.0.1 1 maybe -"
refuse "bad.conf:1: bindir takes one value" "bindir /opt/my bin"
refuse "bad.conf:1: bindir ABSOLUTE_PATH" "bindir opt/bin"
refuse "OSDS:" "host a 10.0.0.1 1 yes 1:/dev/sd\$(reboot)"
refuse "--hosts: zz is not in" -- --hosts a1,zz

if command -v shellcheck >/dev/null; then
	# -x: the netns tests source netns_lib.sh.
	shellcheck -x "$TOP/infra/netns-cluster.sh" "$DEPLOY" "$HERE"/netns_lib.sh "$HERE"/test_*netns*.sh \
		"$HERE/test_deploy_dryrun.sh" "$TOP/bench/heal.sh" ||
		fail "shellcheck"
	echo "ok: shellcheck clean"
else
	echo "SKIP step: shellcheck: not installed (scripts/deps.sh installs it)"
fi
echo PASS
