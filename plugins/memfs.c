// SPDX-License-Identifier: MIT
/*
 * memfs: an in-memory filesystem, for tests and demos without a backing
 * directory. One lock guards everything; that is plenty for tests.
 *
 * Options: size=BYTES (K/M/G suffixes) caps file data, default 256M.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "ringfence/plugin.h"

struct mf_dirent {
	char *name;
	uint64_t ino;
	struct mf_dirent *next;
};

struct mf_xattr {
	char *name;
	void *value;
	size_t size;
	struct mf_xattr *next;
};

struct mf_node {
	struct stat st;
	uint64_t nlookup;
	uint32_t nopen;
	char *data; /* regular file contents or symlink target */
	size_t cap;
	struct mf_dirent *entries; /* directories */
	struct mf_xattr *xattrs;
};

struct mf {
	pthread_mutex_t lock;
	struct mf_node **nodes; /* index = ino - 1 */
	size_t nnodes;
	size_t used, limit;
};

#define MF(req) ((struct mf *)rf_req_userdata(req))

static struct mf_node *node(struct mf *m, uint64_t ino)
{
	if (ino == 0 || ino > m->nnodes)
		return NULL;
	return m->nodes[ino - 1];
}

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

static uint64_t new_node(struct mf *m, mode_t mode, const struct rf_req_ctx *ctx)
{
	struct mf_node *n = calloc(1, sizeof(*n));
	size_t i;

	if (!n)
		return 0;
	n->st.st_mode = mode;
	n->st.st_nlink = S_ISDIR(mode) ? 2 : 1;
	n->st.st_uid = ctx ? ctx->uid : getuid();
	n->st.st_gid = ctx ? ctx->gid : getgid();
	n->st.st_blksize = 4096;
	now(&n->st.st_atim);
	n->st.st_mtim = n->st.st_ctim = n->st.st_atim;
	for (i = 0; i < m->nnodes; i++)
		if (!m->nodes[i])
			break;
	if (i == m->nnodes) {
		struct mf_node **nn = realloc(m->nodes, (m->nnodes + 64) * sizeof(*nn));

		if (!nn) {
			free(n);
			return 0;
		}
		memset(nn + m->nnodes, 0, 64 * sizeof(*nn));
		m->nodes = nn;
		m->nnodes += 64;
	}
	m->nodes[i] = n;
	n->st.st_ino = i + 1;
	return i + 1;
}

static void maybe_free(struct mf *m, uint64_t ino)
{
	struct mf_node *n = node(m, ino);
	struct mf_xattr *x, *xn;

	if (!n || ino == RF_ROOT_ID || n->nlookup || n->nopen || n->st.st_nlink)
		return;
	for (x = n->xattrs; x; x = xn) {
		xn = x->next;
		free(x->name);
		free(x->value);
		free(x);
	}
	if (S_ISREG(n->st.st_mode))
		m->used -= n->cap;
	free(n->data);
	free(n);
	m->nodes[ino - 1] = NULL;
}

static struct mf_dirent *find(struct mf_node *dir, const char *name)
{
	struct mf_dirent *d;

