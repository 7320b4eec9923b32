// SPDX-License-Identifier: MIT
/*
 * From a FUSE request to a plugin call. One table, indexed by opcode, names
 * each operation, the size of its first argument, and its handler. Every
 * length is checked before a handler runs; a missing plugin operation
 * answers ENOSYS.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "log.h"
#include "worker.h"

typedef void (*op_fn)(struct rf_req *req, const struct rf_plugin *p);

struct op_def {
	const char *name;
	uint32_t arg0; /* bytes of the per-opcode header */
	op_fn fn;
};

#define ARG(type) sizeof(struct type)

/* Take the next NUL-terminated string from the request's rest; NULL if
 * there is none or it is not terminated. */
static const char *take_str(struct rf_req *req, uint32_t *pos)
{
	const char *s = req->rest + *pos;
	const char *nul;

	if (*pos >= req->rest_len)
		return NULL;
	nul = memchr(s, '\0', req->rest_len - *pos);
	if (!nul || nul == s)
		return NULL;
	*pos += (uint32_t)(nul - s) + 1;
	return s;
}

/* A file handle from the kernel to the plugin's; one of a dead generation
 * is answered here (EIO, or success for a release) and never reaches the
 * plugin. Returns false when it answered. */
static bool fh_in(struct rf_req *req, uint64_t kfh, uint64_t *fh)
{
	if ((kfh & ~RF_ID_MASK) == req->q->w->tag) {
		*fh = kfh & RF_ID_MASK;
		return true;
	}
	if (rf_restore_fh_in(req->q->w, kfh, fh))
		return true;
	if (req->in.opcode == FUSE_RELEASE || req->in.opcode == FUSE_RELEASEDIR)
		rf_reply_ok(req);
	else
		rf_reply_err(req, EIO);
	return false;
}

/* Another node id in the arguments (link, rename). */
static bool node_in(struct rf_req *req, uint64_t kid, uint64_t *id)
{
	if (rf_id_in(req->q->w, kid, id) == 0 || rf_restore_id_in(req->q->w, kid, id))
		return true;
	rf_reply_err(req, ESTALE);
	return false;
}

#define ARG0(type) ((const struct type *)req->arg0)
#define NEED(p, op)                                \
	do {                                       \
		if (!(p)->op) {                    \
			rf_reply_err(req, ENOSYS); \
			return;                    \
		}                                  \
	} while (0)
#define NAME_OR_EINVAL(var, pos)                 \
	const char *var = take_str(req, &(pos)); \
	if (!var) {                              \
		rf_reply_err(req, EINVAL);       \
		return;                          \
	}

static void op_lookup(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	NEED(p, lookup);
	NAME_OR_EINVAL(name, pos);
	req->name = name;
	p->lookup(req, req->in.nodeid, name);
}

static void op_getattr(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_getattr_in *g = ARG0(fuse_getattr_in);
	uint64_t fh = RF_NO_FH;

	NEED(p, getattr);
	if ((g->getattr_flags & FUSE_GETATTR_FH) && !fh_in(req, g->fh, &fh))
		return;
	p->getattr(req, req->in.nodeid, fh);
}

static void op_setattr(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_setattr_in *s = ARG0(fuse_setattr_in);
	struct rf_setattr sa;

	NEED(p, setattr);
	memset(&sa, 0, sizeof(sa));
	sa.valid = s->valid & (RF_SET_MODE | RF_SET_UID | RF_SET_GID | RF_SET_SIZE | RF_SET_ATIME |
			       RF_SET_MTIME | RF_SET_ATIME_NOW | RF_SET_MTIME_NOW | RF_SET_CTIME);
	sa.mode = s->mode;
	sa.uid = s->uid;
	sa.gid = s->gid;
	sa.size = (off_t)s->size;
	sa.atime.tv_sec = (time_t)s->atime;
	sa.atime.tv_nsec = s->atimensec;
	sa.mtime.tv_sec = (time_t)s->mtime;
	sa.mtime.tv_nsec = s->mtimensec;
	sa.ctime.tv_sec = (time_t)s->ctime;
	sa.ctime.tv_nsec = s->ctimensec;
	sa.fh = RF_NO_FH;
	if ((s->valid & FATTR_FH) && !fh_in(req, s->fh, &sa.fh))
		return;
	if ((s->valid & FATTR_SIZE) && (int64_t)s->size < 0) {
		rf_reply_err(req, EINVAL);
		return;
	}
	p->setattr(req, req->in.nodeid, &sa);
}

