// SPDX-License-Identifier: MIT
/*
 * The worker's two processes tell themselves apart in ps. The kernel
 * reads /proc/PID/cmdline from the argv area it set up at exec; a title
 * written over that area, NUL-padded to its end, is what ps shows. The
 * broker makes the area long enough: its argv[0] is the keeper's title.
 * The plugin host, a fork, rewrites its copy.
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "msg.h"
#include "title.h"

static char *area;
static size_t area_len;

void rf_title_init(int argc, char **argv)
{
	if (argc < 1 || !argv[0])
		return;
	area = argv[0];
	area_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
}

void rf_title_set(const char *role, const char *tenant)
{
	char comm[16];
	int n;

	snprintf(comm, sizeof(comm), "rf-%s", role);
	prctl(PR_SET_NAME, comm, 0, 0, 0);
	if (!area || !area_len)
		return;
	n = snprintf(area, area_len + 1, RF_WORKER_TITLE, role, tenant);
	if (n >= 0 && (size_t)n < area_len)
		memset(area + n, 0, area_len - (size_t)n);
}