	for (d = dir->entries; d; d = d->next)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

static int add_entry(struct mf_node *dir, const char *name, uint64_t ino)
{
	struct mf_dirent *d = calloc(1, sizeof(*d));

	if (!d || !(d->name = strdup(name))) {
		free(d);
		return ENOMEM;
	}
	d->ino = ino;
	d->next = dir->entries;
	dir->entries = d;
	now(&dir->st.st_mtim);
	dir->st.st_ctim = dir->st.st_mtim;
	return 0;
}

static void del_entry(struct mf_node *dir, const char *name)
{
	struct mf_dirent **pp, *d;

	for (pp = &dir->entries; (d = *pp); pp = &d->next)
		if (!strcmp(d->name, name)) {
			*pp = d->next;
			free(d->name);
			free(d);
			break;
		}
	now(&dir->st.st_mtim);
	dir->st.st_ctim = dir->st.st_mtim;
}

static void reply_entry_locked(struct rf_req *req, struct mf *m, uint64_t ino)
{
	struct rf_entry e = { .ino = ino, .attr_timeout = 1, .entry_timeout = 1 };
	struct mf_node *n = node(m, ino);

	n->nlookup++;
	e.attr = n->st;
	pthread_mutex_unlock(&m->lock);
	rf_reply_entry(req, &e);
}

static int mf_init(const struct rf_init_args *a, void **userdata)
{
	struct mf *m = calloc(1, sizeof(*m));
	const char *s;

	if (!m)
		return ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->limit = 256u << 20;
	s = strstr(a->options, "size=");
	if (s) {
		char *end;
		unsigned long long v = strtoull(s + 5, &end, 10);

		if (*end == 'K' || *end == 'k')
			v <<= 10;
		else if (*end == 'M' || *end == 'm')
			v <<= 20;
		else if (*end == 'G' || *end == 'g')
			v <<= 30;
		m->limit = (size_t)v;
	}
	if (new_node(m, S_IFDIR | 0755, NULL) != RF_ROOT_ID)
		return ENOMEM;
	m->nodes[0]->nlookup = 1;
	*userdata = m;
	return 0;
}

static void mf_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct mf *m = MF(req);
	struct mf_node *p;
	struct mf_dirent *d;

	pthread_mutex_lock(&m->lock);
	p = node(m, parent);
	if (!p || !S_ISDIR(p->st.st_mode) || !(d = find(p, name))) {
		pthread_mutex_unlock(&m->lock);
		rf_reply_err(req, p ? ENOENT : ESTALE);
		return;
	}
	reply_entry_locked(req, m, d->ino);
}

static void mf_forget(void *userdata, uint64_t ino, uint64_t nlookup)
{
	struct mf *m = userdata;
	struct mf_node *n;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (n) {
		n->nlookup = nlookup >= n->nlookup ? 0 : n->nlookup - nlookup;
		maybe_free(m, ino);
	}
	pthread_mutex_unlock(&m->lock);
}

static void mf_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct stat st;

	(void)fh;
	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (n)
		st = n->st;
	pthread_mutex_unlock(&m->lock);
	if (!n)
		rf_reply_err(req, ESTALE);
	else
		rf_reply_attr(req, &st, 1);
}

static int resize(struct mf *m, struct mf_node *n, size_t size)
{
	if (size > n->cap) {
		size_t cap = n->cap ? n->cap : 4096;
		char *d;

		while (cap < size)
			cap *= 2;
		if (m->used + (cap - n->cap) > m->limit)
			return ENOSPC;
		d = realloc(n->data, cap);
		if (!d)
			return ENOSPC;
		memset(d + n->cap, 0, cap - n->cap);
		m->used += cap - n->cap;
		n->data = d;
		n->cap = cap;
	}
	if (size < (size_t)n->st.st_size)
		memset(n->data + size, 0, (size_t)n->st.st_size - size);
	n->st.st_size = (off_t)size;
	n->st.st_blocks = (blkcnt_t)((size + 511) / 512);
	return 0;
}

static void mf_setattr(struct rf_req *req, uint64_t ino, const struct rf_setattr *sa)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct stat st;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (!n) {
		err = ESTALE;
		goto out;
	}
	if (sa->valid & RF_SET_SIZE) {
		if (!S_ISREG(n->st.st_mode)) {
			err = EISDIR;
			goto out;
		}
		err = resize(m, n, (size_t)sa->size);
		if (err)
			goto out;
		now(&n->st.st_mtim);
	}
	if (sa->valid & RF_SET_MODE)
		n->st.st_mode = (n->st.st_mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & RF_SET_UID)
		n->st.st_uid = sa->uid;
	if (sa->valid & RF_SET_GID)
		n->st.st_gid = sa->gid;
	if (sa->valid & RF_SET_ATIME) {
		if (sa->valid & RF_SET_ATIME_NOW)
			now(&n->st.st_atim);
		else
			n->st.st_atim = sa->atime;
	}
	if (sa->valid & RF_SET_MTIME) {
		if (sa->valid & RF_SET_MTIME_NOW)
			now(&n->st.st_mtim);
		else
			n->st.st_mtim = sa->mtime;
	}
	if (rf_req_kill_suidgid(req) ||
	    ((sa->valid & (RF_SET_UID | RF_SET_GID)) && !S_ISDIR(n->st.st_mode)))
		n->st.st_mode = rf_mode_killpriv(n->st.st_mode);
	now(&n->st.st_ctim);
	st = n->st;
