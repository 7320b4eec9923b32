// SPDX-License-Identifier: MIT
/*
 * libfuse's high-level API: a program's path-based struct fuse_operations
 * served as low-level operations of this library's own session, so that
 * its answers reach ringfence as any low-level program's do.
 *
 * The kernel names files by node id; the program by path. A node is a
 * name in a directory the kernel has looked up: its id, its parent's id,
 * its name, how many lookups the kernel holds (forget drops them) and how
 * many times it is open. A node's path is its parents' names, walked up to
 * the root (id 1). A node that was removed has no name: an operation on it
 * by path then gets ENOENT, or a NULL path where the program said
 * nullpath_ok. As in libfuse, a file removed while open is renamed to a
 * hidden name instead (unless hard_remove), and removed at its last
 * release.
 *
 * A listing the program fills without offsets is taken whole at its
 * first READDIR and served from the directory's handle; one with offsets
 * is asked for from each READDIR's offset.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libfuse_i.h"

#define EXPORT __attribute__((visibility("default")))

#define ROOT_ID FUSE_ROOT_ID
#define UNKNOWN_INO 0xffffffffu /* libfuse's st_ino for an entry it has not looked up */

struct node {
	uint64_t id;
	uint64_t parent;
	char *name; /* NULL once removed */
	uint64_t nlookup;
	unsigned int open;
	unsigned int children; /* nodes whose parent it is: it stays while they do */
	int hidden; /* renamed away while open: removed at its last release */
	struct node *by_id, *by_name; /* hash chains */
};

struct fuse {
	struct fuse_session *se;
	struct fuse_operations op;
	struct ll_config conf; /* the program's struct fuse_config (libfuse.h) */
	void *private_data;
	pthread_mutex_t lock;
	struct node **ids, **names;
	size_t nbuckets, nnodes;
	uint64_t next_id;
	unsigned int hidden_seq;
};

/* ---- the node table ---- */

static size_t hash_id(const struct fuse *f, uint64_t id)
{
	return (size_t)(id * 0x9e3779b97f4a7c15ULL >> 17) & (f->nbuckets - 1);
}

static size_t hash_name(const struct fuse *f, uint64_t parent, const char *name)
{
	uint64_t h = parent * 0x9e3779b97f4a7c15ULL;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 0x100000001b3ULL;
	return (size_t)(h >> 17) & (f->nbuckets - 1);
}

static struct node *by_id(struct fuse *f, uint64_t id)
{
	struct node *n;

	for (n = f->ids[hash_id(f, id)]; n; n = n->by_id)
		if (n->id == id)
			return n;
	return NULL;
}

static struct node *by_name(struct fuse *f, uint64_t parent, const char *name)
{
	struct node *n;

