#!/bin/bash
# Debian's own archive, beside the host's packages: sourced by
# tools/kernel73.sh (a newer kernel for the test guest) and
# tools/libfuse-peer.sh and tools/libfuse-program.sh (the benchmark's
# libfuse programs, built from their source package). Nothing is installed: apt-get reads a sources list and index
# directories of the caller's, checks what it fetches against the
# archive's signed index as always, and leaves the host's state alone.
#
#   archive_cli NAME ARGS...   the scripts' one option (--refresh sets
#                               refresh=1; --help prints usage()), and
#                               say() / die() prefixed with NAME
#   archive_setup DIR LINE...   write DIR/sources.list from LINEs (with
#                               MIRROR and KEYRING expanded by the caller),
#                               set AOPT to the apt options that use it
#   archive_update WHAT         fetch its indexes, or die naming WHAT
#   archive_mirror              the host's Debian mirror (or
#                               $RINGFENCE_VM_MIRROR)
#   archive_source DIR PKG VER  download source package PKG=VER into
#                               DIR/dl and unpack it into DIR/src, or die
#   archive_unpack DEBS ROOT PKG=VER...  download each binary package into
#                               DEBS and unpack it into ROOT, or die
#   archive_cached CACHE WHAT   with no --refresh and CACHE/current a
#                               complete entry (the caller's ready DIR),
#                               say so naming WHAT, print it and exit 0
#   archive_keep CACHE DIR PREFIX  point CACHE/current at DIR and remove
#                               every other CACHE/PREFIX* entry
# The caller defines usage() and ready().
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

archive_cli() {
	ARCHIVE_NAME=$1
	refresh=0
	case "${2:-}" in
	--refresh) refresh=1 ;;
	--help | -h) usage; exit 0 ;;
	"") ;;
	*) usage >&2; exit 2 ;;
	esac
}
say() { echo "$ARCHIVE_NAME: $*" >&2; }
die() { echo "$ARCHIVE_NAME: $*" >&2; exit 1; }

# The first deb822 URIs or one-line deb entry of an enabled source that
# serves the main archive (not -security).
archive_mirror() {
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

archive_setup() {
	local dir=$1
	shift
	[ -f "$KEYRING" ] || die "$KEYRING is missing (package debian-archive-keyring)"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	printf '%s\n' "$@" >"$dir/sources.list"
	AOPT=(-o "Dir::Etc::sourcelist=$dir/sources.list" -o Dir::Etc::sourceparts=/dev/null
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
		-o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root)
}

archive_update() {
	local out
	# apt-get update exits 0 when an index cannot be fetched; it only warns
	if ! out=$(apt-get "${AOPT[@]}" -qq update 2>&1) || grep -q '^[WE]: Failed to fetch' <<<"$out"; then
		printf '%s\n' "$out" >&2
		die "cannot read $1 from $(archive_mirror) (no network to the mirror?)"
	fi
}

# archive_newest PKG [src]: the newest version of PKG (a source package
# with "src") the sources list offers, or nothing
archive_newest() {
	local best="" ver vers
	if [ "${2:-}" = src ]; then
		vers=$(apt-cache "${AOPT[@]}" showsrc "$1" 2>/dev/null | awk '$1 == "Version:" { print $2 }')
	else
		vers=$(apt-cache "${AOPT[@]}" madison "$1" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }')
	fi
	for ver in $vers; do
		if [ -z "$best" ] || dpkg --compare-versions "$ver" gt "$best"; then best=$ver; fi
	done
	echo "$best"
}

archive_source() {
	local dsc
	say "$2 $3: downloading the source"
	mkdir -p "$1/dl"
	(cd "$1/dl" && apt-get "${AOPT[@]}" -qq source --download-only "$2=$3" >&2) ||
		die "cannot download the $2 $3 source"
	dsc=("$1"/dl/"$2"_*.dsc)
	[ -f "${dsc[0]}" ] || die "downloaded $2 $3, but no .dsc is in $1/dl"
	# apt-get checked every file against the signed Sources index; the .dsc
	# signature of its maintainer needs debian-keyring, which we do not ask for
	dpkg-source -q -x "${dsc[0]}" "$1/src" 2>&1 | grep -v -e "^gpgv:" -e "cannot verify inline signature" >&2 || true
}

archive_unpack() {
	local debs=$1 root=$2 p n v f
	shift 2
	mkdir -p "$debs" "$root"
	(cd "$debs" && apt-get "${AOPT[@]}" -qq download "$@" >&2) || die "cannot download $*"
	for p in "$@"; do
		n=${p%%=*} v=${p#*=}
		f=("$debs/${n}_${v//:/%3a}_"*.deb)
		[ -f "${f[0]}" ] || die "downloaded $n $v, but its .deb is not in $debs"
		dpkg-deb -x "${f[0]}" "$root"
	done
}

archive_cached() {
	[ "$refresh" = 0 ] && [ -L "$1/current" ] && ready "$1/current" || return 0
	say "$2 $(cat "$1/current/version") (cached in $(readlink -f "$1/current"))"
	readlink -f "$1/current"
	exit 0
}

archive_keep() {
	local d
	ln -sfn "$(basename "$2")" "$1/current"
	for d in "$1/$3"*; do
		[ "$d" = "$2" ] || rm -rf "$d"
	done
}
