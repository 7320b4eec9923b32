// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "status.h"

int rf_status_field(const char *status, const char *key, const char *stops, char *val, size_t len)
{
	char pat[64];
	const char *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), " %s=", key);
	val[0] = '\0';
	p = strstr(status, pat);
	if (!p)
		return -1;
	for (p += strlen(pat); *p && !strchr(stops, *p) && n + 1 < len; p++)
		val[n++] = *p;
	val[n] = '\0';
	return *p && !strchr(stops, *p) ? -1 : 0;
}
