#!/bin/bash
# mkdeb.sh — build IOLake's Debian packages from a release build, with
# Debian's own tools (dpkg-shlibdeps, dpkg-deb). Called by `make deb`.
#
# Usage: scripts/mkdeb.sh BUILD OUT
#   BUILD  the build directory holding the iolake-* binaries (make's B)
#   OUT    where the .debs go (make's DEB_OUT, default build/deb)
#
# Packages (Architecture: this machine's, dpkg --print-architecture):
#   iolake        iolake-aio, -meta, -osd, -gw, -admin; the systemd units
#                 (packaging/systemd/iolake-aio.service, and the cluster units
#                 rendered from infra/deploy/*.service, the one definition
#                 deploy.sh also uses); /etc/iolake/{aio,gw}.env (conffiles);
#                 postinst/prerm/postrm from packaging/debian/
#   iolake-tools  iolake-s3-bench
#
# Version: VERSION (x.y.z) with the commit count and hash appended
# (0.1.0+git430.g63de888), or a tag vX.Y.Z when HEAD is one (X.Y.Z), or
# vX.Y.Z-N-gHASH (X.Y.Z+gitN.gHASH): always a valid, increasing Debian
# version. Depends: what dpkg-shlibdeps derives from the binaries' shared
# libraries (their shlibs/symbols files), never a hand-written list.
set -euo pipefail

