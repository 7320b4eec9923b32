// SPDX-License-Identifier: MIT
/*
 * The plugin-facing reply API. Replies are built in place in the request's
 * pool slot (body at the payload) and handed to the queue's thread, which
 * moves file data with fixed-buffer ops if asked and then commits.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuse_attr.h"
#include "log.h"
#include "worker.h"

void rf_req_finish(struct rf_req *req)
{
	req->q->w->side->finish(req);
}

void rf_reply_moved(struct rf_req *req)
{
	if (req->fd_op == RF_FDOP_READ) {
		req->reply_len = req->done;
	} else {
		struct fuse_write_out o = { .size = req->done };

		memcpy(req->payload, &o, sizeof(o));
		req->reply_len = sizeof(o);
	}
	req->fd_op = RF_FDOP_NONE;
}

void rf_req_reset(struct rf_req *req)
{
	req->replied = false;
	req->error = 0;
	req->reply_len = 0;
	req->fd_op = RF_FDOP_NONE;
	req->fd = -1;
	req->off = 0;
	req->len = 0;
	req->done = 0;
	req->backing_fd = -1;
	atomic_store(&req->interrupted, 0);
}

void rf_req_backing(struct rf_req *req, int fd)
{
	if (req->replied || req->state != RQ_PLUGIN ||
	    (req->in.opcode != FUSE_OPEN && req->in.opcode != FUSE_CREATE) || fd < 0) {
		log_warnx("plugin named a backing file outside an open or create; ignored");
		return;
	}
	req->backing_fd = fd;
}

void rf_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_warnx("plugin: %s", line);
}

const struct rf_req_ctx *rf_req_ctx(const struct rf_req *req)
{
	return &req->ctx;
}

void *rf_req_userdata(const struct rf_req *req)
{
	return req->q->w->userdata;
}

int rf_req_interrupted(const struct rf_req *req)
{
	return atomic_load(&((struct rf_req *)req)->interrupted);
}

int rf_req_kill_suidgid(const struct rf_req *req)
{
	return req->kill_suidgid;
}

/* A second reply to one request is a plugin bug; it must not corrupt the
 * slot, which may already serve the next request. */
static bool claim(struct rf_req *req, const char *what)
{
	if (req->replied || req->state != RQ_PLUGIN) {
		log_warnx("plugin replied twice (%s) to one request; ignored", what);
		return false;
	}
	req->replied = true;
	return true;
}

/* A plugin id or handle of 2^48 or more cannot carry a generation. */
static void bad_id(struct rf_req *req, uint64_t id)
{
	log_warnx("plugin answered with id 0x%llx, above 2^%d; EIO", (unsigned long long)id,
		  RF_ID_BITS);
	req->error = EIO;
	req->reply_len = 0;
	rf_req_finish(req);
}

static void finish_body(struct rf_req *req, const void *body, size_t len)
{
	if (len > req->payload_cap || (len && !req->payload)) {
		/* too long, or a body for a zero-copied READ, which has no
		 * buffer in the pool (reply_data says why) */
		req->error = EIO;
		req->reply_len = 0;
	} else {
		/* memmove: a plugin may pass back a pointer into the request */
		if (len)
			memmove(req->payload, body, len);
		req->reply_len = (uint32_t)len;
	}
	rf_req_finish(req);
}

void rf_reply_err(struct rf_req *req, int err)
{
	if (!claim(req, "err"))
		return;
	/* the kernel accepts errors in (-512, 0) only */
	req->error = (err > 0 && err < 512) ? err : EIO;
	req->reply_len = 0;
	rf_req_finish(req);
}

void rf_reply_ok(struct rf_req *req)
{
	if (!claim(req, "ok"))
		return;
	switch (req->in.opcode) {
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
		rf_restore_moved(req);
		break;
	default:
		break;
	}
	req->reply_len = 0;
	rf_req_finish(req);
}

