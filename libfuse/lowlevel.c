// SPDX-License-Identifier: MIT
/*
 * libfuse's low-level API over ringfence's plugin ABI: a program's
 * struct fuse_lowlevel_ops served as a struct rf_plugin (rf_libfuse_plugin,
 * for the plugin host), and the program's fuse_reply_* as rf_reply_*, so
 * that the keeper checks every answer as it checks any plugin's.
 *
 * A fuse_req_t is a struct fuse_req of this file: the ringfence request,
 * the session, and what the request was (a READDIR's answer is parsed from
 * the program's buffer, a READ's is data). A FORGET, which ringfence hands
 * a plugin as a call with no request, gets one too, with no ringfence
 * request, for the program's fuse_reply_none.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libfuse_i.h"

#define EXPORT __attribute__((visibility("default")))

/* one session a process: the plugin's userdata is it */
static struct fuse_session *the_session;

enum {
	KEY_DEBUG,
	KEY_MOUNT,
	KEY_NAME
};

/* the session's options and the mount's, as libfuse knows them (its
 * low-level options, mount.fuse(8)'s); the mount's are the policy's */
static const struct fuse_opt session_opts[] = {
	FUSE_OPT_KEY("debug", KEY_DEBUG),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("--debug", KEY_DEBUG),
	FUSE_OPT_KEY("allow_root", KEY_MOUNT),
	FUSE_OPT_KEY("allow_other", KEY_MOUNT),
	FUSE_OPT_KEY("auto_unmount", KEY_MOUNT),
	FUSE_OPT_KEY("default_permissions", KEY_MOUNT),
	FUSE_OPT_KEY("blkdev", KEY_MOUNT),
	FUSE_OPT_KEY("fsname=", KEY_NAME),
	FUSE_OPT_KEY("subtype=", KEY_NAME),
	FUSE_OPT_KEY("max_read=", KEY_MOUNT),
	FUSE_OPT_KEY("blksize=", KEY_MOUNT),
	FUSE_OPT_KEY("rootmode=", KEY_MOUNT),
	FUSE_OPT_KEY("user_id=", KEY_MOUNT),
	FUSE_OPT_KEY("group_id=", KEY_MOUNT),
	FUSE_OPT_KEY("context=", KEY_MOUNT),
	FUSE_OPT_KEY("fscontext=", KEY_MOUNT),
	FUSE_OPT_KEY("defcontext=", KEY_MOUNT),
	FUSE_OPT_KEY("rootcontext=", KEY_MOUNT),
	FUSE_OPT_KEY("ro", KEY_MOUNT),
	FUSE_OPT_KEY("rw", KEY_MOUNT),
	FUSE_OPT_KEY("suid", KEY_MOUNT),
	FUSE_OPT_KEY("nosuid", KEY_MOUNT),
	FUSE_OPT_KEY("dev", KEY_MOUNT),
	FUSE_OPT_KEY("nodev", KEY_MOUNT),
	FUSE_OPT_KEY("exec", KEY_MOUNT),
	FUSE_OPT_KEY("noexec", KEY_MOUNT),
	FUSE_OPT_KEY("async", KEY_MOUNT),
	FUSE_OPT_KEY("sync", KEY_MOUNT),
	FUSE_OPT_KEY("dirsync", KEY_MOUNT),
	FUSE_OPT_KEY("atime", KEY_MOUNT),
	FUSE_OPT_KEY("noatime", KEY_MOUNT),
	FUSE_OPT_KEY("diratime", KEY_MOUNT),
	FUSE_OPT_KEY("nodiratime", KEY_MOUNT),
	FUSE_OPT_KEY("relatime", KEY_MOUNT),
	FUSE_OPT_KEY("norelatime", KEY_MOUNT),
	FUSE_OPT_KEY("strictatime", KEY_MOUNT),
	FUSE_OPT_KEY("nostrictatime", KEY_MOUNT),
	FUSE_OPT_KEY("lazytime", KEY_MOUNT),
	FUSE_OPT_KEY("nolazytime", KEY_MOUNT),
	FUSE_OPT_END,
};

