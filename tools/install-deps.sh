#!/bin/sh
# Install the Debian packages ringfence needs to build and test, and any
# named as arguments, only those missing. Runs as root (apt-get); prints
# what it does.
set -eu
# extra packages may be named on the command line (make bench adds its own)
# btrfs-progs, e2fsprogs and xfsprogs: t_disk makes file system images to limit;
# gdb and strace: t_debug attaches them to a debug tenant's plugin host
# libfuse3-dev: the headers ringfence's libfuse3.so.3 is built to, and
# Debian's libfuse3.so.3 its tests compare it with
# squashfuse and squashfs-tools: t_program runs Debian's squashfuse_ll as a
# tenant on an image it makes
PKGS="build-essential pkg-config liburing-dev libseccomp-dev libcap-ng-dev libevent-dev check fio attr python3 util-linux btrfs-progs e2fsprogs xfsprogs libfuse3-dev squashfuse squashfs-tools man-db groff-base gdb strace $*"
missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