die() { echo "mkdeb: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: scripts/mkdeb.sh BUILD OUT"
B=$1
OUT=$2
TOP=$(cd "$(dirname "$0")/.." && pwd)
P=$TOP/packaging

for t in dpkg-deb dpkg-shlibdeps strip help2man; do
	command -v "$t" >/dev/null || die "$t not found (Debian packages dpkg-dev, binutils, help2man: scripts/deps.sh)"
done
BIN_MAIN=(iolake-aio iolake-meta iolake-osd iolake-gw iolake-admin)
BIN_TOOLS=(iolake-s3-bench iolake)
for b in "${BIN_MAIN[@]}" "${BIN_TOOLS[@]}"; do
	[ -x "$B/$b" ] || die "$B/$b missing: run make first"
	# A sanitizer or fuzz build is no release.
	# (grep reads a file, not a pipe: grep -q closing early would make nm
	# die of SIGPIPE and pipefail hide the match.)
	if grep -q '__asan_init\|__sanitizer_' <(nm -D "$B/$b" 2>/dev/null); then
		die "$B/$b is a sanitizer build: make deb builds from a plain make"
	fi
done

# ---------------------------------------------------------------- version
version() {
	local base d
	base=$(tr -d ' \n' <"$TOP/VERSION")
	if d=$(git -C "$TOP" describe --tags --match 'v[0-9]*' 2>/dev/null); then
		d=${d#v}
		case "$d" in
		*-*-g*) local rest=${d%-g*}; echo "${rest%-*}+git${rest##*-}.g${d##*-g}" ;;
		*) echo "$d" ;;
		esac
	elif git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
		echo "$base+git$(git -C "$TOP" rev-list --count HEAD).g$(git -C "$TOP" rev-parse --short=7 HEAD)"
	else
		echo "$base"
	fi
}
VERSION=$(version)
[[ $VERSION =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "'$VERSION' is not a valid Debian version"
ARCH=$(dpkg --print-architecture)
MAINTAINER=${DEB_MAINTAINER:-IOLake developers <iolake@example.org>}
# Reproducible timestamps inside the packages: the commit's time.
SOURCE_DATE_EPOCH=$(git -C "$TOP" log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH

W=$B/deb-stage
rm -rf "$W"
mkdir -p "$W/debian" "$OUT"
# dpkg-shlibdeps reads debian/control to know the packages being built.
printf 'Source: iolake\n\nPackage: iolake\nArchitecture: any\n\nPackage: iolake-tools\nArchitecture: any\n' \
	>"$W/debian/control"

# One line for each binary's manual page (NAME section).
declare -A SUMMARY=(
	[iolake-aio]="a whole IOLake object store (meta, OSDs, S3 gateway) in one process"
	[iolake-meta]="IOLake metadata service, one member of its Raft group"
	[iolake-osd]="IOLake object storage daemon, one device"
	[iolake-gw]="IOLake S3 gateway"
	[iolake-admin]="administer an IOLake cluster"
	[iolake-s3-bench]="S3 load generator: PUT then GET phase, latency percentiles"
	[iolake]="objects over IOLake's native protocol: put, get, head, rm, ls"
)

# Binaries stripped, each with a manual page made from its --help
# (help2man; --help is the reference, the page only carries it to man).
install_bins() {   # ROOT BIN...
	local r=$1; shift
	install -d -m 0755 "$r/usr/bin" "$r/usr/share/man/man1"
	for b in "$@"; do
		install -m 0755 "$B/$b" "$r/usr/bin/$b"
		strip --strip-unneeded --remove-section=.comment --remove-section=.note "$r/usr/bin/$b"
		help2man --no-info --no-discard-stderr --version-string="$VERSION" \
			--name="${SUMMARY[$b]}" "$B/$b" | gzip -9n >"$r/usr/share/man/man1/$b.1.gz" ||
			die "help2man $b failed"
		chmod 0644 "$r/usr/share/man/man1/$b.1.gz"
	done
}

doc() {   # ROOT PKG
	local d=$1/usr/share/doc/$2
	install -d -m 0755 "$d"
	install -m 0644 "$P/debian/copyright" "$d/copyright"
	# A native package (no Debian revision): changelog.gz.
	printf '%s (%s) unstable; urgency=medium\n\n  * Built from commit %s by scripts/mkdeb.sh.\n\n -- %s  %s\n' \
		"$2" "$VERSION" "$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$MAINTAINER" \
		"$(date -u -R -d "@$SOURCE_DATE_EPOCH")" | gzip -9n >"$d/changelog.gz"
}

# ---------------------------------------------------------------- iolake
R=$W/iolake
install_bins "$R" "${BIN_MAIN[@]}"
install -d -m 0755 "$R/lib/systemd/system" "$R/etc/iolake"
install -m 0644 "$P/systemd/iolake-aio.service" "$R/lib/systemd/system/"
for u in iolake-meta@.service iolake-osd@.service iolake-gw.service; do
	sed 's|@BINDIR@|/usr/bin|g; s|@USER@|iolake|g' "$TOP/infra/deploy/$u" >"$R/lib/systemd/system/$u"
	chmod 0644 "$R/lib/systemd/system/$u"
done
grep -q '@[A-Z]*@' "$R"/lib/systemd/system/* && die "a placeholder left in a unit"
install -m 0644 "$P/etc/aio.env" "$P/etc/gw.env" "$R/etc/iolake/"
doc "$R" iolake
install -d -m 0755 "$R/usr/share/doc/iolake/examples"
install -m 0644 "$P/examples/meta-ID.env" "$P/examples/osd-ID.env" "$R/usr/share/doc/iolake/examples/"
install -m 0644 "$TOP/README.md" "$R/usr/share/doc/iolake/README.md"
install -m 0644 "$TOP/docs/operations.md" "$R/usr/share/doc/iolake/operations.md"
install -d -m 0755 "$R/usr/share/lintian/overrides"
install -m 0644 "$P/lintian/iolake" "$R/usr/share/lintian/overrides/iolake"
install -d -m 0755 "$R/DEBIAN"
for s in postinst prerm postrm; do
	install -m 0755 "$P/debian/iolake.$s" "$R/DEBIAN/$s"
done
(cd "$R" && find etc -type f | sort | sed 's|^|/|') >"$R/DEBIAN/conffiles"

# ---------------------------------------------------------------- iolake-tools
T=$W/iolake-tools
install_bins "$T" "${BIN_TOOLS[@]}"
doc "$T" iolake-tools
install -d -m 0755 "$T/DEBIAN"

# ---------------------------------------------------------------- control
shlibs() {   # ROOT -> the Depends value for its ELF files
	local r=$1 args=() f
	for f in "$r"/usr/bin/*; do args+=("-e${f#"$W"/}"); done
	(cd "$W" && dpkg-shlibdeps -O "${args[@]}") | sed -n 's/^shlibs:Depends=//p'
}

control() {   # ROOT PKG DEPENDS SECTION SUMMARY LONG
	local r=$1 size
	size=$(du -sk --exclude=DEBIAN "$r" | cut -f1)
	{
		echo "Package: $2"
		echo "Version: $VERSION"
		echo "Architecture: $ARCH"
		echo "Maintainer: $MAINTAINER"
		echo "Installed-Size: $size"
		echo "Depends: $3"
		echo "Section: $4"
		echo "Priority: optional"
		echo "Description: $5"
		echo "$6" | fold -s -w 72 | sed 's/ *$//; s/^/ /'
	} >"$r/DEBIAN/control"
	# md5sums of every file but the conffiles (dpkg tracks those itself).
	(cd "$r" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
		grep -vxF -f <(sed 's|^/||' DEBIAN/conffiles 2>/dev/null || true) |
		xargs -r md5sum) >"$r/DEBIAN/md5sums"
}

DEP_MAIN=$(shlibs "$R")
DEP_TOOLS=$(shlibs "$T")
if [ -z "$DEP_MAIN" ] || [ -z "$DEP_TOOLS" ]; then
	die "dpkg-shlibdeps found no dependencies"
fi

control "$R" iolake "adduser, $DEP_MAIN" net \
	"distributed, erasure-coded, S3-compatible object store" \
	"IOLake stores objects erasure-coded (Reed-Solomon, ISA-L) across OSDs and speaks S3 (SigV4) through stateless gateways; metadata lives in a Raft group over RocksDB. This package holds iolake-aio (a whole store in one process), iolake-meta, iolake-osd, iolake-gw and iolake-admin, their systemd units (none enabled on install) and /etc/iolake defaults."
control "$T" iolake-tools "$DEP_TOOLS" utils \
	"IOLake tools: iolake-s3-bench, an S3 load generator" \
	"iolake-s3-bench PUTs then GETs objects of a chosen size against any S3 endpoint with SigV4 and prints ops/s, MiB/s and p50/p99/max latency."

for pkg in iolake iolake-tools; do
	deb=$OUT/${pkg}_${VERSION}_${ARCH}.deb
	rm -f "$OUT/${pkg}"_*.deb
	dpkg-deb --root-owner-group -Zxz --build "$W/$pkg" "$deb" >/dev/null
	echo "mkdeb: $deb ($(du -k "$deb" | cut -f1) KiB)"
	echo "  Depends: $(dpkg-deb -f "$deb" Depends)"
done