static int session_opt(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct fuse_session *se = data;

	(void)outargs;
	switch (key) {
	case KEY_DEBUG:
		se->debug = 1;
		return 0;
	case KEY_NAME:
		/* what mount(8) shows, the broker's: taken without a word
		 * (fuse_parse_cmdline adds a subtype to every program's) */
		return 0;
	case KEY_MOUNT:
		fuse_log(FUSE_LOG_INFO,
			 "fuse: mount option `%s' ignored: the tenant's policy says how ringfence "
			 "mounts (ringfence.policy(5))\n",
			 arg);
		return 0;
	default:
		return 1; /* unknown: kept, and refused below */
	}
}

/* libfuse's refusal of what no parser took: the kept arguments, in one */
static void unknown_options(const struct fuse_args *args)
{
	char text[512];
	size_t n = 0;
	int i;

	for (i = 1; i < args->argc && n < sizeof(text); i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s", i > 1 ? " " : "",
				      args->argv[i]);
	fuse_log(FUSE_LOG_ERR, "fuse: unknown option(s): `%s'\n", text);
}

EXPORT struct fuse_session *fuse_session_new(struct fuse_args *args,
					     const struct fuse_lowlevel_ops *op, size_t op_size,
					     void *userdata)
{
	struct fuse_session *se;

	if (the_session) {
		fuse_log(FUSE_LOG_ERR, "fuse: a ringfence tenant has one session\n");
		return NULL;
	}
	se = calloc(1, sizeof(*se));
	if (!se) {
		fuse_log(FUSE_LOG_ERR, "fuse: failed to allocate fuse object\n");
		return NULL;
	}
	if (op_size > sizeof(se->op))
		op_size = sizeof(se->op); /* a newer header's: its extra ops are not called */
	memcpy(&se->op, op, op_size);
	se->userdata = userdata;
	if (args && fuse_opt_parse(args, se, session_opts, session_opt) == -1) {
		free(se);
		return NULL;
	}
	if (args && args->argc > 1) {
		unknown_options(args);
		free(se);
		return NULL;
	}
	the_session = se;
	return se;
}

/* libfuse 3.17's headers call this for fuse_session_new(); @version is
 * theirs, and every structure is laid out as libfuse3.so.4's are */
EXPORT struct fuse_session *
fuse_session_new_versioned(struct fuse_args *args, const struct fuse_lowlevel_ops *op,
			   size_t op_size, struct libfuse_version *version, void *userdata)
{
	(void)version;
	return fuse_session_new(args, op, op_size, userdata);
}

/* The broker mounted: nothing to do. */
EXPORT int fuse_session_mount(struct fuse_session *se, const char *mountpoint)
{
	(void)se;
	(void)mountpoint;
	return 0;
}

EXPORT void fuse_session_unmount(struct fuse_session *se)
{
	(void)se;
}

EXPORT void fuse_session_exit(struct fuse_session *se)
{
	__atomic_store_n(&se->exited, 1, __ATOMIC_RELEASE);
}

EXPORT void fuse_session_reset(struct fuse_session *se)
{
	__atomic_store_n(&se->exited, 0, __ATOMIC_RELEASE);
}

EXPORT int fuse_session_exited(struct fuse_session *se)
{
	return __atomic_load_n(&se->exited, __ATOMIC_ACQUIRE);
}

EXPORT void fuse_session_destroy(struct fuse_session *se)
{
	if (!se)
		return;
	if (se->initialized && se->op.destroy)
		se->op.destroy(se->userdata);
	if (the_session == se)
		the_session = NULL;
	free(se);
}

/* ---- libfuse 3.17's capability flags ---- */

EXPORT bool fuse_set_feature_flag(struct fuse_conn_info *conn, uint64_t flag)
{
	if (!(ll_conn_get(conn, LL_CONN_CAPABLE_EXT) & flag))
		return false;
	ll_conn_set(conn, LL_CONN_WANT_EXT, ll_conn_get(conn, LL_CONN_WANT_EXT) | flag);
	return true;
}

EXPORT void fuse_unset_feature_flag(struct fuse_conn_info *conn, uint64_t flag)
{
	ll_conn_set(conn, LL_CONN_WANT_EXT, ll_conn_get(conn, LL_CONN_WANT_EXT) & ~flag);
}

EXPORT bool fuse_get_feature_flag(struct fuse_conn_info *conn, uint64_t flag)
{
	return (ll_conn_get(conn, LL_CONN_WANT_EXT) & flag) != 0;
}