static void op_readlink(struct rf_req *req, const struct rf_plugin *p)
{
	NEED(p, readlink);
	p->readlink(req, req->in.nodeid);
}

static void op_symlink(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	NEED(p, symlink);
	NAME_OR_EINVAL(name, pos);
	NAME_OR_EINVAL(target, pos);
	req->name = name;
	p->symlink(req, target, req->in.nodeid, name);
}

static void op_mknod(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_mknod_in *m = ARG0(fuse_mknod_in);
	uint32_t pos = 0;

	NEED(p, mknod);
	NAME_OR_EINVAL(name, pos);
	req->ctx.umask = m->umask;
	req->name = name;
	p->mknod(req, req->in.nodeid, name, m->mode, m->rdev);
}

static void op_mkdir(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_mkdir_in *m = ARG0(fuse_mkdir_in);
	uint32_t pos = 0;

	NEED(p, mkdir);
	NAME_OR_EINVAL(name, pos);
	req->ctx.umask = m->umask;
	req->name = name;
	p->mkdir(req, req->in.nodeid, name, m->mode | S_IFDIR);
}

static void op_unlink(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	NEED(p, unlink);
	NAME_OR_EINVAL(name, pos);
	req->name = name;
	p->unlink(req, req->in.nodeid, name);
}

static void op_rmdir(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	NEED(p, rmdir);
	NAME_OR_EINVAL(name, pos);
	req->name = name;
	p->rmdir(req, req->in.nodeid, name);
}

static void op_rename(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0, flags = 0;
	uint64_t newdir;

	NEED(p, rename);
	if (req->in.opcode == FUSE_RENAME2) {
		newdir = ARG0(fuse_rename2_in)->newdir;
		flags = ARG0(fuse_rename2_in)->flags;
	} else {
		newdir = ARG0(fuse_rename_in)->newdir;
	}
	req->kid2 = newdir;
	if (!node_in(req, newdir, &newdir))
		return;
	NAME_OR_EINVAL(name, pos);
	NAME_OR_EINVAL(newname, pos);
	req->name = name;
	req->name2 = newname;
	req->rename_flags = flags;
	p->rename(req, req->in.nodeid, name, newdir, newname, flags);
}

static void op_link(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	uint64_t old;

	NEED(p, link);
	if (!node_in(req, ARG0(fuse_link_in)->oldnodeid, &old))
		return;
	NAME_OR_EINVAL(newname, pos);
	req->name = newname;
	p->link(req, old, req->in.nodeid, newname);
}

static void op_open(struct rf_req *req, const struct rf_plugin *p)
{
	NEED(p, open);
	p->open(req, req->in.nodeid, (int)ARG0(fuse_open_in)->flags);
}

static void op_read(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_read_in *r = ARG0(fuse_read_in);
	uint64_t fh;

	NEED(p, read);
	if (r->size > req->payload_cap || (int64_t)r->offset < 0) {
		rf_reply_err(req, EINVAL);
		return;
	}
	if (!fh_in(req, r->fh, &fh))
		return;
	p->read(req, req->in.nodeid, fh, (off_t)r->offset, r->size);
}

static void op_write(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_write_in *w = ARG0(fuse_write_in);
	uint64_t fh;

	NEED(p, write);
	if (w->size != req->rest_len || (int64_t)w->offset < 0) {
		rf_reply_err(req, EINVAL);
		return;
	}
	if (!fh_in(req, w->fh, &fh))
		return;
	p->write(req, req->in.nodeid, fh, (off_t)w->offset, req->rest, w->size);
}

static void op_statfs(struct rf_req *req, const struct rf_plugin *p)
{
	NEED(p, statfs);
	p->statfs(req, req->in.nodeid);
}

static void op_release(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_release_in *r = ARG0(fuse_release_in);
	uint64_t fh;

	if (!fh_in(req, r->fh, &fh))
		return;
	/* out of the table before the plugin can hand the number out again */
	rf_restore_release(req->q->w, r->fh);
	if (req->in.opcode == FUSE_RELEASEDIR) {
		if (!p->releasedir) {
			rf_reply_ok(req);
			return;
		}
		p->releasedir(req, req->in.nodeid, fh);
		return;
	}
	if (!p->release) {
		rf_reply_ok(req);
		return;
	}
	p->release(req, req->in.nodeid, fh, (int)r->flags);
}

