#!/bin/bash
# tools/kernel73.sh [--refresh]: a Linux 7.3-or-later kernel for the test
# guest (make check-vm), and virtme-ng to boot it, from Debian's own
# archive. Prints the directory that holds both on standard output, and
# what it did on standard error.
#
# The packages come from Debian's experimental and unstable suites through
# a sources list of our own, on the same mirror as the host's sources;
# apt-get checks them against the archive's signed index as always. They
# are unpacked with dpkg-deb -x, never installed: the host keeps its kernel
# and its packages. The kernel's modules are decompressed and depmod'ed in
# place (virtme-ng's initramfs loads modules with busybox insmod, which
# reads no .ko.xz), and the guest finds them there.
#
# Cache: $RINGFENCE_VM_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/ringfence/vm.
# A run with a complete cache touches no network; --refresh looks for a
# newer kernel (and virtme-ng) and replaces the cached ones if there is one.
# RINGFENCE_VM_MIRROR overrides the mirror found in /etc/apt.
set -euo pipefail

MIN_MAJOR=7 MIN_MINOR=3
CACHE=${RINGFENCE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringfence/vm}
usage() {
	cat <<EOF
usage: tools/kernel73.sh [--refresh]

Fetch (once) Debian's newest Linux $MIN_MAJOR.$MIN_MINOR-or-later kernel, its modules,
its uapi headers and virtme-ng into $CACHE, and print that directory.
  --refresh   look for a newer kernel than the cached one
  --help      this text
EOF
}
. "$(dirname "$0")/debian-archive.sh"
archive_cli kernel73 "$@"

# ready DIR: a complete cache entry (written last, after every step)
ready() { [ -f "$1/ready" ]; }

archive_cached "$CACHE" Linux

for c in apt-get apt-cache dpkg-deb dpkg depmod unxz; do
	command -v "$c" >/dev/null || die "$c is missing (make check-vm installs what it needs)"
done

MIRROR=$(archive_mirror)
APT=$CACHE/apt
archive_setup "$APT" "deb [signed-by=$KEYRING] $MIRROR experimental main" \
	"deb [signed-by=$KEYRING] $MIRROR unstable main"
say "reading the experimental and unstable indexes from $MIRROR"
archive_update "Debian experimental/unstable"

# Every amd64 kernel flavour "linux-binary-ABI-amd64" (not -cloud, -rt),
# ABI at least MIN_MAJOR.MIN_MINOR; the newest package version wins.
best="" best_ver=""
while read -r pkg; do
	abi=${pkg#linux-binary-}
	abi=${abi%-amd64}
	case "$abi" in *-*) continue ;; esac
	IFS=. read -r maj min _ <<<"${abi%%+*}"
	[[ "$maj" =~ ^[0-9]+$ && "$min" =~ ^[0-9]+$ ]] || continue
	if [ "$maj" -lt $MIN_MAJOR ] || { [ "$maj" = $MIN_MAJOR ] && [ "$min" -lt $MIN_MINOR ]; }; then
		continue
	fi
	ver=$(archive_newest "$pkg")
	if [ -n "$ver" ] && { [ -z "$best" ] || dpkg --compare-versions "$ver" gt "$best_ver"; }; then
		best=$pkg best_ver=$ver
	fi
done < <(apt-cache "${AOPT[@]}" pkgnames linux-binary- 2>/dev/null | sort)
[ -n "$best" ] || die "no Linux $MIN_MAJOR.$MIN_MINOR or later for amd64 in Debian experimental or unstable"
ABI=${best#linux-binary-}
ABI=${ABI%-amd64}
vng_ver=$(archive_newest virtme-ng)
[ -n "$vng_ver" ] || die "no virtme-ng in Debian unstable"

DIR=$CACHE/linux-$best_ver-virtme-ng-$vng_ver
if ready "$DIR"; then
	say "Linux $best_ver is the newest and is cached already"
else
	say "Linux $best_ver ($best), virtme-ng $vng_ver: downloading"
	pkgs=("$best=$best_ver" "linux-modules-$ABI-amd64=$best_ver" "linux-base-$ABI-amd64=$best_ver"
		"linux-libc-dev=$best_ver" "virtme-ng=$vng_ver")
	rm -rf "$DIR"
	archive_unpack "$APT/debs" "$DIR/root" "${pkgs[@]}"
	MODS=$DIR/root/usr/lib/modules/$ABI-amd64
	[ -f "$MODS/vmlinuz" ] || die "$best holds no usr/lib/modules/$ABI-amd64/vmlinuz"
	say "decompressing $(find "$MODS" -name '*.ko.xz' | wc -l) modules"
	find "$MODS" -name '*.ko.xz' -print0 | xargs -0 -r -P "$(nproc)" -n 256 unxz
	depmod -b "$DIR/root/usr" "$ABI-amd64"
	echo "$ABI-amd64" >"$DIR/release"
	echo "$best_ver" >"$DIR/version"
	echo "$vng_ver" >"$DIR/virtme-ng-version"
	touch "$DIR/ready"
fi
archive_keep "$CACHE" "$DIR" linux-
rm -f "$APT/debs"/*.deb
say "Linux $best_ver in $DIR"
echo "$DIR"