	for (n = f->names[hash_name(f, parent, name)]; n; n = n->by_name)
		if (n->parent == parent && n->name && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static void unhash_name(struct fuse *f, struct node *n)
{
	struct node **p;

	if (!n->name)
		return;
	for (p = &f->names[hash_name(f, n->parent, n->name)]; *p; p = &(*p)->by_name)
		if (*p == n) {
			*p = n->by_name;
			break;
		}
	free(n->name);
	n->name = NULL;
}

static void hash_in_name(struct fuse *f, struct node *n)
{
	size_t b = hash_name(f, n->parent, n->name);

	n->by_name = f->names[b];
	f->names[b] = n;
}

static void hash_in_id(struct fuse *f, struct node *n)
{
	size_t b = hash_id(f, n->id);

	n->by_id = f->ids[b];
	f->ids[b] = n;
}

/* @n is @name in @parent now (without memory for the name, it has none:
 * its path is then ENOENT, as for a removed one) */
static void node_settle(struct fuse *f, struct node *n);

/* Returns the directory @n left, for the caller to settle (node_settle)
 * once every move it makes is done, or NULL. */
static struct node *move_node(struct fuse *f, struct node *n, uint64_t parent, const char *name)
{
	struct node *from = by_id(f, n->parent), *to = by_id(f, parent);

	unhash_name(f, n);
	if (from != to) {
		if (to)
			to->children++;
		if (from)
			from->children--;
	}
	n->parent = parent;
	n->name = strdup(name);
	if (n->name)
		hash_in_name(f, n);
	return from;
}

/* Twice the buckets once there are as many nodes as buckets. */
static void grow(struct fuse *f)
{
	struct node **ids = f->ids, **names = f->names, *n, *next;
	size_t old = f->nbuckets, i;

	f->ids = calloc(old * 2, sizeof(*f->ids));
	f->names = calloc(old * 2, sizeof(*f->names));
	if (!f->ids || !f->names) {
		free(f->ids);
		free(f->names);
		f->ids = ids;
		f->names = names;
		return; /* longer chains, still correct */
	}
	f->nbuckets = old * 2;
	for (i = 0; i < old; i++)
		for (n = ids[i]; n; n = next) {
			next = n->by_id;
			hash_in_id(f, n);
			if (n->name)
				hash_in_name(f, n);
		}
	free(ids);
	free(names);
}

static struct node *node_new(struct fuse *f, uint64_t parent, const char *name)
{
	struct node *n = calloc(1, sizeof(*n)), *p;

	if (!n || !(n->name = strdup(name))) {
		free(n);
		return NULL;
	}
	if (f->nnodes >= f->nbuckets)
		grow(f);
	n->id = f->next_id++;
	n->parent = parent;
	if ((p = by_id(f, parent)))
		p->children++;
	hash_in_id(f, n);
	hash_in_name(f, n);
	f->nnodes++;
	return n;
}

static void node_free(struct fuse *f, struct node *n)
{
	struct node **p, *parent = by_id(f, n->parent);

	unhash_name(f, n);
	for (p = &f->ids[hash_id(f, n->id)]; *p; p = &(*p)->by_id)
		if (*p == n) {
			*p = n->by_id;
			break;
		}
	f->nnodes--;
	free(n);
	if (parent) {
		parent->children--;
		node_settle(f, parent);
	}
}

/* A node the kernel no longer knows, nobody has open and no node names as
 * its parent goes. */
static void node_settle(struct fuse *f, struct node *n)
{
	if (n->id != ROOT_ID && !n->nlookup && !n->open && !n->children)
		node_free(f, n);
}

/* The path of @id (and, with @name, of that name in it): 0, -ENOENT for
 * a removed node, -ESTALE for an id the table does not have. Caller
 * holds the lock. */
static int path_locked(struct fuse *f, uint64_t id, const char *name, char **out)
{
	size_t len = name ? strlen(name) + 1 : 0, at;
	struct node *n;
	char *p;

	for (n = by_id(f, id); n && n->id != ROOT_ID; n = by_id(f, n->parent)) {
		if (!n->name)
			return -ENOENT;
		len += strlen(n->name) + 1;
	}
	if (!n)
		return -ESTALE;
	p = malloc(len + 2);
	if (!p)
		return -ENOMEM;
	at = len;
	p[at] = '\0';
	if (name) {
		at -= strlen(name);
		memcpy(p + at, name, strlen(name));
		p[--at] = '/';
	}
	for (n = by_id(f, id); n->id != ROOT_ID; n = by_id(f, n->parent)) {
		at -= strlen(n->name);
		memcpy(p + at, n->name, strlen(n->name));
		p[--at] = '/';
	}
	if (len == 0) {
		p[0] = '/';
		p[1] = '\0';
	}
	*out = p;
	return 0;
}

static int get_path(struct fuse *f, uint64_t id, const char *name, char **out)
{
	int r;

	pthread_mutex_lock(&f->lock);
	r = path_locked(f, id, name, out);
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* For an operation on an open file: a removed one's is NULL where the
 * program takes that (nullpath_ok). */
static int file_path(struct fuse *f, uint64_t id, char **out)
{
	int r = get_path(f, id, NULL, out);

	if (r == -ENOENT && f->conf.nullpath_ok) {
		*out = NULL;
		return 0;
	}
	return r;
}

/* ---- requests ---- */

static __thread struct fuse_context context;

/* The request's fuse, with fuse_get_context() set for the program. */
static struct fuse *enter(fuse_req_t req)
{
	struct fuse *f = fuse_req_userdata(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);

	context.fuse = f;
	context.uid = c->uid;
	context.gid = c->gid;
	context.pid = c->pid;
	context.umask = c->umask;
	context.private_data = f->private_data;
	return f;
}

static void reply_res(fuse_req_t req, int res)
{
	fuse_reply_err(req, res < 0 ? -res : 0);
}

/* the program's attributes as the kernel gets them */
static void own_stat(struct fuse *f, uint64_t id, struct stat *st)
{
	if (!f->conf.use_ino)
		st->st_ino = id;
	if (f->conf.set_mode)
		st->st_mode = (st->st_mode & S_IFMT) | (0777 & ~f->conf.umask);
	if (f->conf.set_uid)
		st->st_uid = f->conf.uid;
	if (f->conf.set_gid)
		st->st_gid = f->conf.gid;
}

static int do_getattr(struct fuse *f, const char *path, struct stat *st, struct fuse_file_info *fi)
{
	memset(st, 0, sizeof(*st));
	return f->op.getattr ? f->op.getattr(path, st, fi) : -ENOSYS;
}

/* @name in @parent exists (its attributes in @path): its node, one
 * lookup more, as an entry. */
static int entry_of(struct fuse *f, uint64_t parent, const char *name, const char *path,
		    struct fuse_entry_param *e, struct fuse_file_info *fi)
{
	struct node *n;
	int r;

	memset(e, 0, sizeof(*e));
	r = do_getattr(f, path, &e->attr, fi);
	if (r < 0)
		return r;
	pthread_mutex_lock(&f->lock);
	n = by_name(f, parent, name);
	if (!n)
		n = node_new(f, parent, name);
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(&f->lock);
	if (!n)
		return -ENOMEM;
	e->ino = n->id;
	e->attr_timeout = f->conf.attr_timeout;
	e->entry_timeout = f->conf.entry_timeout;
	own_stat(f, n->id, &e->attr);
	return 0;
}

static void reply_entry_or(fuse_req_t req, struct fuse *f, uint64_t parent, const char *name,
			   const char *path, int res)
{
	struct fuse_entry_param e;

	if (res == 0)
		res = entry_of(f, parent, name, path, &e, NULL);
	if (res == 0)
		fuse_reply_entry(req, &e);
	else
		reply_res(req, res);
}

/* ---- the low-level operations ---- */

static void *hl_init_args(struct fuse *f, struct fuse_conn_info *conn)
{
	context.fuse = f;
	context.private_data = f->private_data;
	return f->op.init ? f->op.init(conn, (struct fuse_config *)&f->conf) : f->private_data;
}

static void hl_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fuse *f = userdata;

	f->private_data = hl_init_args(f, conn);
}

static void hl_destroy(void *userdata)
{
	struct fuse *f = userdata;

	if (f->op.destroy)
		f->op.destroy(f->private_data);
}

static void hl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse *f = enter(req);
	struct fuse_entry_param e;
	char *path;
	int r = get_path(f, parent, name, &path);

	if (r == 0) {
		r = entry_of(f, parent, name, path, &e, NULL);
		free(path);
	}
	if (r == -ENOENT && f->conf.negative_timeout != 0.0) {
		/* a negative entry the kernel keeps for that long */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = f->conf.negative_timeout;
		r = 0;
	}
	if (r == 0)
		fuse_reply_entry(req, &e);
	else
		reply_res(req, r);
}

static void hl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fuse *f = fuse_req_userdata(req);
	struct node *n;