/* ---- passthrough (libfuse 3.17): a backing file per id ----
 *
 * Where libfuse registers the file with the kernel, which then moves an
 * open file's data without the program, the library keeps a copy of the
 * descriptor under the id, and an open or create reply that names the id
 * hands it to ringfence (rf_req_backing), which does the same. */
static struct {
	pthread_mutex_t lock;
	int *fds; /* id - 1: a descriptor, or -1 */
	size_t n;
} backing = { .lock = PTHREAD_MUTEX_INITIALIZER };

EXPORT int fuse_passthrough_open(fuse_req_t req, int fd)
{
	size_t i;
	int copy, *more;

	if (!req->se->passthrough) {
		fuse_log(FUSE_LOG_ERR, "fuse: passthrough_open: the program's init did not ask "
				       "for FUSE_CAP_PASSTHROUGH\n");
		return 0;
	}
	copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (copy < 0) {
		fuse_log(FUSE_LOG_ERR, "fuse: passthrough_open: %s\n", strerror(errno));
		return 0;
	}
	pthread_mutex_lock(&backing.lock);
	for (i = 0; i < backing.n && backing.fds[i] >= 0; i++)
		;
	if (i == backing.n) {
		more = i < INT32_MAX ? realloc(backing.fds, (i + 1) * sizeof(*more)) : NULL;
		if (!more) {
			pthread_mutex_unlock(&backing.lock);
			close(copy);
			fuse_log(FUSE_LOG_ERR, "fuse: passthrough_open: %s\n", strerror(ENOMEM));
			return 0;
		}
		backing.fds = more;
		backing.n++;
	}
	backing.fds[i] = copy;
	pthread_mutex_unlock(&backing.lock);
	return (int)i + 1;
}

EXPORT int fuse_passthrough_close(fuse_req_t req, int backing_id)
{
	int fd = -1;

	(void)req;
	pthread_mutex_lock(&backing.lock);
	if (backing_id > 0 && (size_t)backing_id <= backing.n) {
		fd = backing.fds[backing_id - 1];
		backing.fds[backing_id - 1] = -1;
	}
	pthread_mutex_unlock(&backing.lock);
	if (fd < 0) {
		errno = EINVAL;
		return -1;
	}
	close(fd);
	return 0;
}

int rf_ll_backing_fd(int32_t id)
{
	int fd = -1;

	pthread_mutex_lock(&backing.lock);
	if (id > 0 && (size_t)id <= backing.n)
		fd = backing.fds[id - 1];
	pthread_mutex_unlock(&backing.lock);
	return fd;
}

/* ---- requests ---- */

static struct fuse_req *req_new(struct fuse_session *se, struct rf_req *r, enum ll_kind kind)
{
	struct fuse_req *req = calloc(1, sizeof(*req));

	if (!req) {
		/* no memory for the program's view of it: the request ends */
		if (r)
			rf_reply_err(r, ENOMEM);
		return NULL;
	}
	req->r = r;
	req->se = se;
	req->kind = kind;
	return req;
}

void rf_ll_req_free(struct fuse_req *req)
{
	free(req);
}

EXPORT void *fuse_req_userdata(fuse_req_t req)
{
	return req->se->userdata;
}

EXPORT const struct fuse_ctx *fuse_req_ctx(fuse_req_t req)
{
	const struct rf_req_ctx *c = req->r ? rf_req_ctx(req->r) : NULL;

	if (c) {
		req->ctx.uid = c->uid;
		req->ctx.gid = c->gid;
		req->ctx.pid = c->pid;
		req->ctx.umask = c->umask;
	}
	return &req->ctx;
}

/* ringfence does not pass the client's groups on */
EXPORT int fuse_req_getgroups(fuse_req_t req, int size, gid_t list[])
{
	(void)req;
	(void)size;
	(void)list;
	return -ENOSYS;
}

/* A request's payload is ringfence's to place: a program reads and
 * writes data through its replies, as on /dev/fuse. */
EXPORT bool fuse_req_is_uring(fuse_req_t req)
{
	(void)req;
	return false;
}

EXPORT int fuse_req_get_payload(fuse_req_t req, char **payload, size_t *payload_sz, void **mr)
{
	(void)req;
	(void)payload;
	(void)payload_sz;
	(void)mr;
	return -ENOTSUP;
}

EXPORT int fuse_req_interrupted(fuse_req_t req)
{
	return req->r ? rf_req_interrupted(req->r) : 0;
}