static void split_timeout(double t, uint64_t *sec, uint32_t *nsec)
{
	if (!(t > 0)) {
		*sec = 0;
		*nsec = 0;
		return;
	}
	if (t > 1e9)
		t = 1e9;
	*sec = (uint64_t)t;
	*nsec = (uint32_t)((t - (double)*sec) * 1e9);
}

/* @name: what the entry was found as in the request's directory */
static void fill_entry(struct rf_req *req, struct fuse_entry_out *o, const struct rf_entry *e,
		       const char *name)
{
	memset(o, 0, sizeof(*o));
	o->nodeid = rf_restore_entry(req, e->ino, name, &e->attr);
	o->generation = e->generation;
	split_timeout(e->entry_timeout, &o->entry_valid, &o->entry_valid_nsec);
	split_timeout(e->attr_timeout, &o->attr_valid, &o->attr_valid_nsec);
	rf_fuse_attr(&o->attr, &e->attr);
}

void rf_reply_entry(struct rf_req *req, const struct rf_entry *e)
{
	struct fuse_entry_out o;

	if (!claim(req, "entry"))
		return;
	if (e->ino && !rf_id_out(req->q->w, e->ino)) {
		bad_id(req, e->ino);
		return;
	}
	fill_entry(req, &o, e, req->name);
	finish_body(req, &o, sizeof(o));
}

/* The plugin's RF_OPEN_* flags as the kernel's FOPEN_*: a file served by
 * descriptor is zero-copied where the queues are zero-copy queues. */
static uint32_t open_flags_out(const struct rf_req *req, uint32_t open_flags)
{
	uint32_t f = 0;

	f |= (open_flags & RF_OPEN_DIRECT_IO) ? FOPEN_DIRECT_IO : 0;
	f |= (open_flags & RF_OPEN_KEEP_CACHE) ? FOPEN_KEEP_CACHE : 0;
	f |= (open_flags & RF_OPEN_NONSEEKABLE) ? FOPEN_NONSEEKABLE : 0;
	f |= (open_flags & RF_OPEN_NOFLUSH) ? FOPEN_NOFLUSH : 0;

	if ((open_flags & RF_OPEN_FD_IO) && req->q->zc)
		f |= FOPEN_IO_URING_ZERO_COPY;
	return f;
}

void rf_reply_create(struct rf_req *req, const struct rf_entry *e, uint64_t fh, uint32_t open_flags)
{
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;

	if (!claim(req, "create"))
		return;
	if ((e->ino && !rf_id_out(req->q->w, e->ino)) || fh > RF_ID_MASK) {
		bad_id(req, e->ino > RF_ID_MASK ? e->ino : fh);
		return;
	}
	fill_entry(req, &out.e, e, req->name);
	memset(&out.o, 0, sizeof(out.o));
	out.o.fh = req->q->w->tag | fh;
	if (req->in.opcode == FUSE_CREATE && out.e.nodeid)
		rf_restore_opened(req, out.e.nodeid, out.o.fh);
	out.o.open_flags = open_flags_out(req, open_flags);
	finish_body(req, &out, sizeof(out));
}

void rf_reply_attr(struct rf_req *req, const struct stat *st, double timeout)
{
	struct fuse_attr_out o;

	if (!claim(req, "attr"))
		return;
	memset(&o, 0, sizeof(o));
	split_timeout(timeout, &o.attr_valid, &o.attr_valid_nsec);
	rf_fuse_attr(&o.attr, st);
	finish_body(req, &o, sizeof(o));
}

void rf_reply_open(struct rf_req *req, uint64_t fh, uint32_t open_flags)
{
	struct fuse_open_out o;

	if (!claim(req, "open"))
		return;
	if (fh > RF_ID_MASK) {
		bad_id(req, fh);
		return;
	}
	memset(&o, 0, sizeof(o));
	o.fh = req->q->w->tag | fh;
	o.open_flags = open_flags_out(req, open_flags);
	if (req->in.opcode == FUSE_OPEN || req->in.opcode == FUSE_OPENDIR)
		rf_restore_opened(req, req->kid, o.fh);
	finish_body(req, &o, sizeof(o));
}