out:
	pthread_mutex_unlock(&m->lock);
	if (err)
		rf_reply_err(req, err);
	else
		rf_reply_attr(req, &st, 1);
}

static void mf_readlink(struct rf_req *req, uint64_t ino)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	char buf[PATH_MAX];

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (n && S_ISLNK(n->st.st_mode))
		snprintf(buf, sizeof(buf), "%s", n->data);
	pthread_mutex_unlock(&m->lock);
	if (!n || !S_ISLNK(n->st.st_mode))
		rf_reply_err(req, EINVAL);
	else
		rf_reply_readlink(req, buf);
}

/* Create a node named @name in @parent; replies to @req. */
static void make(struct rf_req *req, uint64_t parent, const char *name, mode_t mode, dev_t rdev,
		 const char *target, uint64_t *out_ino)
{
	struct mf *m = MF(req);
	struct mf_node *p, *n;
	uint64_t ino;
	int err;

	pthread_mutex_lock(&m->lock);
	p = node(m, parent);
	err = !p ? ESTALE : !S_ISDIR(p->st.st_mode) ? ENOTDIR : find(p, name) ? EEXIST : 0;
	if (!err && strlen(name) > NAME_MAX)
		err = ENAMETOOLONG;
	if (err)
		goto fail;
	ino = new_node(m, mode, rf_req_ctx(req));
	if (!ino) {
		err = ENOMEM;
		goto fail;
	}
	n = node(m, ino);
	if (S_ISCHR(mode) || S_ISBLK(mode))
		n->st.st_rdev = rdev;
	if (target) {
		n->data = strdup(target);
		n->st.st_size = (off_t)strlen(target);
	}
	if (S_ISGID & p->st.st_mode) {
		n->st.st_gid = p->st.st_gid;
		if (S_ISDIR(mode))
			n->st.st_mode |= S_ISGID;
	}
	err = add_entry(p, name, ino);
	if (err) {
		n->st.st_nlink = 0;
		maybe_free(m, ino);
		goto fail;
	}
	if (S_ISDIR(mode))
		p->st.st_nlink++;
	if (out_ino) {
		*out_ino = ino;
		n->nopen++;
	}
	reply_entry_locked(req, m, ino);
	return;
fail:
	pthread_mutex_unlock(&m->lock);
	rf_reply_err(req, err);
}

static void mf_mknod(struct rf_req *req, uint64_t parent, const char *name, mode_t mode, dev_t rdev)
{
	/* device nodes too: inert on the mount (nodev), and the kernel has
	 * checked that the caller may make one (CAP_MKNOD, but for a 0:0
	 * character device: an overlayfs whiteout) */
	if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode) && !S_ISCHR(mode) &&
	    !S_ISBLK(mode)) {
		rf_reply_err(req, EINVAL);
		return;
	}
	make(req, parent, name, mode, rdev, NULL, NULL);
}

static void mf_mkdir(struct rf_req *req, uint64_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL, NULL);
}

static void mf_symlink(struct rf_req *req, const char *target, uint64_t parent, const char *name)
{
	make(req, parent, name, S_IFLNK | 0777, 0, target, NULL);
}

static void mf_create(struct rf_req *req, uint64_t parent, const char *name, mode_t mode, int flags)
{
	struct mf *m = MF(req);
	struct rf_entry e = { .attr_timeout = 1, .entry_timeout = 1 };
	struct mf_node *p, *n;
	uint64_t ino;
	int err;

	(void)flags;
	pthread_mutex_lock(&m->lock);
	p = node(m, parent);
	err = !p ? ESTALE : find(p, name) ? EEXIST : strlen(name) > NAME_MAX ? ENAMETOOLONG : 0;
	if (err)
		goto fail;
	ino = new_node(m, S_IFREG | (mode & 07777), rf_req_ctx(req));
	if (!ino || (err = add_entry(p, name, ino))) {
		err = ENOMEM;
		goto fail;
	}
	n = node(m, ino);
	if (p->st.st_mode & S_ISGID)
		n->st.st_gid = p->st.st_gid;
	n->nlookup++;
	n->nopen++;
	e.ino = ino;
	e.attr = n->st;
	pthread_mutex_unlock(&m->lock);
	rf_reply_create(req, &e, ino, RF_OPEN_NOFLUSH); /* its flush has nothing to say */
	return;
fail:
	pthread_mutex_unlock(&m->lock);
	rf_reply_err(req, err);
}

