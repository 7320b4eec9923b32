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
refresh=0

usage() {
	cat <<EOF
usage: tools/kernel73.sh [--refresh]

Fetch (once) Debian's newest Linux $MIN_MAJOR.$MIN_MINOR-or-later kernel, its modules,
its uapi headers and virtme-ng into $CACHE, and print that directory.
  --refresh   look for a newer kernel than the cached one
  --help      this text
EOF
}
case "${1:-}" in
--refresh) refresh=1 ;;
--help | -h) usage; exit 0 ;;
"") ;;
*) usage >&2; exit 2 ;;
esac

say() { echo "kernel73: $*" >&2; }
die() { echo "kernel73: $*" >&2; exit 1; }

# ready DIR: a complete cache entry (written last, after every step)
ready() { [ -f "$1/ready" ]; }

if [ "$refresh" = 0 ] && [ -L "$CACHE/current" ] && ready "$CACHE/current"; then
	say "Linux $(cat "$CACHE/current/version") (cached in $(readlink -f "$CACHE/current"))"
	readlink -f "$CACHE/current"
	exit 0
fi

for c in apt-get apt-cache dpkg-deb dpkg depmod unxz; do
	command -v "$c" >/dev/null || die "$c is missing (make check-vm installs what it needs)"
done

# The host's Debian mirror: the first deb822 URIs or one-line deb entry of
# an enabled source that serves the main archive (not -security).
mirror() {
	local f u
	if [ -n "${RINGFENCE_VM_MIRROR:-}" ]; then
		echo "$RINGFENCE_VM_MIRROR"
		return
	fi
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		u=$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" |
			grep -v -- '-security' | grep '/debian/\?$' | head -1)
		[ -n "$u" ] && { echo "${u%/}"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f" |
			grep -v -- '-security' | grep '/debian/\?$' | head -1)
		[ -n "$u" ] && { echo "${u%/}"; return; }
	done
	die "no Debian mirror in /etc/apt (set RINGFENCE_VM_MIRROR=http://.../debian)"
}

MIRROR=$(mirror)
APT=$CACHE/apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/debs"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || die "$KEYRING is missing (package debian-archive-keyring)"
cat >"$APT/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR experimental main
deb [signed-by=$KEYRING] $MIRROR unstable main
EOF
AOPT=(-o "Dir::Etc::sourcelist=$APT/sources.list" -o Dir::Etc::sourceparts=/dev/null
	-o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache"
	-o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root)

say "reading the experimental and unstable indexes from $MIRROR"
# apt-get update exits 0 when an index cannot be fetched; it only warns
if ! out=$(apt-get "${AOPT[@]}" -qq update 2>&1) || grep -q '^[WE]: Failed to fetch' <<<"$out"; then
	printf '%s\n' "$out" >&2
	die "cannot read Debian experimental/unstable from $MIRROR (no network to the mirror?)"
fi

# versions PKG: every version of PKG the two suites offer
versions() {
	apt-cache "${AOPT[@]}" madison "$1" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }'
}

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
	for ver in $(versions "$pkg"); do
		if [ -z "$best" ] || dpkg --compare-versions "$ver" gt "$best_ver"; then
			best=$pkg best_ver=$ver
		fi
	done
done < <(apt-cache "${AOPT[@]}" pkgnames linux-binary- 2>/dev/null | sort)
[ -n "$best" ] || die "no Linux $MIN_MAJOR.$MIN_MINOR or later for amd64 in Debian experimental or unstable"
ABI=${best#linux-binary-}
ABI=${ABI%-amd64}
vng_ver=""
for ver in $(versions virtme-ng); do
	if [ -z "$vng_ver" ] || dpkg --compare-versions "$ver" gt "$vng_ver"; then vng_ver=$ver; fi
done
[ -n "$vng_ver" ] || die "no virtme-ng in Debian unstable"

DIR=$CACHE/linux-$best_ver-virtme-ng-$vng_ver
if ready "$DIR"; then
	say "Linux $best_ver is the newest and is cached already"
else
	say "Linux $best_ver ($best), virtme-ng $vng_ver: downloading"
	pkgs=("$best=$best_ver" "linux-modules-$ABI-amd64=$best_ver" "linux-base-$ABI-amd64=$best_ver"
		"linux-libc-dev=$best_ver" "virtme-ng=$vng_ver")
	(cd "$APT/debs" && apt-get "${AOPT[@]}" -qq download "${pkgs[@]}" >&2) ||
		die "cannot download ${pkgs[*]}"
	rm -rf "$DIR"
	mkdir -p "$DIR/root"
	for p in "${pkgs[@]}"; do
		n=${p%%=*} v=${p#*=}
		debs=("$APT/debs/${n}_${v//:/%3a}_"*.deb)
		deb=${debs[0]}
		[ -f "$deb" ] || die "downloaded $n $v, but its .deb is not in $APT/debs"
		dpkg-deb -x "$deb" "$DIR/root"
	done
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
ln -sfn "$(basename "$DIR")" "$CACHE/current"
# keep only the current kernel, and no downloaded .debs
for d in "$CACHE"/linux-*; do
	[ "$d" = "$DIR" ] || rm -rf "$d"
done
rm -f "$APT/debs"/*.deb
say "Linux $best_ver in $DIR"
echo "$DIR"
