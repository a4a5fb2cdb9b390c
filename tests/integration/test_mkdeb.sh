#!/bin/bash
# test_mkdeb.sh — scripts/mkdeb.sh (make deb) without installing anything:
# the part of the packaging make test can check offline in seconds (the
# install on a fresh Debian root is make test-deb, tests/deb/).
#
#   - both packages are built, named iolake*_VERSION_ARCH.deb, with a valid
#     Debian version;
#   - Depends covers every library each binary links directly (readelf
#     NEEDED -> dpkg -S -> a package named in Depends, with a >= version):
#     it comes from the binaries, not from a list;
#   - the contents: binaries, units, /etc/iolake conffiles, manual pages,
#     md5sums that match; maintainer scripts parse and are shellcheck-clean;
#   - the cluster units are infra/deploy's templates with /usr/bin and
#     iolake (one definition); aio's unit and env file listen on 127.0.0.1;
#   - systemd-analyze verify passes on the packaged units (and fails on a
#     broken copy); lintian, when installed, prints nothing;
#   - mkdeb refuses a build directory with a binary missing.
set -euo pipefail
export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
B=${IOLAKE_BUILD:?set IOLAKE_BUILD to the build dir}
B=$(cd "$B" && pwd)
W=$(mktemp -d /dev/shm/iolake-mkdeb.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}
for t in dpkg-deb dpkg-shlibdeps help2man; do
	command -v "$t" >/dev/null || { echo "SKIP test_mkdeb: $t not installed (scripts/deps.sh)"; exit 0; }
done

if grep -q '__asan_init' <(nm -D "$B/iolake-aio" 2>/dev/null); then
	echo "SKIP test_mkdeb: $B is a sanitizer build (make deb packs release builds only)"
	exit 0
fi

# mkdeb stages under its BUILD argument: a private one, binaries linked in.
mkdir -p "$W/b"
for b in iolake-aio iolake-meta iolake-osd iolake-gw iolake-admin iolake-s3-bench iolake; do
	[ -x "$B/$b" ] || fail "$B/$b missing"
	ln -s "$B/$b" "$W/b/$b"
done
"$TOP/scripts/mkdeb.sh" "$W/b" "$W/deb" >"$W/mkdeb.out" 2>&1 || { cat "$W/mkdeb.out"; fail "mkdeb.sh failed"; }
cat "$W/mkdeb.out"
ARCH=$(dpkg --print-architecture)
MAIN=$(compgen -G "$W/deb/iolake_*_$ARCH.deb" || true)
TOOLS=$(compgen -G "$W/deb/iolake-tools_*_$ARCH.deb" || true)
if [ -z "$MAIN" ] || [ -z "$TOOLS" ]; then
	fail "want iolake_*_$ARCH.deb and iolake-tools_*_$ARCH.deb: $(ls "$W/deb")"
fi
V=$(dpkg-deb -f "$MAIN" Version)
dpkg --compare-versions "$V" gt 0 || fail "'$V' is not a valid Debian version"
[ "$(basename "$MAIN")" = "iolake_${V}_$ARCH.deb" ] || fail "file name $(basename "$MAIN") does not carry version $V"
[ "$(dpkg-deb -f "$TOOLS" Version)" = "$V" ] || fail "the two packages' versions differ"
echo "ok: iolake and iolake-tools $V ($ARCH)"

