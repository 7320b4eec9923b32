#!/bin/bash
# make check-man: each man page renders with man-db and groff without a
# warning (the check lintian makes), and has the sections a page needs.
set -uo pipefail
fail=0
for page in "$@"; do
	warn=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
	[ -z "$warn" ] || warn+=$'\n'
	warn+=$(groff -ww -man -z "$page" 2>&1)
	[ -z "$warn" ] || warn+=$'\n'
	for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
		grep -q "^\.SH \"\?$s\"\?$" "$page" || warn+="no $s section"$'\n'
	done
	if [ -n "$warn" ]; then
		echo "FAIL $page:" >&2
		echo "$warn" | sed 's/^/  /' >&2
		fail=$((fail + 1))
	else
		echo "PASS $page"
	fi
done
echo "man: $(($# - fail)) passed, $fail failed"
[ $fail = 0 ]