static void op_fsync(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_fsync_in *f = ARG0(fuse_fsync_in);
	int datasync = (f->fsync_flags & FUSE_FSYNC_FDATASYNC) != 0;
	uint64_t fh;

	if (!fh_in(req, f->fh, &fh))
		return;
	if (req->in.opcode == FUSE_FSYNCDIR) {
		NEED(p, fsyncdir);
		p->fsyncdir(req, req->in.nodeid, fh, datasync);
		return;
	}
	NEED(p, fsync);
	p->fsync(req, req->in.nodeid, fh, datasync);
}

static void op_setxattr(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_setxattr_in *s = ARG0(fuse_setxattr_in);
	uint32_t pos = 0;

	NEED(p, setxattr);
	NAME_OR_EINVAL(name, pos);
	if (s->size != req->rest_len - pos) {
		rf_reply_err(req, EINVAL);
		return;
	}
	p->setxattr(req, req->in.nodeid, name, req->rest + pos, s->size, (int)s->flags);
}

static void op_getxattr(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	NEED(p, getxattr);
	NAME_OR_EINVAL(name, pos);
	p->getxattr(req, req->in.nodeid, name, ARG0(fuse_getxattr_in)->size);
}

static void op_listxattr(struct rf_req *req, const struct rf_plugin *p)
{
	NEED(p, listxattr);
	p->listxattr(req, req->in.nodeid, ARG0(fuse_getxattr_in)->size);
}

static void op_removexattr(struct rf_req *req, const struct rf_plugin *p)
{
	uint32_t pos = 0;

	NEED(p, removexattr);
	NAME_OR_EINVAL(name, pos);
	p->removexattr(req, req->in.nodeid, name);
}

static void op_flush(struct rf_req *req, const struct rf_plugin *p)
{
	uint64_t fh;

	if (!fh_in(req, ARG0(fuse_flush_in)->fh, &fh))
		return;
	if (!p->flush) {
		rf_reply_ok(req);
		return;
	}
	p->flush(req, req->in.nodeid, fh);
}

static void op_opendir(struct rf_req *req, const struct rf_plugin *p)
{
	if (!p->opendir) {
		rf_reply_open(req, 0, 0);
		return;
	}
	p->opendir(req, req->in.nodeid, (int)ARG0(fuse_open_in)->flags);
}

static void op_readdir(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_read_in *r = ARG0(fuse_read_in);
	uint64_t fh;

	if ((int64_t)r->offset < 0) {
		rf_reply_err(req, EINVAL);
		return;
	}
	if (!fh_in(req, r->fh, &fh))
		return;
	if (req->in.opcode == FUSE_READDIRPLUS && p->readdirplus) {
		p->readdirplus(req, req->in.nodeid, fh, (off_t)r->offset, r->size);
		return;
	}
	/* READDIRPLUS without the op: readdir's entries, sent as direntplus
	 * records without attributes */
	NEED(p, readdir);
	p->readdir(req, req->in.nodeid, fh, (off_t)r->offset, r->size);
}

static void op_access(struct rf_req *req, const struct rf_plugin *p)
{
	NEED(p, access);
	p->access(req, req->in.nodeid, (int)ARG0(fuse_access_in)->mask);
}

static void op_create(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_create_in *c = ARG0(fuse_create_in);
	uint32_t pos = 0;

	NEED(p, create);
	NAME_OR_EINVAL(name, pos);
	req->ctx.umask = c->umask;
	req->name = name;
	p->create(req, req->in.nodeid, name, c->mode, (int)c->flags);
}

static void op_fallocate(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_fallocate_in *f = ARG0(fuse_fallocate_in);
	uint64_t fh;

	NEED(p, fallocate);
	if (!fh_in(req, f->fh, &fh))
		return;
	if ((int64_t)f->offset < 0 || (int64_t)f->length <= 0) {
		rf_reply_err(req, EINVAL);
		return;
	}
	p->fallocate(req, req->in.nodeid, fh, (int)f->mode, (off_t)f->offset, (off_t)f->length);
}

static void op_lseek(struct rf_req *req, const struct rf_plugin *p)
{
	const struct fuse_lseek_in *l = ARG0(fuse_lseek_in);
	uint64_t fh;

	NEED(p, lseek);
	if (!fh_in(req, l->fh, &fh))
		return;
	p->lseek(req, req->in.nodeid, fh, (off_t)l->offset, (int)l->whence);
}