	pthread_mutex_lock(&f->lock);
	n = by_id(f, ino);
	if (n) {
		n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
		node_settle(f, n);
	}
	pthread_mutex_unlock(&f->lock);
	fuse_reply_none(req);
}

/* an inode's path: by its open file where the kernel names one */
static int attr_path(struct fuse *f, uint64_t id, struct fuse_file_info *fi, char **out)
{
	return fi ? file_path(f, id, out) : get_path(f, id, NULL, out);
}

/* @st, the program's attributes of @id, as the kernel gets them; or the
 * error @r */
static void reply_attr_or(fuse_req_t req, struct fuse *f, uint64_t id, struct stat *st, int r)
{
	if (r < 0) {
		reply_res(req, r);
		return;
	}
	own_stat(f, id, st);
	fuse_reply_attr(req, st, f->conf.attr_timeout);
}

static void hl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	struct stat st;
	char *path;
	int r = attr_path(f, ino, fi, &path);

	if (r == 0) {
		r = do_getattr(f, path, &st, fi);
		free(path);
	}
	reply_attr_or(req, f, ino, &st, r);
}

/* As libfuse: mode, then owner, then size, then times; each the program's
 * own operation, and the attributes after them the answer. */
static void hl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid,
		       struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	struct stat st;
	char *path;
	int r = attr_path(f, ino, fi, &path);

	if (r < 0) {
		reply_res(req, r);
		return;
	}
	if (!r && (valid & FUSE_SET_ATTR_MODE))
		r = f->op.chmod ? f->op.chmod(path, attr->st_mode, fi) : -ENOSYS;
	if (!r && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		r = f->op.chown
			    ? f->op.chown(path,
					  (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
					  (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1,
					  fi)
			    : -ENOSYS;
	if (!r && (valid & FUSE_SET_ATTR_SIZE))
		r = f->op.truncate ? f->op.truncate(path, attr->st_size, fi) : -ENOSYS;
	if (!r && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		struct timespec tv[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

		if (valid & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (valid & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (valid & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		r = f->op.utimens ? f->op.utimens(path, tv, fi) : -ENOSYS;
	}
	if (!r)
		r = do_getattr(f, path, &st, fi);
	free(path);
	reply_attr_or(req, f, ino, &st, r);
}

static void hl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse *f = enter(req);
	char buf[PATH_MAX + 1], *path;
	int r = get_path(f, ino, NULL, &path);

	if (r == 0) {
		r = f->op.readlink ? f->op.readlink(path, buf, sizeof(buf)) : -ENOSYS;
		free(path);
	}
	if (r < 0) {
		reply_res(req, r);
		return;
	}
	buf[sizeof(buf) - 1] = '\0';
	fuse_reply_readlink(req, buf);
}

/* An operation that makes @name in @parent: @call with its path, then
 * the new name's entry. */
#define NEW_ENTRY(call)                                        \
	do {                                                   \
		struct fuse *f = enter(req);                   \
		char *path;                                    \
		int r = get_path(f, parent, name, &path);      \
		if (r < 0) {                                   \
			reply_res(req, r);                     \
			return;                                \
		}                                              \
		r = call;                                      \
		reply_entry_or(req, f, parent, name, path, r); \
		free(path);                                    \
	} while (0)

/* as libfuse: a regular file without the program's mknod is made by its
 * create and release */
static int do_mknod(struct fuse *f, const char *path, mode_t mode, dev_t rdev)
{
	struct ll_fi fi = { .fi.flags = O_CREAT | O_EXCL | O_WRONLY };
	int r;

	if (f->op.mknod)
		return f->op.mknod(path, mode, rdev);
	if (!S_ISREG(mode) || !f->op.create)
		return -ENOSYS;
	r = f->op.create(path, mode, &fi.fi);
	if (r == 0 && f->op.release)
		f->op.release(path, &fi.fi);
	return r;
}

static void hl_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	NEW_ENTRY(do_mknod(f, path, mode, rdev));
}

static void hl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	NEW_ENTRY(f->op.mkdir ? f->op.mkdir(path, mode) : -ENOSYS);
}

/* The name is gone: its node keeps its id for the lookups the kernel
 * holds, but has no path. */
static void forget_name(struct fuse *f, uint64_t parent, const char *name)
{
	struct node *n;

	pthread_mutex_lock(&f->lock);
	n = by_name(f, parent, name);
	if (n) {
		unhash_name(f, n);
		node_settle(f, n);
	}
	pthread_mutex_unlock(&f->lock);
}

/* A file removed while open is renamed to a hidden name in its directory,
 * and removed at its last release: 0, or 1 where it is not open. */
static int hide(struct fuse *f, uint64_t parent, const char *name, const char *path)
{
	char hidden[64], *newpath = NULL;
	struct node *n;
	int r;

	pthread_mutex_lock(&f->lock);
	n = by_name(f, parent, name);
	if (!n || !n->open || f->conf.hard_remove || !f->op.rename) {
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	snprintf(hidden, sizeof(hidden), ".fuse_hidden%016llx%08x", (unsigned long long)n->id,
		 f->hidden_seq++);
	r = path_locked(f, parent, hidden, &newpath);
	pthread_mutex_unlock(&f->lock);
	if (r < 0)
		return r;
	r = f->op.rename(path, newpath, 0);
	free(newpath);
	if (r < 0)
		return r;
	pthread_mutex_lock(&f->lock);
	n = by_name(f, parent, name);
	if (n) {
		move_node(f, n, parent, hidden);
		n->hidden = 1;
	}
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static void hl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse *f = enter(req);
	char *path;
	int r = get_path(f, parent, name, &path);

	if (r == 0) {
		r = hide(f, parent, name, path);
		if (r == 1) {
			r = f->op.unlink ? f->op.unlink(path) : -ENOSYS;
			if (r == 0)
				forget_name(f, parent, name);
		}
		free(path);
	}
	reply_res(req, r);
}

static void hl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse *f = enter(req);
	char *path;
	int r = get_path(f, parent, name, &path);

	if (r == 0) {
		r = f->op.rmdir ? f->op.rmdir(path) : -ENOSYS;
		if (r == 0)
			forget_name(f, parent, name);
		free(path);
	}
	reply_res(req, r);
}

static void hl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	NEW_ENTRY(f->op.symlink ? f->op.symlink(link, path) : -ENOSYS);
}

static void hl_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct fuse *f = enter(req);
	char *from = NULL, *to = NULL;
	struct node *n, *t, *from_n = NULL, *from_t = NULL;
	int r = get_path(f, parent, name, &from);

	if (r == 0)
		r = get_path(f, newparent, newname, &to);
	/* a target open elsewhere is hidden first, as a removed one is */
	if (r == 0 && !(flags & RENAME_EXCHANGE) && (r = hide(f, newparent, newname, to)) == 1)
		r = 0;
	if (r == 0)
		r = f->op.rename ? f->op.rename(from, to, flags) : -ENOSYS;
	if (r == 0) {
		pthread_mutex_lock(&f->lock);
		n = by_name(f, parent, name);
		t = by_name(f, newparent, newname);
		if (t && (flags & RENAME_EXCHANGE))
			from_t = move_node(f, t, parent, name);
		else if (t)
			unhash_name(f, t);
		if (n)
			from_n = move_node(f, n, newparent, newname);
		/* nothing goes before every move is done */
		if (t && !(flags & RENAME_EXCHANGE))
			node_settle(f, t);
		if (from_t)
			node_settle(f, from_t);
		if (from_n && from_n != from_t)
			node_settle(f, from_n);
		pthread_mutex_unlock(&f->lock);
	}
	free(from);
	free(to);
	reply_res(req, r);
}

static void hl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fuse *f = enter(req);
	char *from = NULL, *to = NULL;
	int r = get_path(f, ino, NULL, &from);

	if (r == 0)
		r = get_path(f, newparent, newname, &to);
	if (r == 0)
		r = f->op.link ? f->op.link(from, to) : -ENOSYS;
	if (r == 0)
		reply_entry_or(req, f, newparent, newname, to, 0);
	else
		reply_res(req, r);
	free(from);
	free(to);
}