static int unlink_locked(struct mf *m, uint64_t parent, const char *name, int dir)
{
	struct mf_node *p = node(m, parent), *n;
	struct mf_dirent *d;

	if (!p)
		return ESTALE;
	d = find(p, name);
	if (!d)
		return ENOENT;
	n = node(m, d->ino);
	if (dir && !S_ISDIR(n->st.st_mode))
		return ENOTDIR;
	if (!dir && S_ISDIR(n->st.st_mode))
		return EISDIR;
	if (dir && n->entries)
		return ENOTEMPTY;
	if (dir) {
		n->st.st_nlink = 0;
		p->st.st_nlink--;
	} else {
		n->st.st_nlink--;
	}
	now(&n->st.st_ctim);
	{
		uint64_t ino = d->ino;

		del_entry(p, name);
		maybe_free(m, ino);
	}
	return 0;
}

static void mf_unlink(struct rf_req *req, uint64_t parent, const char *name)
{
	struct mf *m = MF(req);
	int err;

	pthread_mutex_lock(&m->lock);
	err = unlink_locked(m, parent, name, 0);
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_ok(req);
}

static void mf_rmdir(struct rf_req *req, uint64_t parent, const char *name)
{
	struct mf *m = MF(req);
	int err;

	pthread_mutex_lock(&m->lock);
	err = unlink_locked(m, parent, name, 1);
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_ok(req);
}

static void mf_rename(struct rf_req *req, uint64_t parent, const char *name, uint64_t newparent,
		      const char *newname, unsigned int flags)
{
	struct mf *m = MF(req);
	struct mf_node *p, *np;
	struct mf_dirent *d, *nd;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	p = node(m, parent);
	np = node(m, newparent);
	if (!p || !np) {
		err = ESTALE;
		goto out;
	}
	d = find(p, name);
	nd = find(np, newname);
	if (!d) {
		err = ENOENT;
		goto out;
	}
	if (flags & RENAME_EXCHANGE) {
		uint64_t t;

		if (!nd) {
			err = ENOENT;
			goto out;
		}
		t = d->ino;
		d->ino = nd->ino;
		nd->ino = t;
		goto out;
	}
	if (nd && (flags & RENAME_NOREPLACE)) {
		err = EEXIST;
		goto out;
	}
	if (flags & ~(unsigned int)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		err = EINVAL;
		goto out;
	}
	if (nd == d)
		goto out;
	if (nd) {
		struct mf_node *src = node(m, d->ino), *dst = node(m, nd->ino);

		if (S_ISDIR(src->st.st_mode) != S_ISDIR(dst->st.st_mode)) {
			err = S_ISDIR(dst->st.st_mode) ? EISDIR : ENOTDIR;
			goto out;
		}
		err = unlink_locked(m, newparent, newname, S_ISDIR(dst->st.st_mode));
		if (err)
			goto out;
	}
	{
		uint64_t ino = d->ino;
		struct mf_node *n = node(m, ino);

		err = add_entry(np, newname, ino);
		if (err)
			goto out;
		del_entry(p, name);
		if (S_ISDIR(n->st.st_mode) && p != np) {
			p->st.st_nlink--;
			np->st.st_nlink++;
		}
		now(&n->st.st_ctim);
	}
out:
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_ok(req);
}

static void mf_link(struct rf_req *req, uint64_t ino, uint64_t newparent, const char *newname)
{
	struct mf *m = MF(req);
	struct mf_node *n, *np;
	int err;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	np = node(m, newparent);
	err = !n || !np ? ESTALE : S_ISDIR(n->st.st_mode) ? EPERM : find(np, newname) ? EEXIST : 0;
	if (!err)
		err = add_entry(np, newname, ino);
	if (err) {
		pthread_mutex_unlock(&m->lock);
		rf_reply_err(req, err);
		return;
	}
	n->st.st_nlink++;
	now(&n->st.st_ctim);
	reply_entry_locked(req, m, ino);
}