static const struct op_def ops[FUSE_OPCODE_MAX] = {
	[FUSE_LOOKUP] = { "LOOKUP", 0, op_lookup },
	[FUSE_FORGET] = { "FORGET", ARG(fuse_forget_in), NULL },
	[FUSE_GETATTR] = { "GETATTR", ARG(fuse_getattr_in), op_getattr },
	[FUSE_SETATTR] = { "SETATTR", ARG(fuse_setattr_in), op_setattr },
	[FUSE_READLINK] = { "READLINK", 0, op_readlink },
	[FUSE_SYMLINK] = { "SYMLINK", 0, op_symlink },
	[FUSE_MKNOD] = { "MKNOD", ARG(fuse_mknod_in), op_mknod },
	[FUSE_MKDIR] = { "MKDIR", ARG(fuse_mkdir_in), op_mkdir },
	[FUSE_UNLINK] = { "UNLINK", 0, op_unlink },
	[FUSE_RMDIR] = { "RMDIR", 0, op_rmdir },
	[FUSE_RENAME] = { "RENAME", ARG(fuse_rename_in), op_rename },
	[FUSE_LINK] = { "LINK", ARG(fuse_link_in), op_link },
	[FUSE_OPEN] = { "OPEN", ARG(fuse_open_in), op_open },
	[FUSE_READ] = { "READ", ARG(fuse_read_in), op_read },
	[FUSE_WRITE] = { "WRITE", ARG(fuse_write_in), op_write },
	[FUSE_STATFS] = { "STATFS", 0, op_statfs },
	[FUSE_RELEASE] = { "RELEASE", ARG(fuse_release_in), op_release },
	[FUSE_FSYNC] = { "FSYNC", ARG(fuse_fsync_in), op_fsync },
	[FUSE_SETXATTR] = { "SETXATTR", ARG(fuse_setxattr_in), op_setxattr },
	[FUSE_GETXATTR] = { "GETXATTR", ARG(fuse_getxattr_in), op_getxattr },
	[FUSE_LISTXATTR] = { "LISTXATTR", ARG(fuse_getxattr_in), op_listxattr },
	[FUSE_REMOVEXATTR] = { "REMOVEXATTR", 0, op_removexattr },
	[FUSE_FLUSH] = { "FLUSH", ARG(fuse_flush_in), op_flush },
	[FUSE_INIT] = { "INIT", 0, NULL },
	[FUSE_OPENDIR] = { "OPENDIR", ARG(fuse_open_in), op_opendir },
	[FUSE_READDIR] = { "READDIR", ARG(fuse_read_in), op_readdir },
	[FUSE_RELEASEDIR] = { "RELEASEDIR", ARG(fuse_release_in), op_release },
	[FUSE_FSYNCDIR] = { "FSYNCDIR", ARG(fuse_fsync_in), op_fsync },
	[FUSE_GETLK] = { "GETLK", 0, NULL },
	[FUSE_SETLK] = { "SETLK", 0, NULL },
	[FUSE_SETLKW] = { "SETLKW", 0, NULL },
	[FUSE_ACCESS] = { "ACCESS", ARG(fuse_access_in), op_access },
	[FUSE_CREATE] = { "CREATE", ARG(fuse_create_in), op_create },
	[FUSE_INTERRUPT] = { "INTERRUPT", ARG(fuse_interrupt_in), NULL },
	[FUSE_BMAP] = { "BMAP", 0, NULL },
	[FUSE_DESTROY] = { "DESTROY", 0, NULL },
	[FUSE_IOCTL] = { "IOCTL", 0, NULL },
	[FUSE_POLL] = { "POLL", 0, NULL },
	[FUSE_NOTIFY_REPLY] = { "NOTIFY_REPLY", 0, NULL },
	[FUSE_BATCH_FORGET] = { "BATCH_FORGET", ARG(fuse_batch_forget_in), NULL },
	[FUSE_FALLOCATE] = { "FALLOCATE", ARG(fuse_fallocate_in), op_fallocate },
	[FUSE_READDIRPLUS] = { "READDIRPLUS", ARG(fuse_read_in), op_readdir },
	[FUSE_RENAME2] = { "RENAME2", ARG(fuse_rename2_in), op_rename },
	[FUSE_LSEEK] = { "LSEEK", ARG(fuse_lseek_in), op_lseek },
	[FUSE_COPY_FILE_RANGE] = { "COPY_FILE_RANGE", 0, NULL },
	[FUSE_SETUPMAPPING] = { "SETUPMAPPING", 0, NULL },
	[FUSE_REMOVEMAPPING] = { "REMOVEMAPPING", 0, NULL },
	[FUSE_SYNCFS] = { "SYNCFS", 0, NULL },
	[FUSE_TMPFILE] = { "TMPFILE", 0, NULL },
	[FUSE_STATX] = { "STATX", 0, NULL },
	[FUSE_COPY_FILE_RANGE_64] = { "COPY_FILE_RANGE_64", 0, NULL },
};