void rf_reply_readlink(struct rf_req *req, const char *target)
{
	if (!claim(req, "readlink"))
		return;
	finish_body(req, target, strlen(target));
}

void rf_reply_statfs(struct rf_req *req, const struct statvfs *st)
{
	struct fuse_statfs_out o;

	if (!claim(req, "statfs"))
		return;
	memset(&o, 0, sizeof(o));
	o.st.blocks = st->f_blocks;
	o.st.bfree = st->f_bfree;
	o.st.bavail = st->f_bavail;
	o.st.files = st->f_files;
	o.st.ffree = st->f_ffree;
	o.st.bsize = (uint32_t)st->f_bsize;
	o.st.namelen = (uint32_t)st->f_namemax;
	o.st.frsize = (uint32_t)st->f_frsize;
	finish_body(req, &o, sizeof(o));
}

uint32_t rf_reply_limit(const struct rf_req *req)
{
	const struct fuse_read_in *ri = (const void *)req->arg0;
	const struct fuse_getxattr_in *gi = (const void *)req->arg0;

	switch (req->in.opcode) {
	case FUSE_READ:
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
		return ri->size < req->payload_cap ? ri->size : req->payload_cap;
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
		return gi->size < req->payload_cap ? gi->size : req->payload_cap;
	default:
		return req->payload_cap;
	}
}

void rf_reply_data(struct rf_req *req, const void *buf, size_t len)
{
	if (!claim(req, "data"))
		return;
	if (req->zc && len) {
		/* the client's pages are reachable by a fixed-buffer op only:
		 * a file opened RF_OPEN_FD_IO is answered by descriptor */
		log_warnx("plugin answered a zero-copied READ from memory (its file was opened "
			  "with RF_OPEN_FD_IO: reads take rf_reply_data_fd); EIO");
		req->error = EIO;
		req->reply_len = 0;
		rf_req_finish(req);
		return;
	}
	if (len > rf_reply_limit(req)) {
		req->error = ERANGE;
		req->reply_len = 0;
		rf_req_finish(req);
		return;
	}
	finish_body(req, buf, len);
}

void rf_reply_data_fd(struct rf_req *req, int fd, off_t off, size_t len)
{
	if (!claim(req, "data_fd"))
		return;
	if (len > rf_reply_limit(req))
		len = rf_reply_limit(req);
	if (fd < 0 || off < 0) {
		req->error = EBADF;
		rf_req_finish(req);
		return;
	}
	req->fd_op = RF_FDOP_READ;
	req->fd = fd;
	req->off = (uint64_t)off;
	req->len = (uint32_t)len;
	rf_req_finish(req);
}

void rf_reply_write(struct rf_req *req, size_t written)
{
	struct fuse_write_out o = { 0 };

	if (!claim(req, "write"))
		return;
	o.size = written > UINT32_MAX ? UINT32_MAX : (uint32_t)written;
	finish_body(req, &o, sizeof(o));
}

void rf_reply_write_fd(struct rf_req *req, int fd, off_t off)
{
	if (!claim(req, "write_fd"))
		return;
	if (req->in.opcode != FUSE_WRITE || fd < 0 || off < 0) {
		req->error = req->in.opcode != FUSE_WRITE ? EIO : EBADF;
		rf_req_finish(req);
		return;
	}
	req->fd_op = RF_FDOP_WRITE;
	req->fd = fd;
	req->off = (uint64_t)off;
	req->len = req->rest_len;
	rf_req_finish(req);
}