/* An interrupt is only ever seen by asking (fuse_req_interrupted): the
 * function is called at once if the request is interrupted already, and
 * never later. */
EXPORT void fuse_req_interrupt_func(fuse_req_t req, fuse_interrupt_func_t func, void *data)
{
	if (func && fuse_req_interrupted(req))
		func(req, data);
}

/* ---- the program's operations, as a ringfence plugin's ---- */

static struct fuse_session *session(struct rf_req *r)
{
	return rf_req_userdata(r);
}

/* the program's request for @r, or NULL (answered ENOSYS) where the
 * program has no @op */
static struct fuse_req *take(struct rf_req *r, const void *op, enum ll_kind kind)
{
	if (!op) {
		rf_reply_err(r, ENOSYS);
		return NULL;
	}
	return req_new(session(r), r, kind);
}

#define OP(name) (session(r)->op.name)
#define CALL(name, kind, ...)                                   \
	do {                                                    \
		struct fuse_req *req = take(r, OP(name), kind); \
		if (req)                                        \
			session(r)->op.name(req, __VA_ARGS__);  \
	} while (0)

/* the program's view of an open file: zeroed, with room for libfuse
 * 3.17's fields (libfuse.h) */
static struct fuse_file_info *file(struct ll_fi *fi, uint64_t fh, int flags)
{
	memset(fi, 0, sizeof(*fi));
	fi->fi.fh = fh;
	fi->fi.flags = flags;
	return &fi->fi;
}

static int a_init(const struct rf_init_args *a, void **userdata)
{
	struct fuse_session *se = the_session;
	struct fuse_conn_info conn;

	if (!se)
		return EINVAL;
	*userdata = se;
	if (se->op.init) {
		memset(&conn, 0, sizeof(conn));
		conn.proto_major = 7;
		conn.proto_minor = 31;
		conn.max_write = a->max_write;
		conn.max_read = a->max_write;
		conn.max_readahead = a->max_write;
		conn.max_background = 64;
		conn.congestion_threshold = 48;
#ifdef RF_LIBFUSE_ABI4
		/* what a program may choose: ringfence moves an open file's
		 * data itself (fuse_passthrough_open); the rest of the
		 * connection is the broker's, as the policy says */
		ll_conn_set(&conn, LL_CONN_CAPABLE_EXT, LL_CAP_PASSTHROUGH);
		conn.capable = (uint32_t)LL_CAP_PASSTHROUGH;
#endif
		se->op.init(se->userdata, &conn);
#ifdef RF_LIBFUSE_ABI4
		/* the 64-bit want, or the 32-bit one where the program set
		 * that (as libfuse 3.17 reads them) */
		se->passthrough =
			!!((ll_conn_get(&conn, LL_CONN_WANT_EXT) | conn.want) & LL_CAP_PASSTHROUGH);
#endif
	}
	se->initialized = 1;
	return 0;
}

static void a_destroy(void *userdata)
{
	struct fuse_session *se = userdata;

	if (se->initialized && se->op.destroy)
		se->op.destroy(se->userdata);
	se->initialized = 0;
}

static void a_lookup(struct rf_req *r, uint64_t parent, const char *name)
{
	CALL(lookup, LL_ENTRY, parent, name);
}

/* @nlookup lookups of @ino dropped: the program's forget (or forget_multi,
 * of one), with a request of its own for its fuse_reply_none */
void rf_ll_forget(struct fuse_session *se, uint64_t ino, uint64_t nlookup)
{
	struct fuse_req *req;

	if (!se->op.forget && !se->op.forget_multi)
		return;
	req = req_new(se, NULL, LL_NONE);
	if (!req)
		return;
	if (se->op.forget) {
		se->op.forget(req, ino, nlookup);
	} else {
		struct fuse_forget_data one = { .ino = ino, .nlookup = nlookup };

		se->op.forget_multi(req, 1, &one);
	}
}

static void a_forget(void *userdata, uint64_t ino, uint64_t nlookup)
{
	rf_ll_forget(userdata, ino, nlookup);
}

static void a_getattr(struct rf_req *r, uint64_t ino, uint64_t fh)
{
	struct ll_fi fi;

	CALL(getattr, LL_ATTR, ino, fh == RF_NO_FH ? NULL : file(&fi, fh, 0));
}