uint32_t rf_op_arg0_size(uint32_t opcode)
{
	return opcode < FUSE_OPCODE_MAX ? ops[opcode].arg0 : 0;
}

const char *rf_op_name(uint32_t opcode)
{
	return opcode < FUSE_OPCODE_MAX && ops[opcode].name ? ops[opcode].name : "UNKNOWN";
}

/* The kernel's word that the plugin clears setuid/setgid after this
 * request (FUSE_HANDLE_KILLPRIV_V2; the header sizes were checked). */
static bool kill_suidgid(const struct rf_req *req)
{
	switch (req->in.opcode) {
	case FUSE_WRITE:
		return ARG0(fuse_write_in)->write_flags & FUSE_WRITE_KILL_SUIDGID;
	case FUSE_SETATTR:
		return ARG0(fuse_setattr_in)->valid & FATTR_KILL_SUIDGID;
	case FUSE_OPEN:
		return ARG0(fuse_open_in)->open_flags & FUSE_OPEN_KILL_SUIDGID;
	case FUSE_CREATE:
		return ARG0(fuse_create_in)->open_flags & FUSE_OPEN_KILL_SUIDGID;
	default:
		return false;
	}
}

void rf_dispatch_count(struct rf_req *req)
{
	uint32_t op = req->in.opcode;

	req->q->stats->by_opcode[op < RF_STATS_OPCODES ? op : 0]++;
	if (op == FUSE_READ)
		req->q->stats->read_size_log2[rf_size_bucket(ARG0(fuse_read_in)->size)]++;
	if (op == FUSE_WRITE) {
		req->q->stats->write_size_log2[rf_size_bucket(ARG0(fuse_write_in)->size)]++;
		req->q->stats->bytes_written += req->rest_len;
	}
}

bool rf_dispatch_kick(const struct rf_req *req)
{
	return req->in.opcode == FUSE_STATFS && req->in.uid == RF_KICK_UID &&
	       req->in.gid == RF_KICK_GID;
}

/* RF_PLUGIN_SERIAL: one operation at a time (a reply it makes in the
 * call goes out under the lock; none calls the plugin again) */
static pthread_mutex_t serial = PTHREAD_MUTEX_INITIALIZER;

static void serial_lock(const struct rf_plugin *p)
{
	if (p->flags & RF_PLUGIN_SERIAL)
		pthread_mutex_lock(&serial);
}

static void serial_unlock(const struct rf_plugin *p)
{
	if (p->flags & RF_PLUGIN_SERIAL)
		pthread_mutex_unlock(&serial);
}

void rf_dispatch(struct rf_req *req)
{
	const struct rf_plugin *p = req->q->w->plugin;
	uint32_t op = req->in.opcode;

	req->ctx.uid = req->in.uid;
	req->ctx.gid = req->in.gid;
	req->ctx.pid = (pid_t)req->in.pid;
	req->ctx.umask = 0;
	req->state = RQ_PLUGIN;
	rf_req_reset(req);
	req->kill_suidgid = kill_suidgid(req);
	if (rf_dispatch_kick(req)) {
		/* the broker's kick after a respawn (broker/recovery.c): its
		 * commit is all it is for, as that fetches what queued
		 * meanwhile; the plugin never sees it */
		struct statvfs none;

		memset(&none, 0, sizeof(none));
		rf_reply_statfs(req, &none);
		return;
	}
	if (op >= FUSE_OPCODE_MAX || !ops[op].fn) {
		/* unknown, unsupported, or one that must not come this way */
		rf_reply_err(req, ENOSYS);
		return;
	}
	if (req->q->w->cfg.responder) {
		/* a tenant in "failed": clients fail fast */
		if (op == FUSE_RELEASE || op == FUSE_RELEASEDIR || op == FUSE_FLUSH)
			rf_reply_ok(req);
		else
			rf_reply_err(req, EIO);
		return;
	}
	req->kid = req->in.nodeid;
	req->kid2 = 0;
	req->name = req->name2 = NULL;
	req->rename_flags = 0;
	if (rf_id_in(req->q->w, req->in.nodeid, &req->in.nodeid) < 0 &&
	    !rf_restore_id_in(req->q->w, req->kid, &req->in.nodeid)) {
		/* a node of a dead generation: the kernel looks the path up
		 * again (from the root, whose id never changes) */
		if (op == FUSE_RELEASE || op == FUSE_RELEASEDIR || op == FUSE_FLUSH)
			rf_reply_ok(req);
		else
			rf_reply_err(req, ESTALE);
		return;
	}
	__atomic_store_n(&req->q->learn_op, op, __ATOMIC_RELAXED);
	serial_lock(p);
	ops[op].fn(req, p);
	serial_unlock(p);
}

