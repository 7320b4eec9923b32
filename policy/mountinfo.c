// SPDX-License-Identifier: MIT
/* The mount table: the broker's own mounts, and ringfence-fsck's test of
 * whether a source is served. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mountinfo.h"

/* mountinfo writes space, tab, newline and backslash in paths as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

int rf_mountinfo_find(const char *mountpoint, const char *fstype, uint32_t *devid)
{
	char line[4096], type[256];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = -ENOENT;

	if (!f)
		return -errno;
	snprintf(type, sizeof(type), " - %s ", fstype);
	while (fgets(line, sizeof(line), f)) {
		unsigned int maj, mnr;
		char mp[2048];

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - FSTYPE SOURCE OPTIONS */
		if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &mnr, mp) != 3)
			continue;
		unescape(mp);
		if (strcmp(mp, mountpoint) == 0 && strstr(line, type)) {
			if (devid)
				*devid = (maj << 20) | mnr;
			found = 0;
		}
	}
	fclose(f);
	return found;
}