void rf_reply_xattr_size(struct rf_req *req, size_t size)
{
	struct fuse_getxattr_out o = { 0 };

	if (!claim(req, "xattr_size"))
		return;
	o.size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	finish_body(req, &o, sizeof(o));
}

void rf_reply_lseek(struct rf_req *req, off_t off)
{
	struct fuse_lseek_out o = { .offset = (uint64_t)off };

	if (!claim(req, "lseek"))
		return;
	finish_body(req, &o, sizeof(o));
}

bool rf_dirents_ok(const void *buf, uint32_t len, bool plus, char *why, size_t whylen)
{
	const char *p = buf, *end = p + len;
	size_t head = (plus ? sizeof(struct fuse_entry_out) : 0) + sizeof(struct fuse_dirent);
	uint32_t n = 0;

	while (p < end) {
		struct fuse_dirent d;
		size_t rec;

		if ((size_t)(end - p) < head) {
			snprintf(why, whylen, "entry %u: %zu bytes, short of a header", n,
				 (size_t)(end - p));
			return false;
		}
		memcpy(&d, p + head - sizeof(d), sizeof(d));
		if (d.namelen == 0 || d.namelen > NAME_MAX) {
			snprintf(why, whylen, "entry %u: a name of %u bytes", n, d.namelen);
			return false;
		}
		rec = FUSE_DIRENT_ALIGN(head + d.namelen);
		if (rec > (size_t)(end - p)) {
			snprintf(why, whylen, "entry %u: %zu bytes past the reply", n,
				 rec - (size_t)(end - p));
			return false;
		}
		if (memchr(p + head, '/', d.namelen) || memchr(p + head, '\0', d.namelen)) {
			snprintf(why, whylen, "entry %u: a '/' or a NUL in its name", n);
			return false;
		}
		p += rec;
		n++;
	}
	return true;
}

/* One directory entry, in the format the request's opcode wants: a plain
 * dirent for READDIR, a direntplus for READDIRPLUS (with node id 0, which
 * the kernel lists without caching, when @e is NULL). */
static int dirbuf_add(struct rf_req *req, const char *name, const struct stat *st,
		      const struct rf_entry *e, off_t next_off)
{
	bool plus = req->in.opcode == FUSE_READDIRPLUS;
	size_t namelen = strlen(name);
	size_t need = plus ? FUSE_DIRENTPLUS_SIZE(namelen) : FUSE_DIRENT_SIZE(namelen);
	char *at = req->payload + req->reply_len;
	struct fuse_dirent *d;

	if (req->replied || req->state != RQ_PLUGIN)
		return -1;
	if (namelen == 0 || namelen > NAME_MAX || req->reply_len + need > rf_reply_limit(req))
		return -1;
	memset(at, 0, need);
	if (plus) {
		struct fuse_entry_out eo;

		if (e)
			fill_entry(req, &eo, e, name);
		else
			memset(&eo, 0, sizeof(eo));
		memcpy(at, &eo, sizeof(eo));
		at += sizeof(eo);
	}
	d = (struct fuse_dirent *)at;
	d->ino = st->st_ino;
	d->off = (uint64_t)next_off;
	d->namelen = (uint32_t)namelen;
	d->type = (st->st_mode & S_IFMT) >> 12;
	memcpy(d->name, name, namelen);
	req->reply_len += (uint32_t)need;
	return 0;
}

int rf_dirbuf_add(struct rf_req *req, const char *name, const struct stat *st, off_t next_off)
{
	return dirbuf_add(req, name, st, NULL, next_off);
}

int rf_dirbuf_add_plus(struct rf_req *req, const char *name, const struct rf_entry *e,
		       off_t next_off)
{
	if (e->ino > RF_ID_MASK)
		return -1;
	return dirbuf_add(req, name, &e->attr, e->ino ? e : NULL, next_off);
}

void rf_reply_dirbuf(struct rf_req *req)
{
	if (!claim(req, "dirbuf"))
		return;
	rf_req_finish(req);
}
