#!/bin/bash
# tools/libfuse-peer.sh [--refresh]: the benchmark's peer, libfuse's
# passthrough_hp example, built from Debian's own fuse3 source package of
# the unstable suite (3.18 or later), with FUSE io-uring support. Prints
# the directory that holds the two builds on standard output, and what it
# did on standard error:
#
#   bin/passthrough_hp           as libfuse ships it
#   bin/passthrough_hp-matched   the same program with its kernel caches
#                                set as ringfence's passthrough plugin sets
#                                them (see below)
#   lib/libfuse3.so.4            the library itself, shared, for a program
#                                linked with libfuse3.so.4 to run on this
#                                host (make bench's hp4 targets: Debian
#                                unstable's needs a newer C library)
#   version                      the source package's version
#
# The source comes through a sources list of our own (deb-src, unstable)
# on the host's mirror; apt-get checks it against the archive's signed
# index, dpkg-source unpacks it with Debian's patches. It builds with the
# host's meson, g++, liburing-dev and libnuma-dev (make bench installs
# them) and is never installed: the host keeps its libfuse.
#
# The matched build. passthrough_hp has two cache modes: by default every
# entry and attribute is valid for a day, and the writeback cache and
# FOPEN_KEEP_CACHE are on; with --nocache all of them are off and the
# timeouts are 0. ringfence's passthrough runs with no writeback cache, no
# FOPEN_KEEP_CACHE and entry and attribute timeouts of 1 s. The matched
# build is run with --nocache and has that mode's every timeout (each
# place the program hands fs.timeout to the kernel as a time to live) set
# to RF_PEER_TTL seconds, default 1; nothing else changes.
#
# Cache: $RINGFENCE_PEER_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/ringfence/libfuse.
# A run with a complete cache touches no network.
set -euo pipefail

MIN=3.18
TTL=${RF_PEER_TTL:-1.0}
CACHE=${RINGFENCE_PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringfence/libfuse}
usage() {
	cat <<EOF
usage: tools/libfuse-peer.sh [--refresh]

Fetch (once) Debian unstable's fuse3 source ($MIN or later), build its
passthrough_hp example as shipped and with ringfence's cache settings, in
$CACHE, and print that build's directory.
  --refresh   look for a newer fuse3 than the cached one
  --help      this text
EOF
}
. "$(dirname "$0")/debian-archive.sh"
archive_cli libfuse-peer "$@"
# ready DIR: a complete build, its matched copy made with this TTL
ready() { [ -f "$1/ready" ] && [ "$(cat "$1/ttl")" = "$TTL" ] && [ -e "$1/lib/libfuse3.so.4" ]; }

archive_cached "$CACHE" fuse3
for c in apt-get apt-cache dpkg-source meson ninja g++ pkg-config; do
	command -v "$c" >/dev/null || die "$c is missing (make bench installs what it needs)"
done
for p in liburing numa; do
	pkg-config --exists "$p" || die "pkg-config finds no $p (make bench installs its -dev package)"
done

MIRROR=$(archive_mirror)
APT=$CACHE/apt
archive_setup "$APT" "deb-src [signed-by=$KEYRING] $MIRROR unstable main"
say "reading the unstable source index from $MIRROR"
archive_update "Debian unstable's sources"
ver=$(archive_newest fuse3 src)
[ -n "$ver" ] || die "no fuse3 source package in Debian unstable"
dpkg --compare-versions "$ver" ge "$MIN" || die "Debian unstable has fuse3 $ver, older than $MIN"
# the upstream version, which names the shared library's file
ver_up=${ver#*:}
ver_up=${ver_up%-*}

DIR=$CACHE/fuse3-$ver
if ready "$DIR"; then
	say "fuse3 $ver is the newest and is built already"
else
	rm -rf "$DIR"
	mkdir -p "$DIR/bin"
	archive_source "$DIR" fuse3 "$ver"
	[ -f "$DIR/src/example/passthrough_hp.cc" ] || die "dpkg-source could not unpack fuse3 $ver"
	# the build with io-uring: meson turns it off silently without liburing
	# or libnuma, so the check below asks its configuration
	build() { # SRCDIR BUILDDIR [LIBRARY TARGET]
		local kind=static
		[ -z "${3:-}" ] || kind=shared
		meson setup "$2" "$1" --buildtype=release -Ddefault_library=$kind \
			-Dexamples=true -Dutils=false -Dtests=false -Denable-io-uring=true >"$2.log" 2>&1 ||
			{ cat "$2.log" >&2; die "meson setup failed in $1"; }
		grep -q '^#define HAVE_URING' "$2/fuse_config.h" ||
			die "fuse3 configured without io-uring in $2 (see $2.log)"
		ninja -C "$2" "${3:-example/passthrough_hp}" >>"$2.log" 2>&1 ||
			{ tail -30 "$2.log" >&2; die "building ${3:-passthrough_hp} failed (see $2.log)"; }
	}
	say "building passthrough_hp"
	build "$DIR/src" "$DIR/build"
	cp "$DIR/build/example/passthrough_hp" "$DIR/bin/passthrough_hp"
	say "building libfuse3.so.4"
	build "$DIR/src" "$DIR/build-shared" "lib/libfuse3.so.$ver_up"
	mkdir -p "$DIR/lib"
	cp "$DIR/build-shared/lib/libfuse3.so.$ver_up" "$DIR/lib/libfuse3.so.4"

	# the matched copy: every time to live handed to the kernel becomes TTL
	cp -a "$DIR/src" "$DIR/src-matched"
	f=$DIR/src-matched/example/passthrough_hp.cc
	sed -i -E 's/\b((e(\.|->)(attr|entry)_timeout) = )fs\.timeout;/\1RF_PEER_TTL;/;
		s/fuse_reply_attr\(req, &attr, fs\.timeout\)/fuse_reply_attr(req, \&attr, RF_PEER_TTL)/' "$f"
	n=$(grep -c 'RF_PEER_TTL' "$f")
	left=$(grep -c -E '_timeout = fs\.timeout|fuse_reply_attr\(req, &attr, fs\.timeout' "$f" || true)
	[ "$n" -ge 3 ] && [ "$left" = 0 ] ||
		die "passthrough_hp.cc of fuse3 $ver no longer hands fs.timeout to the kernel as this script expects ($n changed, $left left)"
	sed -i "1i #define RF_PEER_TTL $TTL /* ringfence bench: matched caches */" "$f"
	say "building passthrough_hp-matched ($n times to live set to $TTL s)"
	build "$DIR/src-matched" "$DIR/build-matched"
	cp "$DIR/build-matched/example/passthrough_hp" "$DIR/bin/passthrough_hp-matched"
	echo "$ver" >"$DIR/version"
	echo "$TTL" >"$DIR/ttl"
	touch "$DIR/ready"
fi
archive_keep "$CACHE" "$DIR" fuse3-
rm -f "$APT/cache/archives/"*.deb
say "fuse3 $ver in $DIR"
echo "$DIR"
