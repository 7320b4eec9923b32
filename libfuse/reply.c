// SPDX-License-Identifier: MIT
/*
 * A libfuse program's answers (fuse_reply_*) as a ringfence plugin's
 * (rf_reply_*), each ending the program's request. A directory listing
 * comes as the program's buffer of kernel-format entries
 * (fuse_add_direntry): each is read back and added to ringfence's own
 * listing, so that the framework sees every entry (a READDIRPLUS entry is
 * a lookup it records) and the keeper checks the whole. Buffers of file
 * descriptors (fuse_reply_data) are read, or, for a READ of one file at an
 * offset, left to ringfence to read (rf_reply_data_fd).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_uapi.h"
#include "libfuse_i.h"

#define EXPORT __attribute__((visibility("default")))

/* The answer is of the wrong kind for the request: EIO, and a word. */
static int wrong(struct fuse_req *req, const char *what)
{
	if (req->r) {
		rf_log("libfuse: %s for a request that takes another answer: EIO", what);
		rf_reply_err(req->r, EIO);
	} else {
		rf_log("libfuse: %s for a forget, which takes none", what);
	}
	rf_ll_req_free(req);
	return -EINVAL;
}

static int done(struct fuse_req *req)
{
	rf_ll_req_free(req);
	return 0;
}

EXPORT int fuse_reply_err(fuse_req_t req, int err)
{
	if (!req->r)
		return done(req);
	if (err)
		rf_reply_err(req->r, err);
	else
		rf_reply_ok(req->r);
	return done(req);
}

EXPORT void fuse_reply_none(fuse_req_t req)
{
	if (req->r) {
		wrong(req, "no answer");
		return;
	}
	rf_ll_req_free(req);
}

static void entry(struct rf_entry *o, const struct fuse_entry_param *e)
{
	memset(o, 0, sizeof(*o));
	o->ino = e->ino;
	o->generation = e->generation;
	o->attr = e->attr;
	o->attr_timeout = e->attr_timeout;
	o->entry_timeout = e->entry_timeout;
}

/* An open or create reply's passthrough file (fi->backing_id of
 * fuse_passthrough_open): ringfence's to read and write from now on. An
 * id the library never gave fails the open, as the kernel fails it. */
static bool backing(fuse_req_t req, const struct fuse_file_info *fi)
{
	int32_t id = ll_fi_backing_id(fi);
	int fd;

	if (!id)
		return true;
	fd = rf_ll_backing_fd(id);
	if (fd < 0) {
		fuse_log(FUSE_LOG_ERR,
			 "fuse: an open reply names backing id %d, which is not open\n", (int)id);
		rf_reply_err(req->r, EIO);
		return false;
	}
	rf_req_backing(req->r, fd);
	return true;
}

static uint32_t open_flags(const struct fuse_file_info *fi)
{
	return (fi->direct_io ? RF_OPEN_DIRECT_IO : 0) | (fi->keep_cache ? RF_OPEN_KEEP_CACHE : 0) |
	       (fi->nonseekable ? RF_OPEN_NONSEEKABLE : 0) | (fi->noflush ? RF_OPEN_NOFLUSH : 0);
}

EXPORT int fuse_reply_entry(fuse_req_t req, const struct fuse_entry_param *e)
{
	struct rf_entry o;

	if (req->kind != LL_ENTRY)
		return wrong(req, "an entry");
	entry(&o, e);
	rf_reply_entry(req->r, &o);
	return done(req);
}

EXPORT int fuse_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			     const struct fuse_file_info *fi)
{
	struct rf_entry o;

	if (req->kind != LL_CREATE)
		return wrong(req, "a create");
	entry(&o, e);
	if (!backing(req, fi))
		return done(req);
	rf_reply_create(req->r, &o, fi->fh, open_flags(fi));
	return done(req);
}

EXPORT int fuse_reply_attr(fuse_req_t req, const struct stat *attr, double attr_timeout)
{
	if (req->kind != LL_ATTR)
		return wrong(req, "attributes");
	rf_reply_attr(req->r, attr, attr_timeout);
	return done(req);
}