static void opened(struct fuse *f, uint64_t id, int delta)
{
	struct node *n;

	pthread_mutex_lock(&f->lock);
	n = by_id(f, id);
	if (n) {
		n->open += (unsigned int)delta;
		if (delta < 0)
			node_settle(f, n);
	}
	pthread_mutex_unlock(&f->lock);
}

static void open_flags(struct fuse *f, struct fuse_file_info *fi)
{
	if (f->conf.direct_io)
		fi->direct_io = 1;
	if (f->conf.kernel_cache)
		fi->keep_cache = 1;
}

static void hl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	char *path;
	int r = get_path(f, ino, NULL, &path);

	if (r == 0) {
		r = f->op.open ? f->op.open(path, fi) : 0;
		free(path);
	}
	if (r < 0) {
		reply_res(req, r);
		return;
	}
	open_flags(f, fi);
	opened(f, ino, 1);
	fuse_reply_open(req, fi);
}

static void hl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	struct fuse_entry_param e;
	char *path;
	int r = get_path(f, parent, name, &path);

	if (r < 0) {
		reply_res(req, r);
		return;
	}
	r = f->op.create ? f->op.create(path, mode, fi) : -ENOSYS;
	if (r == 0) {
		r = entry_of(f, parent, name, path, &e, fi);
		if (r < 0 && f->op.release)
			f->op.release(path, fi);
	}
	free(path);
	if (r < 0) {
		reply_res(req, r);
		return;
	}
	open_flags(f, fi);
	opened(f, e.ino, 1);
	fuse_reply_create(req, &e, fi);
}