# Depends: every directly linked library's package, with a version.
check_depends() {   # DEB
	local deb=$1 deps lib path pkg n=0
	deps=$(dpkg-deb -f "$deb" Depends)
	rm -rf "$W/x"
	dpkg-deb -x "$deb" "$W/x"
	for f in "$W"/x/usr/bin/*; do
		for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|AArch64|64bit/ && !p {print $NF; p = 1}')
			[ -n "$path" ] || path=$(ldconfig -p | awk -v l="$lib" '$1 == l && !p {print $NF; p = 1}')
			[ -n "$path" ] || fail "$(basename "$f") needs $lib, not found by ldconfig"
			pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | awk -F: 'NR == 1 { print $1 }') ||
				pkg=$(dpkg -S "$path" | awk -F: 'NR == 1 { print $1 }')
			[ -n "$pkg" ] || fail "no package owns $path"
			echo "$deps" | grep -Eq "(^|, )$pkg \(>= [^)]+\)" ||
				fail "$(basename "$deb"): $(basename "$f") links $lib ($pkg), not in Depends: $deps"
			n=$((n + 1))
		done
	done
	echo "ok: $(basename "$deb"): $n linked libraries, each one's package in Depends with >= ($deps)"
}
check_depends "$MAIN"
check_depends "$TOOLS"
grep -q '^adduser, ' <<<"$(dpkg-deb -f "$MAIN" Depends)" || fail "iolake does not depend on adduser (postinst calls it)"

# Contents.
rm -rf "$W/m"
dpkg-deb -R "$MAIN" "$W/m"
for f in usr/bin/iolake-aio usr/bin/iolake-meta usr/bin/iolake-osd usr/bin/iolake-gw usr/bin/iolake-admin \
	lib/systemd/system/iolake-aio.service lib/systemd/system/iolake-gw.service \
	lib/systemd/system/iolake-meta@.service lib/systemd/system/iolake-osd@.service \
	etc/iolake/aio.env etc/iolake/gw.env usr/share/doc/iolake/copyright \
	usr/share/man/man1/iolake-aio.1.gz usr/share/doc/iolake/examples/osd-ID.env; do
	[ -f "$W/m/$f" ] || fail "iolake lacks /$f"
done
[ "$(cat "$W/m/DEBIAN/conffiles")" = "$(printf '/etc/iolake/aio.env\n/etc/iolake/gw.env')" ] ||
	fail "conffiles: $(cat "$W/m/DEBIAN/conffiles")"
(cd "$W/m" && md5sum --quiet -c DEBIAN/md5sums) || fail "md5sums do not match the files"
! grep -q '^[0-9a-f]*  etc/' "$W/m/DEBIAN/md5sums" || fail "md5sums lists a conffile"
tools_list=$(dpkg-deb -c "$TOOLS")
grep -q ' ./usr/bin/iolake-s3-bench$' <<<"$tools_list" || fail "iolake-tools lacks iolake-s3-bench"
grep -q ' ./usr/bin/iolake$' <<<"$tools_list" || fail "iolake-tools lacks iolake (the native CLI)"
for s in postinst prerm postrm; do
	[ -x "$W/m/DEBIAN/$s" ] || fail "$s is not executable"
	sh -n "$W/m/DEBIAN/$s" || fail "$s does not parse"
done
echo "ok: binaries, 4 units, conffiles aio.env and gw.env, manual pages, md5sums match, maintainer scripts parse"

# One definition of the cluster units; aio's safe default address.
for u in iolake-meta@.service iolake-osd@.service iolake-gw.service; do
	sed 's|@BINDIR@|/usr/bin|g; s|@USER@|iolake|g' "$TOP/infra/deploy/$u" |
		diff -u - "$W/m/lib/systemd/system/$u" || fail "packaged $u differs from infra/deploy/$u"
done
U=$W/m/lib/systemd/system/iolake-aio.service
grep -qx 'User=iolake' "$U" || fail "aio unit: no User=iolake"
grep -qx 'EnvironmentFile=/etc/iolake/aio.env' "$U" || fail "aio unit: no EnvironmentFile=/etc/iolake/aio.env"
grep -q '^ExecStart=/usr/bin/iolake-aio ' "$U" || fail "aio unit: ExecStart is not /usr/bin/iolake-aio"
grep -qx 'ReadWritePaths=/var/lib/iolake' "$U" || fail "aio unit: data dir not writable"
grep -qx 'IOLAKE_S3_LISTEN=127.0.0.1:9000' "$W/m/etc/iolake/aio.env" || fail "aio.env does not listen on 127.0.0.1:9000"
grep -q '^IOLAKE_DATA_DIR=/var/lib/iolake/' "$W/m/etc/iolake/aio.env" || fail "aio.env's data dir is outside /var/lib/iolake"
echo "ok: cluster units = infra/deploy templates (/usr/bin, iolake); aio unit and aio.env on 127.0.0.1:9000"

if command -v systemd-analyze >/dev/null && [ -d /usr/lib/systemd/system ]; then
	V=$W/verify
	mkdir -p "$V/usr/lib/systemd" "$V/etc"
	cp -a /usr/lib/systemd/system "$V/usr/lib/systemd/"
	cp -a "$W/m/usr/bin" "$V/usr/"
	cp -a "$W/m/etc/iolake" "$V/etc/"
	cp "$W/m"/lib/systemd/system/* "$V/usr/lib/systemd/system/"
	out=$(systemd-analyze verify --root="$V" iolake-aio.service iolake-gw.service \
		iolake-meta@1.service iolake-osd@1.service 2>&1) || fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
	sed -i 's|^ExecStart=/usr/bin/iolake-aio|ExecStart=/usr/bin/iolake-aoi|' "$V/usr/lib/systemd/system/iolake-aio.service"
	out=$(systemd-analyze verify --root="$V" iolake-aio.service 2>&1) && [ -z "$out" ] &&
		fail "systemd-analyze verify passed a unit whose binary is missing"
	echo "ok: systemd-analyze verify: the 4 packaged units pass, a wrong ExecStart does not"
else
	echo "SKIP step: systemd-analyze verify: not available here"
fi
if command -v lintian >/dev/null; then
	out=$(lintian --tag-display-limit 0 "$MAIN" "$TOOLS" 2>&1 | grep -v 'running with root privileges' || true)
	[ -z "$out" ] || fail "lintian: $out"
	echo "ok: lintian prints nothing"
else
	echo "SKIP step: lintian: not installed"
fi
if command -v shellcheck >/dev/null; then
	shellcheck "$TOP/scripts/mkdeb.sh" "$TOP/tests/deb/test_deb_install.sh" "$0" \
		"$TOP"/packaging/debian/iolake.p* || fail "shellcheck"
	echo "ok: shellcheck clean: mkdeb.sh, test_deb_install.sh, this test, the maintainer scripts"
fi

# It can fail: a build directory without one of the binaries.
rm "$W/b/iolake-gw"
if "$TOP/scripts/mkdeb.sh" "$W/b" "$W/deb2" >"$W/neg.out" 2>&1; then
	fail "mkdeb.sh packed a build without iolake-gw"
fi
grep -q 'iolake-gw missing' "$W/neg.out" || fail "mkdeb.sh did not name the missing binary: $(cat "$W/neg.out")"
echo "ok: mkdeb.sh refuses a build without iolake-gw"
echo PASS