static void a_setattr(struct rf_req *r, uint64_t ino, const struct rf_setattr *sa)
{
	struct ll_fi fi;
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_mode = sa->mode;
	st.st_uid = sa->uid;
	st.st_gid = sa->gid;
	st.st_size = sa->size;
	st.st_atim = sa->atime;
	st.st_mtim = sa->mtime;
	st.st_ctim = sa->ctime;
	/* RF_SET_* are FUSE_SET_ATTR_*, bit for bit */
	CALL(setattr, LL_ATTR, ino, &st, (int)sa->valid,
	     sa->fh == RF_NO_FH ? NULL : file(&fi, sa->fh, 0));
}

static void a_readlink(struct rf_req *r, uint64_t ino)
{
	CALL(readlink, LL_READLINK, ino);
}

static void a_mknod(struct rf_req *r, uint64_t parent, const char *name, mode_t mode, dev_t rdev)
{
	CALL(mknod, LL_ENTRY, parent, name, mode, rdev);
}

static void a_mkdir(struct rf_req *r, uint64_t parent, const char *name, mode_t mode)
{
	CALL(mkdir, LL_ENTRY, parent, name, mode);
}

static void a_unlink(struct rf_req *r, uint64_t parent, const char *name)
{
	CALL(unlink, LL_ERR, parent, name);
}

static void a_rmdir(struct rf_req *r, uint64_t parent, const char *name)
{
	CALL(rmdir, LL_ERR, parent, name);
}

static void a_symlink(struct rf_req *r, const char *target, uint64_t parent, const char *name)
{
	CALL(symlink, LL_ENTRY, target, parent, name);
}

static void a_rename(struct rf_req *r, uint64_t parent, const char *name, uint64_t newparent,
		     const char *newname, unsigned int flags)
{
	CALL(rename, LL_ERR, parent, name, newparent, newname, flags);
}

static void a_link(struct rf_req *r, uint64_t ino, uint64_t newparent, const char *newname)
{
	CALL(link, LL_ENTRY, ino, newparent, newname);
}

/* As libfuse does for a program without them: open, opendir, release and
 * releasedir succeed (with handle 0), statfs answers a default. */
static void open_or_not(struct rf_req *r,
			void (*op)(fuse_req_t, fuse_ino_t, struct fuse_file_info *), uint64_t ino,
			int flags)
{
	struct ll_fi fi;
	struct fuse_req *req;

	if (!op) {
		rf_reply_open(r, 0, 0);
		return;
	}
	req = req_new(session(r), r, LL_OPEN);
	if (req)
		op(req, ino, file(&fi, 0, flags));
}

static void a_open(struct rf_req *r, uint64_t ino, int flags)
{
	open_or_not(r, OP(open), ino, flags);
}

static void a_read(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct ll_fi fi;

	CALL(read, LL_DATA, ino, size, off, file(&fi, fh, 0));
}

static void a_write(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, const void *data,
		    size_t size)
{
	struct ll_fi fi;
	struct fuse_session *se = session(r);

	if (se->op.write_buf) {
		struct ll_bufvec1 bv = { .v = FUSE_BUFVEC_INIT(size) };
		struct fuse_req *req = req_new(se, r, LL_WRITE);

		if (!req)
			return;
		bv.v.buf[0].mem = (void *)(uintptr_t)data;
		se->op.write_buf(req, ino, &bv.v, off, file(&fi, fh, 0));
		return;
	}
	CALL(write, LL_WRITE, ino, data, size, off, file(&fi, fh, 0));
}

static void a_flush(struct rf_req *r, uint64_t ino, uint64_t fh)
{
	struct ll_fi fi;

	CALL(flush, LL_ERR, ino, file(&fi, fh, 0));
}

static void a_release(struct rf_req *r, uint64_t ino, uint64_t fh, int flags)
{
	struct ll_fi fi;

	if (!OP(release))
		rf_reply_ok(r);
	else
		CALL(release, LL_ERR, ino, file(&fi, fh, flags));
}

static void a_fsync(struct rf_req *r, uint64_t ino, uint64_t fh, int datasync)
{
	struct ll_fi fi;

	CALL(fsync, LL_ERR, ino, datasync, file(&fi, fh, 0));
}

static void a_opendir(struct rf_req *r, uint64_t ino, int flags)
{
	open_or_not(r, OP(opendir), ino, flags);
}