EXPORT int fuse_reply_readlink(fuse_req_t req, const char *link)
{
	if (req->kind != LL_READLINK)
		return wrong(req, "a link");
	rf_reply_readlink(req->r, link);
	return done(req);
}

EXPORT int fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi)
{
	if (req->kind != LL_OPEN)
		return wrong(req, "an open");
	if (!backing(req, fi))
		return done(req);
	rf_reply_open(req->r, fi->fh, open_flags(fi));
	return done(req);
}

EXPORT int fuse_reply_write(fuse_req_t req, size_t count)
{
	if (req->kind != LL_WRITE)
		return wrong(req, "a write count");
	rf_reply_write(req->r, count);
	return done(req);
}

EXPORT int fuse_reply_statfs(fuse_req_t req, const struct statvfs *stbuf)
{
	if (req->kind != LL_STATFS)
		return wrong(req, "file system statistics");
	rf_reply_statfs(req->r, stbuf);
	return done(req);
}

EXPORT int fuse_reply_xattr(fuse_req_t req, size_t count)
{
	if (req->kind != LL_XATTR)
		return wrong(req, "an attribute's size");
	rf_reply_xattr_size(req->r, count);
	return done(req);
}

EXPORT int fuse_reply_lseek(fuse_req_t req, off_t off)
{
	if (req->kind != LL_LSEEK)
		return wrong(req, "an offset");
	rf_reply_lseek(req->r, off);
	return done(req);
}

/* The answers of operations ringfence never calls (ioctl, poll, getlk,
 * bmap): whatever request one is given was another's. */
EXPORT int fuse_reply_ioctl(fuse_req_t req, int result, const void *buf, size_t size)
{
	(void)result;
	(void)buf;
	(void)size;
	return wrong(req, "an ioctl's answer");
}

EXPORT int fuse_reply_ioctl_iov(fuse_req_t req, int result, const struct iovec *iov, int count)
{
	(void)result;
	(void)iov;
	(void)count;
	return wrong(req, "an ioctl's answer");
}

EXPORT int fuse_reply_ioctl_retry(fuse_req_t req, const struct iovec *in_iov, size_t in_count,
				  const struct iovec *out_iov, size_t out_count)
{
	(void)in_iov;
	(void)in_count;
	(void)out_iov;
	(void)out_count;
	return wrong(req, "an ioctl's retry");
}

EXPORT int fuse_reply_poll(fuse_req_t req, unsigned revents)
{
	(void)revents;
	return wrong(req, "a poll's events");
}

EXPORT int fuse_reply_lock(fuse_req_t req, const struct flock *lock)
{
	(void)lock;
	return wrong(req, "a lock");
}

EXPORT int fuse_reply_bmap(fuse_req_t req, uint64_t idx)
{
	(void)idx;
	return wrong(req, "a block number");
}

/* ---- directory listings, from the program's buffer ---- */

static void stat_of(struct stat *st, const struct fuse_attr *a)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_atim.tv_sec = (time_t)a->atime;
	st->st_atim.tv_nsec = a->atimensec;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = a->mtimensec;
	st->st_ctim.tv_sec = (time_t)a->ctime;
	st->st_ctim.tv_nsec = a->ctimensec;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_blksize = a->blksize;
}

/* An entry of the program's that ringfence does not send after all (it
 * does not fit; never with a buffer of the size asked): the lookup it
 * counted is undone, as libfuse's kernel would never have seen it. */
static void unsent(struct fuse_req *req, uint64_t ino)
{
	if (ino)
		rf_ll_forget(req->se, ino, 1);
}

/* Each entry of @buf read back into ringfence's listing; a malformed one
 * ends it (what came before goes out). */