static void mf_open(struct rf_req *req, uint64_t ino, int flags)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (!n)
		err = ESTALE;
	else if (S_ISDIR(n->st.st_mode) && (flags & O_ACCMODE) != O_RDONLY)
		err = EISDIR;
	else {
		n->nopen++;
		if ((flags & O_TRUNC) && S_ISREG(n->st.st_mode))
			resize(m, n, 0);
		if (rf_req_kill_suidgid(req))
			n->st.st_mode = rf_mode_killpriv(n->st.st_mode);
	}
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_open(req, ino, RF_OPEN_NOFLUSH);
}

static void mf_release(struct rf_req *req, uint64_t ino, uint64_t fh, int flags)
{
	struct mf *m = MF(req);
	struct mf_node *n;

	(void)fh;
	(void)flags;
	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (n && n->nopen) {
		n->nopen--;
		maybe_free(m, ino);
	}
	pthread_mutex_unlock(&m->lock);
	rf_reply_ok(req);
}

static void mf_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct mf *m = MF(req);
	struct mf_node *n;

	(void)fh;
	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (!n) {
		pthread_mutex_unlock(&m->lock);
		rf_reply_err(req, ESTALE);
		return;
	}
	if (off >= n->st.st_size)
		size = 0;
	else if ((off_t)size > n->st.st_size - off)
		size = (size_t)(n->st.st_size - off);
	/* copy under the lock: a concurrent write may move the buffer */
	rf_reply_data(req, size ? n->data + off : NULL, size);
	pthread_mutex_unlock(&m->lock);
}

static void mf_write(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, const void *data,
		     size_t size)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	int err = 0;

	(void)fh;
	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (!n)
		err = ESTALE;
	else if ((size_t)off + size > (size_t)n->st.st_size)
		err = resize(m, n, (size_t)off + size);
	if (!err) {
		memcpy(n->data + off, data, size);
		if (rf_req_kill_suidgid(req))
			n->st.st_mode = rf_mode_killpriv(n->st.st_mode);
		now(&n->st.st_mtim);
		n->st.st_ctim = n->st.st_mtim;
	}
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_write(req, size);
}

static void mf_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct mf_dirent *d;
	struct stat st;
	off_t i = 0;

	(void)fh;
	(void)size;
	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (!n || !S_ISDIR(n->st.st_mode)) {
		pthread_mutex_unlock(&m->lock);
		rf_reply_err(req, n ? ENOTDIR : ESTALE);
		return;
	}
	memset(&st, 0, sizeof(st));
	if (off == 0) {
		st.st_ino = ino;
		st.st_mode = S_IFDIR;
		if (rf_dirbuf_add(req, ".", &st, 1) < 0)
			goto done;
		off = 1;
	}
	if (off == 1) {
		if (rf_dirbuf_add(req, "..", &st, 2) < 0)
			goto done;
		off = 2;
	}
	for (d = n->entries, i = 2; d; d = d->next, i++) {
		if (i < off)
			continue;
		st.st_ino = d->ino;
		st.st_mode = node(m, d->ino)->st.st_mode;
		if (rf_dirbuf_add(req, d->name, &st, i + 1) < 0)
			break;
	}
done:
	pthread_mutex_unlock(&m->lock);
	rf_reply_dirbuf(req);
}

static void mf_statfs(struct rf_req *req, uint64_t ino)
{
	struct mf *m = MF(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	pthread_mutex_lock(&m->lock);
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = m->limit / 4096;
	sv.f_bfree = sv.f_bavail = (m->limit - m->used) / 4096;
	sv.f_files = 1u << 20;
	sv.f_ffree = sv.f_favail = (1u << 20) - m->nnodes;
	sv.f_namemax = NAME_MAX;
	pthread_mutex_unlock(&m->lock);
	rf_reply_statfs(req, &sv);
}

static struct mf_xattr **find_xattr(struct mf_node *n, const char *name)
{
	struct mf_xattr **pp;

	for (pp = &n->xattrs; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, name))
			return pp;
	return NULL;
}