static void a_readdir(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct ll_fi fi;

	CALL(readdir, LL_DIR, ino, size, off, file(&fi, fh, 0));
}

static void a_readdirplus(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct ll_fi fi;

	CALL(readdirplus, LL_DIRPLUS, ino, size, off, file(&fi, fh, 0));
}

static void a_releasedir(struct rf_req *r, uint64_t ino, uint64_t fh)
{
	struct ll_fi fi;

	if (!OP(releasedir))
		rf_reply_ok(r);
	else
		CALL(releasedir, LL_ERR, ino, file(&fi, fh, 0));
}

static void a_fsyncdir(struct rf_req *r, uint64_t ino, uint64_t fh, int datasync)
{
	struct ll_fi fi;

	CALL(fsyncdir, LL_ERR, ino, datasync, file(&fi, fh, 0));
}

static void a_statfs(struct rf_req *r, uint64_t ino)
{
	struct statvfs st = { .f_bsize = 512, .f_namemax = 255 };

	if (!OP(statfs))
		rf_reply_statfs(r, &st);
	else
		CALL(statfs, LL_STATFS, ino);
}

static void a_setxattr(struct rf_req *r, uint64_t ino, const char *name, const void *value,
		       size_t size, int flags)
{
	CALL(setxattr, LL_ERR, ino, name, value, size, flags);
}

static void a_getxattr(struct rf_req *r, uint64_t ino, const char *name, size_t size)
{
	CALL(getxattr, LL_XATTR, ino, name, size);
}

static void a_listxattr(struct rf_req *r, uint64_t ino, size_t size)
{
	CALL(listxattr, LL_XATTR, ino, size);
}

static void a_removexattr(struct rf_req *r, uint64_t ino, const char *name)
{
	CALL(removexattr, LL_ERR, ino, name);
}

static void a_access(struct rf_req *r, uint64_t ino, int mask)
{
	CALL(access, LL_ERR, ino, mask);
}

static void a_create(struct rf_req *r, uint64_t parent, const char *name, mode_t mode, int flags)
{
	struct ll_fi fi;

	CALL(create, LL_CREATE, parent, name, mode, file(&fi, 0, flags));
}

static void a_fallocate(struct rf_req *r, uint64_t ino, uint64_t fh, int mode, off_t off, off_t len)
{
	struct ll_fi fi;

	CALL(fallocate, LL_ERR, ino, mode, off, len, file(&fi, fh, 0));
}

static void a_lseek(struct rf_req *r, uint64_t ino, uint64_t fh, off_t off, int whence)
{
	struct ll_fi fi;

	CALL(lseek, LL_LSEEK, ino, off, whence, file(&fi, fh, 0));
}

/*
 * The program's operations as a plugin's, for @se. Those the program does
 * not have stay NULL where ringfence then answers for itself (READDIRPLUS
 * through READDIR, FORGET dropped); the rest answer ENOSYS. Node ids and
 * open files are the program's own memory: none is restored for a
 * successor (no restore_node, no reopen).
 */
EXPORT const struct rf_plugin *rf_libfuse_plugin(struct fuse_session *se)
{
	static struct rf_plugin p = {
		RF_PLUGIN_INIT,
		.name = "libfuse",
		.init = a_init,
		.destroy = a_destroy,
		.lookup = a_lookup,
		.forget = a_forget,
		.getattr = a_getattr,
		.setattr = a_setattr,
		.readlink = a_readlink,
		.mknod = a_mknod,
		.mkdir = a_mkdir,
		.unlink = a_unlink,
		.rmdir = a_rmdir,
		.symlink = a_symlink,
		.rename = a_rename,
		.link = a_link,
		.open = a_open,
		.read = a_read,
		.write = a_write,
		.flush = a_flush,
		.release = a_release,
		.fsync = a_fsync,
		.opendir = a_opendir,
		.readdir = a_readdir,
		.releasedir = a_releasedir,
		.fsyncdir = a_fsyncdir,
		.statfs = a_statfs,
		.setxattr = a_setxattr,
		.getxattr = a_getxattr,
		.listxattr = a_listxattr,
		.removexattr = a_removexattr,
		.access = a_access,
		.create = a_create,
		.fallocate = a_fallocate,
		.lseek = a_lseek,
	};

	if (!se || se != the_session)
		return NULL;
	p.readdirplus = se->op.readdirplus ? a_readdirplus : NULL;
	return &p;
}
