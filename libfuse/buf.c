// SPDX-License-Identifier: MIT
/*
 * libfuse's buffer vectors (struct fuse_bufvec): memory and file
 * descriptors, copied between by read(2) and write(2) (or pread and pwrite
 * where a buffer says FUSE_BUF_FD_SEEK); never by splice, which the
 * sandbox's programs have no use for.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libfuse.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT size_t fuse_buf_size(const struct fuse_bufvec *bufv)
{
	size_t i, size = 0;

	for (i = 0; i < bufv->count; i++) {
		if (ll_buf(bufv, i)->size == SIZE_MAX)
			return SIZE_MAX;
		size += ll_buf(bufv, i)->size;
	}
	return size;
}

static ssize_t fd_io(const struct fuse_buf *b, size_t off, void *mem, size_t len, int out)
{
	bool seek = b->flags & FUSE_BUF_FD_SEEK;
	off_t at = b->pos + (off_t)off;
	size_t done = 0;

	while (done < len) {
		char *p = (char *)mem + done;
		ssize_t n = out ? (seek ? pwrite(b->fd, p, len - done, at + (off_t)done)
					: write(b->fd, p, len - done))
				: (seek ? pread(b->fd, p, len - done, at + (off_t)done)
					: read(b->fd, p, len - done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		done += (size_t)n;
		if (!n || !(b->flags & FUSE_BUF_FD_RETRY))
			break;
	}
	return (ssize_t)done;
}

/* @len bytes from @s at @soff to @d at @doff: how many went, or -errno */
static ssize_t copy_one(const struct fuse_buf *d, size_t doff, const struct fuse_buf *s,
			size_t soff, size_t len)
{
	bool dfd = d->flags & FUSE_BUF_IS_FD, sfd = s->flags & FUSE_BUF_IS_FD;
	char bounce[65536];
	size_t done = 0;
	ssize_t n, w;

	if (!dfd && !sfd) {
		memmove((char *)d->mem + doff, (const char *)s->mem + soff, len);
		return (ssize_t)len;
	}
	if (!dfd)
		return fd_io(s, soff, (char *)d->mem + doff, len, 0);
	if (!sfd)
		return fd_io(d, doff, (char *)s->mem + soff, len, 1);
	while (done < len) {
		n = fd_io(s, soff + done, bounce,
			  len - done < sizeof(bounce) ? len - done : sizeof(bounce), 0);
		if (n <= 0)
			return done ? (ssize_t)done : n;
		w = fd_io(d, doff + done, bounce, (size_t)n, 1);
		if (w < 0)
			return done ? (ssize_t)done : w;
		done += (size_t)w;
		if (w < n)
			break;
	}
	return (ssize_t)done;
}

/* @n bytes of @v's buffer used: past its end, the next buffer */
static void advance(struct fuse_bufvec *v, size_t n)
{
	v->off += n;
	if (v->off >= ll_buf(v, v->idx)->size) {
		v->idx++;
		v->off = 0;
	}
}

EXPORT ssize_t fuse_buf_copy(struct fuse_bufvec *dst, struct fuse_bufvec *src,
			     enum fuse_buf_copy_flags flags)
{
	size_t total = 0;

	(void)flags;
	while (dst->idx < dst->count && src->idx < src->count) {
		const struct fuse_buf *d = ll_buf(dst, dst->idx), *s = ll_buf(src, src->idx);
		size_t dl = d->size - dst->off, sl = s->size - src->off;
		size_t len = dl < sl ? dl : sl;
		ssize_t n;

		if (!dl || !sl) { /* an empty buffer: the next */
			advance(dl ? src : dst, 0);
			continue;
		}
		n = copy_one(d, dst->off, s, src->off, len);
		if (n < 0)
			return total ? (ssize_t)total : n;
		advance(dst, (size_t)n);
		advance(src, (size_t)n);
		total += (size_t)n;
		if ((size_t)n < len)
			break;
	}
	return (ssize_t)total;
}