static void mf_setxattr(struct rf_req *req, uint64_t ino, const char *name, const void *value,
			size_t size, int flags)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct mf_xattr **pp, *x;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	if (!n) {
		err = ESTALE;
		goto out;
	}
	pp = find_xattr(n, name);
	if ((flags & XATTR_CREATE) && pp) {
		err = EEXIST;
		goto out;
	}
	if ((flags & XATTR_REPLACE) && !pp) {
		err = ENODATA;
		goto out;
	}
	x = pp ? *pp : calloc(1, sizeof(*x));
	if (!x || (!pp && !(x->name = strdup(name)))) {
		free(x);
		err = ENOMEM;
		goto out;
	}
	free(x->value);
	x->value = malloc(size ? size : 1);
	if (size)
		memcpy(x->value, value, size);
	x->size = size;
	if (!pp) {
		x->next = n->xattrs;
		n->xattrs = x;
	}
out:
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_ok(req);
}

static void mf_getxattr(struct rf_req *req, uint64_t ino, const char *name, size_t size)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct mf_xattr **pp;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	pp = n ? find_xattr(n, name) : NULL;
	if (!pp)
		rf_reply_err(req, n ? ENODATA : ESTALE);
	else if (size == 0)
		rf_reply_xattr_size(req, (*pp)->size);
	else if (size < (*pp)->size)
		rf_reply_err(req, ERANGE);
	else
		rf_reply_data(req, (*pp)->value, (*pp)->size);
	pthread_mutex_unlock(&m->lock);
}

static void mf_listxattr(struct rf_req *req, uint64_t ino, size_t size)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct mf_xattr *x;
	char buf[65536];
	size_t len = 0;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	for (x = n ? n->xattrs : NULL; x; x = x->next) {
		size_t l = strlen(x->name) + 1;

		if (len + l > sizeof(buf))
			break;
		memcpy(buf + len, x->name, l);
		len += l;
	}
	pthread_mutex_unlock(&m->lock);
	if (!n)
		rf_reply_err(req, ESTALE);
	else if (size == 0)
		rf_reply_xattr_size(req, len);
	else if (size < len)
		rf_reply_err(req, ERANGE);
	else
		rf_reply_data(req, buf, len);
}

static void mf_removexattr(struct rf_req *req, uint64_t ino, const char *name)
{
	struct mf *m = MF(req);
	struct mf_node *n;
	struct mf_xattr **pp, *x;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	n = node(m, ino);
	pp = n ? find_xattr(n, name) : NULL;
	if (!pp) {
		err = n ? ENODATA : ESTALE;
	} else {
		x = *pp;
		*pp = x->next;
		free(x->name);
		free(x->value);
		free(x);
	}
	pthread_mutex_unlock(&m->lock);
	err ? rf_reply_err(req, err) : rf_reply_ok(req);
}

static void mf_fsync(struct rf_req *req, uint64_t ino, uint64_t fh, int datasync)
{
	(void)ino;
	(void)fh;
	(void)datasync;
	rf_reply_ok(req);
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,
	.name = "memfs",
	.flags = RF_PLUGIN_KILLPRIV,
	.init = mf_init,
	.lookup = mf_lookup,
	.forget = mf_forget,
	.getattr = mf_getattr,
	.setattr = mf_setattr,
	.readlink = mf_readlink,
	.mknod = mf_mknod,
	.mkdir = mf_mkdir,
	.unlink = mf_unlink,
	.rmdir = mf_rmdir,
	.symlink = mf_symlink,
	.rename = mf_rename,
	.link = mf_link,
	.open = mf_open,
	.read = mf_read,
	.write = mf_write,
	.release = mf_release,
	.fsync = mf_fsync,
	.readdir = mf_readdir,
	.fsyncdir = mf_fsync,
	.statfs = mf_statfs,
	.setxattr = mf_setxattr,
	.getxattr = mf_getxattr,
	.listxattr = mf_listxattr,
	.removexattr = mf_removexattr,
	.create = mf_create,
};
