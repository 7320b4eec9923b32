// SPDX-License-Identifier: MIT
#include <string.h>

#include "fuse_attr.h"

static uint64_t ts_sec(const struct timespec *ts)
{
	return ts->tv_sec < 0 ? 0 : (uint64_t)ts->tv_sec;
}

void rf_fuse_attr(struct fuse_attr *a, const struct stat *st)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->st_ino;
	a->size = (uint64_t)st->st_size;
	a->blocks = (uint64_t)st->st_blocks;
	a->atime = ts_sec(&st->st_atim);
	a->mtime = ts_sec(&st->st_mtim);
	a->ctime = ts_sec(&st->st_ctim);
	a->atimensec = (uint32_t)st->st_atim.tv_nsec;
	a->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	a->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->rdev = (uint32_t)st->st_rdev;
	a->blksize = (uint32_t)st->st_blksize;
}
