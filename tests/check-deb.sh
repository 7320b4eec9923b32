#!/bin/bash
# make check-deb: build the Debian packages (tools/make-deb.sh, lintian
# clean), unpack them into a scratch root and check the file list, build the
# SDK example against the unpacked ringfence-dev, then install them on this
# host, run the installed broker without options on a memfs tenant, and
# purge them: nothing of theirs may be left. Needs root; refuses a host
# where ringfence is installed or its state directories exist already.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
V=$(sed -n 's/^VERSION := //p' "$ROOT/Makefile")
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
D=$ROOT/build/deb
fail() { echo "deb: FAIL: $*" >&2; exit 1; }
say() { echo "deb: $*"; }

[ "$(id -u)" = 0 ] || fail "run as root"
for p in ringfence ringfence-dev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed" &&
		fail "$p is installed on this host; this check installs and purges its own"
done
for d in /etc/ringfence /var/lib/ringfence; do
	[ ! -e "$d" ] || fail "$d exists on this host; purging the test's package would touch it"
done

"$ROOT/tools/make-deb.sh"

T=$(mktemp -d /tmp/ringfence-deb.XXXXXX)
chmod 755 "$T"
. "$ROOT/tools/hoststate.sh"
host_save
BROKER="" INSTALLED=0
cleanup() {
	local rc=$?
	if [ -n "$BROKER" ] && kill -0 "$BROKER" 2>/dev/null; then
		kill -TERM "$BROKER"
		wait "$BROKER" 2>/dev/null || true
	fi
	mountpoint -q "$T/mnt" 2>/dev/null && umount -l "$T/mnt"
	if [ $INSTALLED = 1 ]; then
		dpkg --purge ringfence-dev ringfence >/dev/null 2>&1 || true
		rm -f /etc/ringfence/ringfence.policy
		rmdir /etc/ringfence 2>/dev/null || true
	fi
	host_restore
	rm -rf --one-file-system "$T"
	exit $rc
}
trap cleanup EXIT