static void hl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	char *path, *buf;
	int r = file_path(f, ino, &path);

	if (r < 0) {
		reply_res(req, r);
		return;
	}
	if (f->op.read_buf) {
		struct fuse_bufvec *bv = NULL;

		r = f->op.read_buf(path, &bv, size, off, fi);
		free(path);
		if (r < 0 || !bv)
			reply_res(req, r < 0 ? r : -EIO);
		else
			fuse_reply_data(req, bv, FUSE_BUF_SPLICE_MOVE);
		if (bv) {
			for (size_t i = 0; i < bv->count; i++)
				if (!(ll_buf(bv, i)->flags & FUSE_BUF_IS_FD))
					free(ll_buf(bv, i)->mem);
			free(bv);
		}
		return;
	}
	buf = malloc(size ? size : 1);
	r = !buf ? -ENOMEM : f->op.read ? f->op.read(path, buf, size, off, fi) : -ENOSYS;
	free(path);
	if (r < 0)
		reply_res(req, r);
	else
		fuse_reply_buf(req, buf, (size_t)r < size ? (size_t)r : size);
	free(buf);
}

static void hl_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	char *path;
	int r = file_path(f, ino, &path);

	if (r < 0) {
		reply_res(req, r);
		return;
	}
	if (f->op.write_buf) {
		struct ll_bufvec1 bv = { .v = FUSE_BUFVEC_INIT(size) };

		bv.v.buf[0].mem = (void *)(uintptr_t)data;
		r = f->op.write_buf(path, &bv.v, off, fi);
	} else {
		r = f->op.write ? f->op.write(path, data, size, off, fi) : -ENOSYS;
	}
	free(path);
	if (r < 0)
		reply_res(req, r);
	else
		fuse_reply_write(req, (size_t)r);
}

#define FILE_OP(call)                             \
	do {                                      \
		struct fuse *f = enter(req);      \
		char *path;                       \
		int r = file_path(f, ino, &path); \
		if (r == 0) {                     \
			r = call;                 \
			free(path);               \
		}                                 \
		reply_res(req, r);                \
	} while (0)

static void hl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	FILE_OP(f->op.flush ? f->op.flush(path, fi) : 0);
}

static void hl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	FILE_OP(f->op.fsync ? f->op.fsync(path, datasync, fi) : -ENOSYS);
}

static void hl_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	FILE_OP(f->op.fallocate ? f->op.fallocate(path, mode, off, len, fi) : -ENOSYS);
}

/* the last release of a hidden file removes it */
static void hl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	struct node *n;
	char *path = NULL;
	int gone = 0;

	pthread_mutex_lock(&f->lock);
	n = by_id(f, ino);
	if (n && n->hidden && n->open == 1 && n->name && path_locked(f, ino, NULL, &path) == 0)
		gone = 1;
	pthread_mutex_unlock(&f->lock);
	if (!path)
		file_path(f, ino, &path);
	if (f->op.release)
		f->op.release(path, fi);
	if (gone && f->op.unlink && f->op.unlink(path) == 0) {
		pthread_mutex_lock(&f->lock);
		n = by_id(f, ino);
		if (n)
			unhash_name(f, n);
		pthread_mutex_unlock(&f->lock);
	}
	free(path);
	opened(f, ino, -1);
	fuse_reply_err(req, 0);
}

static void hl_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	char *path;
	off_t r = file_path(f, ino, &path);

	if (r == 0) {
		r = f->op.lseek ? f->op.lseek(path, off, whence, fi) : -ENOSYS;
		free(path);
	}
	if (r < 0)
		reply_res(req, (int)r);
	else
		fuse_reply_lseek(req, r);
}

/* ---- directories ---- */

struct dir_entry {
	char *name;
	struct stat st;
};

struct dir {
	uint64_t fh; /* the program's */
	struct dir_entry *e; /* a listing taken whole */
	size_t n, cap;
	int whole;
};

/* what a filler call fills: the listing, or the answer's buffer */
struct fill {
	struct fuse *f;
	fuse_req_t req;
	struct dir *d;
	char *buf;
	size_t size, len;
	int error;
};

static void dir_stat(struct fuse *f, struct stat *st, const struct stat *given)
{
	memset(st, 0, sizeof(*st));
	if (given) {
		st->st_mode = given->st_mode;
		st->st_ino = given->st_ino;
	}
	if (!f->conf.use_ino)
		st->st_ino = UNKNOWN_INO;
}

