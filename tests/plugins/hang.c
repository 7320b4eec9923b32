// SPDX-License-Identifier: MIT
/*
 * hang: a test plugin that misbehaves on request. With the option
 * "hang_init" its init never returns; with "crash_init" it dies in init;
 * with "slow_init" its init takes 1.5 s. Otherwise it serves an empty
 * read-only root in which a lookup of "stuck" is never answered; with
 * "slow_getattr" every getattr takes two seconds; with "hang_statfs" no
 * statfs is ever answered; with "crash_getattr" every getattr kills the
 * worker.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ringfence/plugin.h"

static int slow_getattr, hang_statfs, crash_getattr;

static int hang_init(const struct rf_init_args *a, void **ud)
{
	*ud = NULL;
	slow_getattr = strstr(a->options, "slow_getattr") != NULL;
	hang_statfs = strstr(a->options, "hang_statfs") != NULL;
	crash_getattr = strstr(a->options, "crash_getattr") != NULL;
	if (strstr(a->options, "slow_init"))
		usleep(1500 * 1000); /* the deny list lets init sleep */
	if (strstr(a->options, "hang_init"))
		for (;;)
			pause();
	if (strstr(a->options, "crash_init"))
		*(volatile int *)0 = 1; /* a real fault: raise() is ignored by a PID 1 */
	return 0;
}

/* "stuck" never gets an answer; anything else does not exist */
static void hang_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	(void)parent;
	if (strcmp(name, "stuck"))
		rf_reply_err(req, ENOENT);
	/* else: no reply, ever */
}

static void hang_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	if (slow_getattr)
		sleep(2); /* long enough to be killed in the middle */
	if (crash_getattr)
		*(volatile int *)0 = 1;
	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = S_IFDIR | 0555;
	st.st_nlink = 2;
	rf_reply_attr(req, &st, 1);
}

static void hang_statfs_op(struct rf_req *req, uint64_t ino)
{
	struct statvfs st;

	(void)ino;
	if (hang_statfs)
		return; /* no reply, ever */
	memset(&st, 0, sizeof(st));
	st.f_bsize = 4096;
	st.f_namemax = 255;
	rf_reply_statfs(req, &st);
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,	       .name = "hang",		.init = hang_init,
	.lookup = hang_lookup, .getattr = hang_getattr, .statfs = hang_statfs_op,
};