static void listing(struct fuse_req *req, const char *buf, size_t size)
{
	bool plus = req->kind == LL_DIRPLUS;
	size_t off = 0, head = plus ? sizeof(struct fuse_direntplus) : sizeof(struct fuse_dirent);
	char name[1024];

	while (off + head <= size) {
		const struct fuse_direntplus *dp = (const void *)(buf + off);
		const struct fuse_dirent *d = plus ? &dp->dirent : (const void *)(buf + off);
		size_t rec = plus ? FUSE_DIRENTPLUS_SIZE(d->namelen) : FUSE_DIRENT_SIZE(d->namelen);
		int r;

		if (d->namelen >= sizeof(name) || rec > size - off) {
			rf_log("libfuse: a directory entry of %u bytes' name runs past the "
			       "program's listing: the listing ends there",
			       d->namelen);
			break;
		}
		memcpy(name, d->name, d->namelen);
		name[d->namelen] = '\0';
		if (plus) {
			const struct fuse_entry_out *eo = &dp->entry_out;
			struct rf_entry e = {
				.ino = eo->nodeid,
				.generation = eo->generation,
				.attr_timeout = (double)eo->attr_valid + eo->attr_valid_nsec / 1e9,
				.entry_timeout =
					(double)eo->entry_valid + eo->entry_valid_nsec / 1e9,
			};

			stat_of(&e.attr, &eo->attr);
			r = rf_dirbuf_add_plus(req->r, name, &e, (off_t)d->off);
			if (r < 0) {
				unsent(req, eo->nodeid);
				break;
			}
		} else {
			struct stat st;

			memset(&st, 0, sizeof(st));
			st.st_ino = d->ino;
			st.st_mode = (mode_t)(d->type << 12);
			if (rf_dirbuf_add(req->r, name, &st, (off_t)d->off) < 0)
				break;
		}
		off += rec;
	}
	rf_reply_dirbuf(req->r);
}

EXPORT int fuse_reply_buf(fuse_req_t req, const char *buf, size_t size)
{
	switch (req->kind) {
	case LL_DIR:
	case LL_DIRPLUS:
		listing(req, buf, size);
		return done(req);
	case LL_DATA:
	case LL_XATTR:
	case LL_READLINK:
		rf_reply_data(req->r, buf, size);
		return done(req);
	default:
		return wrong(req, "bytes");
	}
}

EXPORT int fuse_reply_iov(fuse_req_t req, const struct iovec *iov, int count)
{
	size_t size = 0, at = 0;
	char *buf;
	int i, r;

	for (i = 0; i < count; i++)
		size += iov[i].iov_len;
	buf = malloc(size ? size : 1);
	if (!buf)
		return fuse_reply_err(req, ENOMEM);
	for (i = 0; i < count; i++) {
		memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	r = fuse_reply_buf(req, buf, size);
	free(buf);
	return r;
}

EXPORT int fuse_reply_data(fuse_req_t req, struct fuse_bufvec *bufv, enum fuse_buf_copy_flags flags)
{
	size_t size = fuse_buf_size(bufv);
	struct ll_bufvec1 mem = { .v = FUSE_BUFVEC_INIT(size) };
	ssize_t n;
	int r;

	(void)flags;
	/* a READ of one file at an offset: ringfence reads it itself */
	if (req->kind == LL_DATA && bufv->count - bufv->idx == 1) {
		const struct fuse_buf *b = ll_buf(bufv, bufv->idx);

		if ((b->flags & FUSE_BUF_IS_FD) && (b->flags & FUSE_BUF_FD_SEEK)) {
			rf_reply_data_fd(req->r, b->fd, b->pos + (off_t)bufv->off,
					 b->size - bufv->off);
			return done(req);
		}
	}
	mem.v.buf[0].mem = malloc(size ? size : 1);
	if (!mem.v.buf[0].mem)
		return fuse_reply_err(req, ENOMEM);
	n = fuse_buf_copy(&mem.v, bufv, 0);
	if (n < 0) {
		free(mem.v.buf[0].mem);
		return fuse_reply_err(req, (int)-n);
	}
	r = fuse_reply_buf(req, mem.v.buf[0].mem, (size_t)n);
	free(mem.v.buf[0].mem);
	return r;
}