say "unpacked into a scratch root: the file list"
files() { dpkg -c "$1" | awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); print $6 }' | LC_ALL=C sort; }
files "$D/ringfence_${V}_amd64.deb" >"$T/got"
{
	printf '%s\n' etc/ringfence/seccomp.policy etc/ringfence/worker.policy etc/ringfence/program.policy \
		lib/systemd/system/ringfenced.service \
		usr/lib/$MA/ringfence/libfuse/libfuse3.so.3 usr/lib/$MA/ringfence/libfuse/libfuse3.so.4 \
		usr/lib/$MA/ringfence/libfuse/libringfence-plugin.so.1 \
		usr/lib/$MA/ringfence/plugins/hello.so usr/lib/$MA/ringfence/plugins/memfs.so \
		usr/lib/$MA/ringfence/plugins/passthrough.so usr/libexec/ringfence/ringfence-worker \
		usr/sbin/ringfence-fsck usr/sbin/ringfence-plugin-check usr/sbin/ringfencectl usr/sbin/ringfenced \
		usr/share/doc/ringfence/changelog.gz usr/share/doc/ringfence/copyright \
		usr/share/doc/ringfence/examples/ringfence.policy \
		usr/share/man/man5/ringfence-seccomp.policy.5.gz usr/share/man/man5/ringfence.policy.5.gz \
		usr/share/man/man8/ringfence-fsck.8.gz usr/share/man/man8/ringfence-plugin-check.8.gz \
		usr/share/man/man8/ringfencectl.8.gz \
		usr/share/man/man8/ringfenced.8.gz
	# README.md and docs/*.md, compressed or not as dh_compress decides
	for f in "$ROOT"/README.md "$ROOT"/docs/*.md; do
		b=$(basename "$f")
		grep -qx "usr/share/doc/ringfence/$b.gz" "$T/got" && b=$b.gz
		echo "usr/share/doc/ringfence/$b"
	done
} | LC_ALL=C sort >"$T/want"
diff "$T/want" "$T/got" || fail "ringfence's files differ (- expected, + packaged)"
printf '%s\n' usr/include/ringfence/plugin.h usr/lib/$MA/pkgconfig/ringfence-plugin.pc \
	usr/lib/$MA/ringfence/libringfence-plugin.so usr/share/lintian/overrides/ringfence-dev usr/share/man/man3/ringfence-plugin.3.gz \
	usr/share/doc/ringfence-dev/changelog.gz usr/share/doc/ringfence-dev/copyright \
	usr/share/doc/ringfence-dev/examples/sdk/Makefile usr/share/doc/ringfence-dev/examples/sdk/motd.c |
	LC_ALL=C sort >"$T/want"
files "$D/ringfence-dev_${V}_amd64.deb" >"$T/got"
diff "$T/want" "$T/got" || fail "ringfence-dev's files differ (- expected, + packaged)"
R=$T/root
dpkg -x "$D/ringfence_${V}_amd64.deb" "$R"
dpkg -x "$D/ringfence-dev_${V}_amd64.deb" "$R"
"$R/usr/sbin/ringfenced" --version | grep -qx "plugin_dir /usr/lib/$MA/ringfence/plugins" ||
	fail "built-in paths: $("$R/usr/sbin/ringfenced" --version)"
grep -qx "ExecStart=/usr/sbin/ringfenced -f -c /etc/ringfence/ringfence.policy" \
	"$R/lib/systemd/system/ringfenced.service" || fail "the unit's ExecStart"
[ "$(dpkg-deb -f "$D/ringfence_${V}_amd64.deb" Version)" = "$V" ] || fail "version"
dpkg-deb -f "$D/ringfence_${V}_amd64.deb" Depends | grep -q liburing || fail "no dependency on liburing"

say "the SDK example against the unpacked ringfence-dev alone"
cp -r "$R/usr/share/doc/ringfence-dev/examples/sdk" "$T/sdk"
PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR=$R/usr/lib/$MA/pkgconfig make -s -C "$T/sdk" >"$T/sdk.log" 2>&1 ||
	{ cat "$T/sdk.log" >&2; fail "the SDK example did not build"; }

say "installed on this host: the broker without options serves a memfs tenant and squashfuse_ll"
INSTALLED=1
dpkg -i "$D/ringfence_${V}_amd64.deb" "$D/ringfence-dev_${V}_amd64.deb" >"$T/dpkg.log" 2>&1 ||
	{ cat "$T/dpkg.log" >&2; fail "dpkg -i"; }
# the unit as systemd reads it (this host's PID 1 is not systemd, so the
# broker is started here as the unit's ExecStart would)
systemd-analyze verify --man=no /lib/systemd/system/ringfenced.service >"$T/verify.log" 2>&1 ||
	{ cat "$T/verify.log" >&2; fail "systemd-analyze verify ringfenced.service"; }
mkdir -p "$T/mnt" "$T/sq" "$T/tree" "$T/img"
# and a program, with the installed libfuse3.so.3, runtime and program.policy
echo "from the image" >"$T/tree/f"
mksquashfs "$T/tree" "$T/img/t.sqfs" -noappend -quiet >/dev/null || fail "mksquashfs"
printf '[global]\ncontrol_socket = %s/ctl.sock\n\n[mount memfs]\nmountpoint = %s/mnt\nplugin = memfs\n\n' \
	"$T" "$T" >/etc/ringfence/ringfence.policy
printf '[mount sq]\nmountpoint = %s/sq\nprogram = /usr/bin/squashfuse_ll\nsource = %s/img\nread_only = yes\n' \
	"$T" "$T" >>/etc/ringfence/ringfence.policy
printf 'program_args = /source/t.sqfs {mountpoint}\n' >>/etc/ringfence/ringfence.policy
/usr/sbin/ringfenced --check /etc/ringfence/ringfence.policy >/dev/null || fail "--check of the policy"
/usr/sbin/ringfenced -f >"$T/broker.log" 2>&1 &
BROKER=$!
for _ in $(seq 100); do
	[ "$(/usr/sbin/ringfencectl -s "$T/ctl.sock" status 2>/dev/null | grep -c "state=running")" = 2 ] && break
	kill -0 "$BROKER" 2>/dev/null || { cat "$T/broker.log" >&2; fail "the installed broker exited"; }
	sleep 0.1
done
W=$(/usr/sbin/ringfencectl -s "$T/ctl.sock" status memfs | tr ' ' '\n' | sed -n 's/^worker=//p')
[ "$(readlink "/proc/$W/exe")" = /usr/libexec/ringfence/ringfence-worker ] || fail "worker $W is $(readlink "/proc/$W/exe")"
echo hello >"$T/mnt/f" && [ "$(cat "$T/mnt/f")" = hello ] || fail "memfs round trip"
[ "$(cat "$T/sq/f")" = "from the image" ] || { cat "$T/broker.log" >&2; fail "squashfuse_ll's file"; }
kill -TERM "$BROKER"
wait "$BROKER" || fail "the broker exited with $?"
BROKER=""
mountpoint -q "$T/mnt" && fail "still mounted"
mountpoint -q "$T/sq" && fail "the program's mount is still there"
[ -s /var/lib/ringfence/users ] || fail "no users_file was written"

say "purged: nothing of the packages left"
rm /etc/ringfence/ringfence.policy
dpkg --purge ringfence-dev ringfence >"$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log" >&2; fail "dpkg --purge"; }
INSTALLED=0
for f in /usr/sbin/ringfenced /usr/libexec/ringfence /usr/lib/$MA/ringfence /etc/ringfence \
	/var/lib/ringfence /lib/systemd/system/ringfenced.service /usr/include/ringfence \
	/usr/share/doc/ringfence /usr/share/man/man8/ringfenced.8.gz; do
	[ ! -e "$f" ] || fail "$f is left after purge"
done
dpkg-query -W ringfence >/dev/null 2>&1 && fail "dpkg still knows ringfence"
say "ok: ringfence_${V}_amd64.deb and ringfence-dev_${V}_amd64.deb"