static int filler(void *h, const char *name, const struct stat *stbuf, off_t off,
		  enum fuse_fill_dir_flags flags)
{
	struct fill *fl = h;
	struct stat st;

	(void)flags;
	dir_stat(fl->f, &st, stbuf);
	if (off) {
		/* the program keeps the offsets: into this answer */
		size_t n;

		if (fl->d->whole) {
			fl->error = EIO; /* one listing cannot be both */
			return 1;
		}
		n = fuse_add_direntry(fl->req, fl->buf + fl->len, fl->size - fl->len, name, &st,
				      off);
		if (n > fl->size - fl->len)
			return 1;
		fl->len += n;
		return 0;
	}
	if (fl->len) {
		fl->error = EIO;
		return 1;
	}
	fl->d->whole = 1;
	if (fl->d->n == fl->d->cap) {
		size_t cap = fl->d->cap ? fl->d->cap * 2 : 32;
		struct dir_entry *e = realloc(fl->d->e, cap * sizeof(*e));

		if (!e) {
			fl->error = ENOMEM;
			return 1;
		}
		fl->d->e = e;
		fl->d->cap = cap;
	}
	fl->d->e[fl->d->n].name = strdup(name);
	if (!fl->d->e[fl->d->n].name) {
		fl->error = ENOMEM;
		return 1;
	}
	fl->d->e[fl->d->n++].st = st;
	return 0;
}

static void dir_clear(struct dir *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	d->n = 0;
	d->whole = 0;
}

static void hl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse *f = enter(req);
	struct dir *d = calloc(1, sizeof(*d));
	char *path;
	int r = d ? get_path(f, ino, NULL, &path) : -ENOMEM;

	if (r == 0) {
		r = f->op.opendir ? f->op.opendir(path, fi) : 0;
		free(path);
	}
	if (r < 0) {
		free(d);
		reply_res(req, r);
		return;
	}
	d->fh = fi->fh;
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

static void hl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *llfi)
{
	struct fuse *f = enter(req);
	struct dir *d = (struct dir *)(uintptr_t)llfi->fh;
	struct ll_fi fi = *(struct ll_fi *)llfi;
	struct fill fl = { .f = f, .req = req, .d = d, .size = size };
	char *path = NULL;
	int r = 0;

	fl.buf = malloc(size ? size : 1);
	if (!fl.buf) {
		reply_res(req, -ENOMEM);
		return;
	}
	fi.fi.fh = d->fh;
	/* a whole listing is taken at offset 0, and served from memory after */
	if (off == 0 || !d->whole) {
		if (off == 0)
			dir_clear(d);
		r = file_path(f, ino, &path);
		if (r == 0)
			r = f->op.readdir ? f->op.readdir(path, &fl, filler, off, &fi.fi, 0)
					  : -ENOSYS;
		free(path);
		if (r == 0 && fl.error)
			r = -fl.error;
	}
	if (r == 0 && d->whole) {
		fl.len = 0;
		for (size_t i = (size_t)off; i < d->n; i++) {
			size_t n = fuse_add_direntry(req, fl.buf + fl.len, size - fl.len,
						     d->e[i].name, &d->e[i].st, (off_t)i + 1);

			if (n > size - fl.len)
				break;
			fl.len += n;
		}
	}
	if (r < 0)
		reply_res(req, r);
	else
		fuse_reply_buf(req, fl.buf, fl.len);
	free(fl.buf);
}

static void hl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *llfi)
{
	struct fuse *f = enter(req);
	struct dir *d = (struct dir *)(uintptr_t)llfi->fh;
	struct ll_fi fi = *(struct ll_fi *)llfi;
	char *path = NULL;

	fi.fi.fh = d->fh;
	if (f->op.releasedir) {
		file_path(f, ino, &path);
		f->op.releasedir(path, &fi.fi);
		free(path);
	}
	dir_clear(d);
	free(d->e);
	free(d);
	fuse_reply_err(req, 0);
}

static void hl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *llfi)
{
	struct ll_fi fi = *(struct ll_fi *)llfi;

	fi.fi.fh = ((struct dir *)(uintptr_t)llfi->fh)->fh;
	FILE_OP(f->op.fsyncdir ? f->op.fsyncdir(path, datasync, &fi.fi) : -ENOSYS);
}

/* ---- the rest ---- */

static void hl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse *f = enter(req);
	struct statvfs sv = { .f_namemax = 255, .f_bsize = 512 };
	char *path;
	int r = get_path(f, ino ? ino : ROOT_ID, NULL, &path);

	if (r == 0) {
		if (f->op.statfs) {
			memset(&sv, 0, sizeof(sv));
			r = f->op.statfs(path, &sv);
		}
		free(path);
	}
	if (r < 0)
		reply_res(req, r);
	else
		fuse_reply_statfs(req, &sv);
}

static void hl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	FILE_OP(f->op.setxattr ? f->op.setxattr(path, name, value, size, flags) : -ENOSYS);
}

static void hl_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	FILE_OP(f->op.removexattr ? f->op.removexattr(path, name) : -ENOSYS);
}

static void hl_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	FILE_OP(f->op.access ? f->op.access(path, mask) : -ENOSYS);
}

