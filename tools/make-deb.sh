#!/bin/bash
# make deb: build ringfence_VERSION_amd64.deb and ringfence-dev_VERSION_amd64.deb
# from this tree's files (tracked and new ones, not the ignored), in a copy
# under build/deb/ (dpkg-buildpackage writes beside the source tree), unsigned,
# then run lintian on them: any error or warning fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
V=$(sed -n 's/^VERSION := //p' "$ROOT/Makefile")
DV=$(cd "$ROOT" && dpkg-parsechangelog -S Version)
[ "$V" = "$DV" ] || { echo "deb: Makefile says $V, debian/changelog $DV" >&2; exit 1; }
D=$ROOT/build/deb
S=$D/ringfence-$V
rm -rf "$D"
mkdir -p "$S"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$ROOT" && git ls-files -z -c -o --exclude-standard | xargs -0 -I{} sh -c '[ ! -e "{}" ] || printf "%s\0" "{}"' |
		tar --null -T - -cf -) | tar -xf - -C "$S"
else
	(cd "$ROOT" && tar --exclude=./build --exclude='./build-*' -cf - .) | tar -xf - -C "$S"
fi
echo "deb: building in $S"
(cd "$S" && dpkg-buildpackage -us -uc -b) >"$D/build.log" 2>&1 || { tail -40 "$D/build.log" >&2; exit 1; }
echo "deb: lintian"
lintian --fail-on error,warning --display-info "$D"/ringfence_"$V"_amd64.changes
ls -1 "$D"/*.deb