/* A BATCH_FORGET's header, its count held to the entries that follow it;
 * false if there is no header. */
static bool batch_forget(const char *args, uint32_t args_len, struct fuse_batch_forget_in *b)
{
	if (args_len < sizeof(*b))
		return false;
	memcpy(b, args, sizeof(*b));
	if (b->count > (args_len - sizeof(*b)) / sizeof(struct fuse_forget_one))
		b->count = (uint32_t)((args_len - sizeof(*b)) / sizeof(struct fuse_forget_one));
	return true;
}

bool rf_dispatch_noreply(struct rf_worker *w, const struct fuse_in_header *in, const char *args,
			 uint32_t args_len)
{
	const struct rf_plugin *p = w->plugin;
	uint64_t id;

	switch (in->opcode) {
	case FUSE_FORGET: {
		struct fuse_forget_in f;

		if (args_len < sizeof(f))
			return true;
		memcpy(&f, args, sizeof(f));
		id = rf_restore_forget(w, in->nodeid, f.nlookup);
		if (p->forget && id) {
			serial_lock(p);
			p->forget(w->userdata, id, f.nlookup);
			serial_unlock(p);
		}
		return true;
	}
	case FUSE_BATCH_FORGET: {
		struct fuse_batch_forget_in b;
		uint32_t i;

		if (!batch_forget(args, args_len, &b))
			return true;
		serial_lock(p);
		for (i = 0; i < b.count; i++) {
			struct fuse_forget_one one;

			memcpy(&one, args + sizeof(b) + i * sizeof(one), sizeof(one));
			id = rf_restore_forget(w, one.nodeid, one.nlookup);
			if (p->forget && id)
				p->forget(w->userdata, id, one.nlookup);
		}
		serial_unlock(p);
		return true;
	}
	case FUSE_INTERRUPT: {
		struct fuse_interrupt_in ii;
		uint32_t qi, e;

		if (args_len < sizeof(ii))
			return true;
		memcpy(&ii, args, sizeof(ii));
		/* Flag the request wherever it is; its thread may be mid-reply,
		 * which is harmless: the flag is only advice to the plugin. */
		for (qi = 0; qi < w->nqueues; qi++)
			for (e = 0; e < w->queues[qi].nreqs; e++) {
				struct rf_req *r = &w->queues[qi].reqs[e];

				if (r->in.unique == ii.unique && r->state == RQ_PLUGIN)
					atomic_store(&r->interrupted, 1);
			}
		return true;
	}
	default:
		return false;
	}
}

bool rf_noreply_count(struct rf_queue *q, const struct fuse_in_header *in, const char *args,
		      uint32_t args_len)
{
	struct fuse_batch_forget_in b;

	switch (in->opcode) {
	case FUSE_FORGET:
		if (args_len >= sizeof(struct fuse_forget_in))
			q->stats->forgets++;
		return true;
	case FUSE_BATCH_FORGET:
		if (batch_forget(args, args_len, &b))
			q->stats->forgets += b.count;
		return true;
	case FUSE_INTERRUPT:
		if (args_len >= sizeof(struct fuse_interrupt_in))
			q->stats->interrupts++;
		return true;
	default:
		return false;
	}
}

int rf_plugin_init(struct rf_worker *w)
{
	struct rf_init_args ia;
	int err;

	if (!w->plugin->init)
		return 0;
	memset(&ia, 0, sizeof(ia));
	ia.name = w->cfg.name;
	ia.source_fd = w->source_fd;
	ia.source = w->cfg.source;
	ia.options = w->cfg.options;
	ia.max_write = w->cfg.max_write;
	ia.read_only = (int)w->cfg.read_only;
	ia.ownership = w->cfg.ownership;
	ia.state = w->state;
	ia.state_size = w->state ? w->cfg.state_size : 0;
	ia.generation = w->cfg.generation;
	err = w->plugin->init(&ia, &w->userdata);
	return err == 0 ? 0 : err > 0 && err < 4096 ? err : EIO;
}