/* getxattr and listxattr: the size asked with @size 0, else the bytes */
static void xattr_reply(fuse_req_t req, struct fuse *f, fuse_ino_t ino, const char *name,
			size_t size)
{
	char *path, *buf = NULL;
	int r = get_path(f, ino, NULL, &path);

	if (r == 0 && size && !(buf = malloc(size)))
		r = -ENOMEM;
	if (r == 0) {
		if (name)
			r = f->op.getxattr ? f->op.getxattr(path, name, buf, size) : -ENOSYS;
		else
			r = f->op.listxattr ? f->op.listxattr(path, buf, size) : -ENOSYS;
	}
	free(path);
	if (r < 0)
		reply_res(req, r);
	else if (!size)
		fuse_reply_xattr(req, (size_t)r);
	else if ((size_t)r > size)
		reply_res(req, -ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

static void hl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	xattr_reply(req, enter(req), ino, name, size);
}

static void hl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	xattr_reply(req, enter(req), ino, NULL, size);
}

static const struct fuse_lowlevel_ops hl_ops = {
	.init = hl_init,
	.destroy = hl_destroy,
	.lookup = hl_lookup,
	.forget = hl_forget,
	.getattr = hl_getattr,
	.setattr = hl_setattr,
	.readlink = hl_readlink,
	.mknod = hl_mknod,
	.mkdir = hl_mkdir,
	.unlink = hl_unlink,
	.rmdir = hl_rmdir,
	.symlink = hl_symlink,
	.rename = hl_rename,
	.link = hl_link,
	.open = hl_open,
	.read = hl_read,
	.write = hl_write,
	.flush = hl_flush,
	.release = hl_release,
	.fsync = hl_fsync,
	.opendir = hl_opendir,
	.readdir = hl_readdir,
	.releasedir = hl_releasedir,
	.fsyncdir = hl_fsyncdir,
	.statfs = hl_statfs,
	.setxattr = hl_setxattr,
	.getxattr = hl_getxattr,
	.listxattr = hl_listxattr,
	.removexattr = hl_removexattr,
	.access = hl_access,
	.create = hl_create,
	.fallocate = hl_fallocate,
	.lseek = hl_lseek,
};

/* ---- the program's calls ---- */

#define HL_OPT(t, p, v)                             \
	{                                           \
		t, offsetof(struct ll_config, p), v \
	}
/* clang-format off */
static const struct fuse_opt hl_opts[] = {
	HL_OPT("debug", debug, 1),
	HL_OPT("-d", debug, 1),
	FUSE_OPT_KEY("debug", FUSE_OPT_KEY_KEEP), /* the session's too */
	FUSE_OPT_KEY("-d", FUSE_OPT_KEY_KEEP),
	HL_OPT("kernel_cache", kernel_cache, 1),
	HL_OPT("auto_cache", auto_cache, 1),
	HL_OPT("noauto_cache", auto_cache, 0),
	HL_OPT("umask=", set_mode, 1),
	HL_OPT("umask=%o", umask, 0),
	HL_OPT("uid=", set_uid, 1),
	HL_OPT("uid=%d", uid, 0),
	HL_OPT("gid=", set_gid, 1),
	HL_OPT("gid=%d", gid, 0),
	HL_OPT("entry_timeout=%lf", entry_timeout, 0),
	HL_OPT("attr_timeout=%lf", attr_timeout, 0),
	HL_OPT("ac_attr_timeout=%lf", ac_attr_timeout, 0),
	HL_OPT("ac_attr_timeout=", ac_attr_timeout_set, 1),
	HL_OPT("negative_timeout=%lf", negative_timeout, 0),
	HL_OPT("noforget", remember, -1),
	HL_OPT("remember=%u", remember, 0),
	HL_OPT("modules=%s", modules, 0),
	HL_OPT("hard_remove", hard_remove, 1),
	HL_OPT("use_ino", use_ino, 1),
	HL_OPT("readdir_ino", readdir_ino, 1),
	HL_OPT("direct_io", direct_io, 1),
	HL_OPT("intr", intr, 1),
	HL_OPT("intr_signal=%d", intr_signal, 0),
	HL_OPT("nullpath_ok", nullpath_ok, 1),
	FUSE_OPT_END
};
/* clang-format on */

struct fuse *fuse_new_31(struct fuse_args *args, const struct fuse_operations *op, size_t op_size,
			 void *private_data);
struct fuse *fuse_new_30(struct fuse_args *args, const struct fuse_operations *op, size_t op_size,
			 void *private_data);

