// SPDX-License-Identifier: MIT
/*
 * Directory entries as a libfuse program builds a READDIR or READDIRPLUS
 * answer: in the kernel's own format, into the program's buffer, which it
 * then sends with fuse_reply_buf(). Each entry takes its name's length
 * plus the header, padded to 8 bytes; where it does not fit, nothing is
 * written and its size is returned all the same (the program stops there).
 */
#include <limits.h>
#include <string.h>

#include "fuse_attr.h"
#include "libfuse.h"

#define EXPORT __attribute__((visibility("default")))

static void dirent(struct fuse_dirent *d, const char *name, size_t namelen, const struct stat *st,
		   off_t off, size_t size, size_t head)
{
	d->ino = st->st_ino;
	d->off = (uint64_t)off;
	d->namelen = (uint32_t)namelen;
	d->type = (st->st_mode & S_IFMT) >> 12;
	memcpy(d->name, name, namelen);
	memset(d->name + namelen, 0, size - head - namelen);
}

EXPORT size_t fuse_add_direntry(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				const struct stat *stbuf, off_t off)
{
	size_t namelen = strlen(name), size = FUSE_DIRENT_SIZE(namelen);

	(void)req;
	if (buf && size <= bufsize)
		dirent((struct fuse_dirent *)(void *)buf, name, namelen, stbuf, off, size,
		       sizeof(struct fuse_dirent));
	return size;
}

/* libfuse's split of a timeout in seconds: whole seconds (0 below 0, at
 * most ULONG_MAX) and nanoseconds (at most 999999999) */
static uint64_t timeout_sec(double t)
{
	if (t > (double)ULONG_MAX)
		return ULONG_MAX;
	return t < 0.0 ? 0 : (uint64_t)t;
}

static uint32_t timeout_nsec(double t)
{
	double f = t - (double)timeout_sec(t);

	if (f < 0.0)
		return 0;
	return f >= 0.999999999 ? 999999999 : (uint32_t)(f * 1.0e9);
}

EXPORT size_t fuse_add_direntry_plus(fuse_req_t req, char *buf, size_t bufsize, const char *name,
				     const struct fuse_entry_param *e, off_t off)
{
	size_t namelen = strlen(name), size = FUSE_DIRENTPLUS_SIZE(namelen);
	struct fuse_direntplus *dp = (struct fuse_direntplus *)(void *)buf;

	(void)req;
	if (!buf || size > bufsize)
		return size;
	memset(&dp->entry_out, 0, sizeof(dp->entry_out));
	dp->entry_out.nodeid = e->ino;
	dp->entry_out.generation = e->generation;
	dp->entry_out.entry_valid = timeout_sec(e->entry_timeout);
	dp->entry_out.entry_valid_nsec = timeout_nsec(e->entry_timeout);
	dp->entry_out.attr_valid = timeout_sec(e->attr_timeout);
	dp->entry_out.attr_valid_nsec = timeout_nsec(e->attr_timeout);
	rf_fuse_attr(&dp->entry_out.attr, &e->attr);
	dirent(&dp->dirent, name, namelen, &e->attr, off, size, sizeof(*dp));
	return size;
}
