#!/bin/bash
# tools/libfuse-program.sh [--refresh]: the benchmark's libfuse program,
# libfuse's passthrough_hp example as the host's own Debian release ships
# its source (fuse3 of that suite: 3.14 in Debian 12), built against the
# host's libfuse3-dev and linked with its libfuse3.so.3, as any libfuse
# program on the host is. make bench runs this one binary two ways: on
# Debian's libfuse, and as a ringfence tenant's program through
# ringfence's libfuse3.so.3 (same code, two hosts). Prints the directory
# that holds it on standard output, and what it did on standard error:
#
#   bin/passthrough_hp   the program
#   version              the source package's version
#
# The source comes through a sources list of our own (deb-src, the host's
# suite) on the host's mirror; apt-get checks it against the archive's
# signed index, dpkg-source unpacks it with Debian's patches. It builds
# with g++ and the host's libfuse3-dev (make bench installs them).
#
# Cache: $RINGFENCE_PEER_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/ringfence/libfuse-program.
# A run with a complete cache touches no network.
set -euo pipefail

CACHE=${RINGFENCE_PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringfence/libfuse-program}
usage() {
	cat <<EOF2
usage: tools/libfuse-program.sh [--refresh]

Fetch (once) the fuse3 source of this host's Debian release, build its
passthrough_hp example against the host's libfuse3, in $CACHE, and print
that build's directory.
  --refresh   look for a newer fuse3 than the cached one
  --help      this text
EOF2
}
. "$(dirname "$0")/debian-archive.sh"
archive_cli libfuse-program "$@"
ready() { [ -f "$1/ready" ]; }

archive_cached "$CACHE" fuse3
for c in apt-get apt-cache dpkg-source g++ pkg-config; do
	command -v "$c" >/dev/null || die "$c is missing (make bench installs what it needs)"
done
pkg-config --exists fuse3 || die "pkg-config finds no fuse3 (make bench installs libfuse3-dev)"
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$SUITE" ] || die "/etc/os-release names no release (VERSION_CODENAME)"

MIRROR=$(archive_mirror)
APT=$CACHE/apt
archive_setup "$APT" "deb-src [signed-by=$KEYRING] $MIRROR $SUITE main"
say "reading the $SUITE source index from $MIRROR"
archive_update "Debian $SUITE's sources"
ver=$(archive_newest fuse3 src)
[ -n "$ver" ] || die "no fuse3 source package in Debian $SUITE"

DIR=$CACHE/fuse3-$ver
if ready "$DIR"; then
	say "fuse3 $ver is the newest of $SUITE and is built already"
else
	rm -rf "$DIR"
	mkdir -p "$DIR/bin"
	archive_source "$DIR" fuse3 "$ver"
	src=$DIR/src/example/passthrough_hp.cc
	[ -f "$src" ] || die "dpkg-source could not unpack fuse3 $ver"
	say "building passthrough_hp against the host's libfuse3 $(pkg-config --modversion fuse3)"
	# shellcheck disable=SC2046 # pkg-config's words
	g++ -O2 -std=c++17 -D_GNU_SOURCE $(pkg-config --cflags fuse3) -I"$DIR/src/example" \
		-o "$DIR/bin/passthrough_hp" "$src" $(pkg-config --libs fuse3) -lpthread >"$DIR/build.log" 2>&1 ||
		{ tail -30 "$DIR/build.log" >&2; die "building passthrough_hp failed (see $DIR/build.log)"; }
	echo "$ver" >"$DIR/version"
	touch "$DIR/ready"
fi
archive_keep "$CACHE" "$DIR" fuse3-
rm -f "$APT/cache/archives/"*.deb
say "fuse3 $ver in $DIR"
echo "$DIR"