EXPORT struct fuse *fuse_new_31(struct fuse_args *args, const struct fuse_operations *op,
				size_t op_size, void *private_data)
{
	struct fuse *f = calloc(1, sizeof(*f));
	struct node *root;

	if (!f) {
		fuse_log(FUSE_LOG_ERR, "fuse: failed to allocate fuse object\n");
		return NULL;
	}
	f->conf.entry_timeout = 1.0;
	f->conf.attr_timeout = 1.0;
	f->conf.intr_signal = SIGUSR1;
	if (fuse_opt_parse(args, &f->conf, hl_opts, NULL) == -1)
		goto fail;
	if (op_size > sizeof(f->op))
		op_size = sizeof(f->op); /* a newer header's: its extra ops are not called */
	memcpy(&f->op, op, op_size);
	f->private_data = private_data;
	f->nbuckets = 64;
	f->ids = calloc(f->nbuckets, sizeof(*f->ids));
	f->names = calloc(f->nbuckets, sizeof(*f->names));
	root = calloc(1, sizeof(*root));
	if (!f->ids || !f->names || !root) {
		free(root);
		goto fail;
	}
	pthread_mutex_init(&f->lock, NULL);
	root->id = ROOT_ID;
	root->nlookup = 1;
	hash_in_id(f, root);
	f->nnodes = 1;
	f->next_id = ROOT_ID + 1;
	f->se = fuse_session_new(args, &hl_ops, sizeof(hl_ops), f);
	if (!f->se)
		goto fail;
	return f;
fail:
	free(f->conf.modules);
	free(f->ids);
	free(f->names);
	free(f);
	return NULL;
}

EXPORT struct fuse *fuse_new_30(struct fuse_args *args, const struct fuse_operations *op,
				size_t op_size, void *private_data)
{
	return fuse_new_31(args, op, op_size, private_data);
}

/* libfuse 3.17's headers call _fuse_new_31 (_fuse_new_30 for the API of
 * 3.0) for fuse_new(); libfuse3.so.4 has no default fuse_new */
EXPORT struct fuse *_fuse_new_31(struct fuse_args *args, const struct fuse_operations *op,
				 size_t op_size, struct libfuse_version *version,
				 void *private_data)
{
	(void)version;
	return fuse_new_31(args, op, op_size, private_data);
}

EXPORT struct fuse *_fuse_new_30(struct fuse_args *args, const struct fuse_operations *op,
				 size_t op_size, struct libfuse_version *version,
				 void *private_data)
{
	(void)version;
	return fuse_new_30(args, op, op_size, private_data);
}

#ifdef RF_LIBFUSE_ABI4
__asm__(".symver fuse_new_31, fuse_new@FUSE_3.1");
#else
__asm__(".symver fuse_new_31, fuse_new@@FUSE_3.1");
#endif
__asm__(".symver fuse_new_30, fuse_new@FUSE_3.0");

EXPORT void fuse_destroy(struct fuse *f)
{
	size_t i;

	if (!f)
		return;
	fuse_session_destroy(f->se);
	for (i = 0; i < f->nbuckets; i++)
		while (f->ids[i]) {
			struct node *n = f->ids[i];

			f->ids[i] = n->by_id;
			free(n->name);
			free(n);
		}
	pthread_mutex_destroy(&f->lock);
	free(f->conf.modules);
	free(f->ids);
	free(f->names);
	free(f);
}

EXPORT struct fuse_session *fuse_get_session(struct fuse *f)
{
	return f->se;
}

/* The broker mounted: nothing to do. */
EXPORT int fuse_mount(struct fuse *f, const char *mountpoint)
{
	return fuse_session_mount(f->se, mountpoint);
}

EXPORT void fuse_unmount(struct fuse *f)
{
	fuse_session_unmount(f->se);
}

EXPORT void fuse_exit(struct fuse *f)
{
	fuse_session_exit(f->se);
}

EXPORT struct fuse_context *fuse_get_context(void)
{
	return &context;
}

/* ringfence does not pass the client's groups on */
EXPORT int fuse_getgroups(int size, gid_t list[])
{
	(void)size;
	(void)list;
	return -ENOSYS;
}

/* an interrupt is seen by asking, at the request's start (fuse_req_interrupted) */
EXPORT int fuse_interrupted(void)
{
	return 0;
}

EXPORT void fuse_lib_help(struct fuse_args *args)
{
	(void)args;
	printf("    -o hard_remove         immediate removal (don't hide files)\n"
	       "    -o use_ino             let filesystem set inode numbers\n"
	       "    -o readdir_ino         try to fill in d_ino in readdir\n"
	       "    -o direct_io           use direct I/O\n"
	       "    -o kernel_cache        cache files in kernel\n"
	       "    -o umask=M             set file permissions (octal)\n"
	       "    -o uid=N               set file owner\n"
	       "    -o gid=N               set file group\n"
	       "    -o entry_timeout=T     cache timeout for names (1.0s)\n"
	       "    -o negative_timeout=T  cache timeout for deleted names (0.0s)\n"
	       "    -o attr_timeout=T      cache timeout for attributes (1.0s)\n"
	       "    -o nullpath_ok         allow NULL paths for open files\n");
}

/* nothing is cached past the kernel's forget: nothing to clean */
EXPORT int fuse_start_cleanup_thread(struct fuse *f)
{
	(void)f;
	return 0;
}

EXPORT void fuse_stop_cleanup_thread(struct fuse *f)
{
	(void)f;
}

EXPORT int fuse_clean_cache(struct fuse *f)
{
	(void)f;
	return 3600;
}

/* a notification to the kernel, which ringfence does not pass on */
EXPORT int fuse_invalidate_path(struct fuse *f, const char *path)
{
	(void)f;
	(void)path;
	UNSUPPORTED("fuse_invalidate_path");
}
