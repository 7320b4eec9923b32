#!/bin/bash
# tools/libfuse4.sh [--refresh]: libfuse 3.17 and later as Debian ships it
# (libfuse3.so.4, package libfuse3-4 of the unstable suite), for
# ringfence's libfuse3.so.4: the library and its headers to check that
# one against, and a program built as Debian builds one. Prints the
# directory on standard output, and what it did on standard error:
#
#   root/usr/include/fuse3/        libfuse3-dev's headers (the contract)
#   root/usr/lib/TRIPLET/libfuse3.so.4   libfuse3-4's library (the
#                                  reference for tests/check-libfuse-abi.sh;
#                                  it needs a newer C library than this
#                                  host's, and is only read, never run)
#   bin/passthrough_hp             libfuse's passthrough_hp example from the
#                                  same version's fuse3 source, built
#                                  against those headers and linked with
#                                  that library (it asks for libfuse3.so.4
#                                  and libfuse 3.17's functions)
#   version                        the packages' version
#
# The packages come through a sources list of our own (deb and deb-src,
# unstable) on the host's mirror; apt-get checks them against the
# archive's signed index; dpkg-deb and dpkg-source unpack them. Nothing is
# installed. It builds with the host's g++.
#
# Cache: $RINGFENCE_PEER_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/ringfence/libfuse4.
# A run with a complete cache touches no network.
set -euo pipefail

MIN=3.17
CACHE=${RINGFENCE_PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringfence/libfuse4}
usage() {
	cat <<EOF
usage: tools/libfuse4.sh [--refresh]

Fetch (once) Debian unstable's libfuse3-4 and libfuse3-dev ($MIN or later)
and its fuse3 source, build passthrough_hp against them, in $CACHE, and
print that directory.
  --refresh   look for a newer fuse3 than the cached one
  --help      this text
EOF
}
. "$(dirname "$0")/debian-archive.sh"
archive_cli libfuse4 "$@"
ready() { [ -f "$1/ready" ]; }

archive_cached "$CACHE" "libfuse3-4"
for c in apt-get apt-cache dpkg-deb dpkg-source g++; do
	command -v "$c" >/dev/null || die "$c is missing (make deps installs what make check needs)"
done
TRIPLET=$(gcc -dumpmachine)

MIRROR=$(archive_mirror)
APT=$CACHE/apt
archive_setup "$APT" "deb [signed-by=$KEYRING] $MIRROR unstable main" \
	"deb-src [signed-by=$KEYRING] $MIRROR unstable main"
say "reading the unstable indexes from $MIRROR"
archive_update "Debian unstable's packages"
ver=$(archive_newest libfuse3-4)
[ -n "$ver" ] || die "no libfuse3-4 in Debian unstable"
dpkg --compare-versions "$ver" ge "$MIN" || die "Debian unstable has libfuse3-4 $ver, older than $MIN"
[ "$(archive_newest libfuse3-dev)" = "$ver" ] || die "Debian unstable's libfuse3-dev is not $ver as libfuse3-4 is"

DIR=$CACHE/fuse3-$ver
if ready "$DIR"; then
	say "libfuse3-4 $ver is the newest and is here already"
else
	rm -rf "$DIR"
	mkdir -p "$DIR/bin"
	say "libfuse3-4 and libfuse3-dev $ver: downloading"
	archive_unpack "$APT/debs" "$DIR/root" "libfuse3-4=$ver" "libfuse3-dev=$ver"
	LIB=$DIR/root/usr/lib/$TRIPLET
	[ -e "$LIB/libfuse3.so.4" ] && [ -f "$DIR/root/usr/include/fuse3/fuse_lowlevel.h" ] ||
		die "libfuse3-4 $ver holds no usr/lib/$TRIPLET/libfuse3.so.4, or libfuse3-dev no headers"
	archive_source "$DIR" fuse3 "$ver"
	src=$DIR/src/example/passthrough_hp.cc
	[ -f "$src" ] || die "dpkg-source could not unpack fuse3 $ver"
	say "building passthrough_hp against libfuse3-dev $ver"
	# the library needs a newer C library than this host's: the link takes
	# its word for what it needs
	g++ -O2 -std=c++17 -D_GNU_SOURCE -I"$DIR/root/usr/include/fuse3" -I"$DIR/src/example" \
		-o "$DIR/bin/passthrough_hp" "$src" -L"$LIB" -l:libfuse3.so.4 \
		-Wl,--allow-shlib-undefined -lpthread >"$DIR/build.log" 2>&1 ||
		{ tail -30 "$DIR/build.log" >&2; die "building passthrough_hp failed (see $DIR/build.log)"; }
	rm -rf "$DIR/src" "$DIR/dl"
	echo "$ver" >"$DIR/version"
	touch "$DIR/ready"
fi
archive_keep "$CACHE" "$DIR" fuse3-
rm -f "$APT/debs"/*.deb
say "libfuse3-4 $ver in $DIR"
echo "$DIR"
