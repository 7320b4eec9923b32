// SPDX-License-Identifier: MIT
/*
 * memfs: an in-memory filesystem, for tests and demos without a backing
 * directory. One lock guards everything; that is plenty for tests.
 *
 * Options: size=BYTES (K/M/G suffixes) caps file data, default 256M.
 *
 * With the policy's state_size, the whole tree (nodes, names, data,
 * xattrs) lives in the mount's state, which outlives the worker and sits
 * at one address in every generation: the successor finds it as the dead
 * worker left it (heap.c-like code below: blocks with a size and a tag,
 * allocated by a bump pointer published with one store, freed by one
 * store of the tag). Every change links a new object in with one pointer
 * store after it is whole, and unlinks before it frees, so a worker killed
 * at any instruction leaves a tree whose every pointer is an object's.
 * The successor checks all of it anyway (mf_check: what is not a block
 * of ours, or points out of the heap, is cut off), frees what nothing
 * reaches, and counts links again. With restore_nodes, node ids the
 * kernel holds are restored by their inode number (stable here), open
 * files by reopening them.
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

/* What outlives the worker with state_size: at the state's start. */
struct mf_root {
	uint64_t magic;
	uint64_t version;
	uint64_t size; /* of the state */
	uint64_t top; /* the heap's end so far, an offset from the root */
	struct mf_node **nodes; /* index = ino - 1 */
	size_t nnodes;
};

#define MF_MAGIC 0x31746f6f7266666dULL /* "mffroot1" */
#define MF_VERSION 1

struct mf {
	pthread_mutex_t lock;
	struct mf_root *r; /* in the state, or in the worker's memory */
	struct mf_root own;
	size_t used, limit;
	int reaped; /* orphans a predecessor left were freed */
};

/* ---- the heap in the state (none: malloc) ---- */

#define BLK_USED 0x64657375ULL /* "used" */
#define BLK_FREE 0x65657266ULL /* "free" */
#define BLK_HDR 16u
#define BLK_SMALL 4096u /* blocks up to this size are reused by exact size */

struct blk {
	uint64_t size; /* the whole block, header included, a multiple of 16 */
	uint64_t tag;
};

static struct {
	char *base; /* the root; the heap follows it */
	char *start, *end;
	struct mf_root *r;
	/* free blocks, in this worker's memory: by exact size up to
	 * BLK_SMALL, then one list (first fit) */
	void *small[BLK_SMALL / 16 + 1];
	void *large;
} H;

static struct blk *blk_of(void *p)
{
	return (struct blk *)((char *)p - BLK_HDR);
}

static size_t blk_room(void *p)
{
	return blk_of(p)->size - BLK_HDR;
}

static void **free_list(uint64_t size)
{
	return size <= BLK_SMALL ? &H.small[size / 16] : &H.large;
}

static void blk_put_free(struct blk *b)
{
	void **l = free_list(b->size);

	__atomic_store_n(&b->tag, BLK_FREE, __ATOMIC_RELEASE);
	*(void **)(b + 1) = *l;
	*l = b + 1;
}

/* @n bytes, zeroed */
static void *mf_calloc(size_t n)
{
	uint64_t size;
	void **pp, *p;
	struct blk *b;

	if (!H.base)
		return calloc(1, n ? n : 1);
	size = (n + BLK_HDR + 15) & ~(uint64_t)15;
	if (n > (size_t)(H.end - H.start))
		return NULL;
	for (pp = free_list(size); (p = *pp); pp = (void **)p)
		if (blk_of(p)->size >= size && (size <= BLK_SMALL || blk_of(p)->size <= 2 * size))
			break;
	if (p) {
		*pp = *(void **)p;
		memset(p, 0, blk_room(p));
		__atomic_store_n(&blk_of(p)->tag, BLK_USED, __ATOMIC_RELEASE);
		return p;
	}
	b = (struct blk *)(H.base + H.r->top);
	if ((uint64_t)(H.end - (char *)b) < size)
		return NULL;
	b->size = size;
	b->tag = BLK_USED;
	memset(b + 1, 0, size - BLK_HDR);
	/* published by the top's one store */
	__atomic_store_n(&H.r->top, H.r->top + size, __ATOMIC_RELEASE);
	return b + 1;
}

static void mf_free(void *p)
{
	if (!H.base) {
		free(p);
		return;
	}
	if (p)
		blk_put_free(blk_of(p));
}

static char *mf_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mf_calloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

#define MF(req) ((struct mf *)rf_req_userdata(req))

static struct mf_node *raw_node(struct mf *m, uint64_t ino)
{
	if (ino == 0 || ino > m->r->nnodes)
		return NULL;
	return m->r->nodes[ino - 1];
}

static void maybe_free(struct mf *m, uint64_t ino);

/* A node for a request (called locked). The first frees what a
 * predecessor left that nothing names, holds open or looks up: by then
 * the kernel's ids and files are restored (restore_node, reopen). */
static struct mf_node *node(struct mf *m, uint64_t ino)
{
	if (!m->reaped) {
		size_t i;

		m->reaped = 1;
		for (i = 1; i < m->r->nnodes; i++)
			if (m->r->nodes[i])
				maybe_free(m, i + 1);
	}
	return raw_node(m, ino);
}

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

static uint64_t new_node(struct mf *m, mode_t mode, const struct rf_req_ctx *ctx)
{
	struct mf_node *n = mf_calloc(sizeof(*n));
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
	for (i = 0; i < m->r->nnodes; i++)
		if (!m->r->nodes[i])
			break;
	if (i == m->r->nnodes) {
		/* a new table, whole, then one store; nnodes follows (a reader
		 * takes the smaller of it and the table's room) */
		size_t nn_count = m->r->nnodes + 64 + m->r->nnodes / 2;
		struct mf_node **nn = mf_calloc(nn_count * sizeof(*nn)), **old = m->r->nodes;

		if (!nn) {
			mf_free(n);
			return 0;
		}
		if (old)
			memcpy(nn, old, m->r->nnodes * sizeof(*nn));
		__atomic_store_n(&m->r->nodes, nn, __ATOMIC_RELEASE);
		m->r->nnodes = nn_count;
		mf_free(old);
	}
	n->st.st_ino = i + 1;
	__atomic_store_n(&m->r->nodes[i], n, __ATOMIC_RELEASE);
	return i + 1;
}

static void maybe_free(struct mf *m, uint64_t ino)
{
	struct mf_node *n = raw_node(m, ino);
	struct mf_xattr *x, *xn;

	if (!n || ino == RF_ROOT_ID || n->nlookup || n->nopen || n->st.st_nlink)
		return;
	/* out of the table first: what is freed after is reached by nothing */
	__atomic_store_n(&m->r->nodes[ino - 1], NULL, __ATOMIC_RELEASE);
	for (x = n->xattrs; x; x = xn) {
		xn = x->next;
		mf_free(x->name);
		mf_free(x->value);
		mf_free(x);
	}
	if (S_ISREG(n->st.st_mode))
		m->used -= n->cap;
	mf_free(n->data);
	mf_free(n);
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
	struct mf_dirent *d = mf_calloc(sizeof(*d));

	if (!d || !(d->name = mf_strdup(name))) {
		mf_free(d);
		return ENOMEM;
	}
	d->ino = ino;
	d->next = dir->entries;
	__atomic_store_n(&dir->entries, d, __ATOMIC_RELEASE); /* whole: linked */
	now(&dir->st.st_mtim);
	dir->st.st_ctim = dir->st.st_mtim;
	return 0;
}

static void del_entry(struct mf_node *dir, const char *name)
{
	struct mf_dirent **pp, *d;

	for (pp = &dir->entries; (d = *pp); pp = &d->next)
		if (!strcmp(d->name, name)) {
			__atomic_store_n(pp, d->next, __ATOMIC_RELEASE); /* unlinked, then freed */
			mf_free(d->name);
			mf_free(d);
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

/* ---- a predecessor's tree, checked ---- */

struct chk {
	uint8_t *used, *mark; /* bitmaps: a block's payload starts here; reached */
	char *top;
};

static size_t bit(const void *p)
{
	return (size_t)((const char *)p - H.start) / 16;
}

static int is_set(const uint8_t *m, size_t b)
{
	return m[b / 8] & (1u << (b % 8));
}

/* @p is the payload of a used block of ours with room for @need bytes
 * that nothing else reached yet; then it is marked reached */
static int take(struct chk *c, const void *p, size_t need)
{
	size_t b;

	if (!p || ((uintptr_t)p & 15) || (const char *)p < H.start + BLK_HDR ||
	    (const char *)p >= c->top)
		return 0;
	b = bit(p);
	if (!is_set(c->used, b) || is_set(c->mark, b) || blk_room((void *)p) < need)
		return 0;
	c->mark[b / 8] |= (uint8_t)(1u << (b % 8));
	return 1;
}

static void untake(struct chk *c, const void *p)
{
	size_t b = bit(p);

	c->mark[b / 8] &= (uint8_t) ~(1u << (b % 8));
}

/* a NUL-terminated string in a block of ours */
static int take_str(struct chk *c, const char *p)
{
	if (!take(c, p, 1))
		return 0;
	if (!memchr(p, '\0', blk_room((void *)p))) {
		untake(c, p);
		return 0;
	}
	return 1;
}

static void check_node(struct chk *c, struct mf *m, struct mf_node *n)
{
	struct mf_dirent **dp, *d;
	struct mf_xattr **xp, *x;
	mode_t t = n->st.st_mode & S_IFMT;

	n->nlookup = 0;
	n->nopen = 0;
	if (n->data && !(t == S_IFLNK ? take_str(c, n->data) : take(c, n->data, 1))) {
		n->data = NULL;
		n->cap = 0;
	}
	if (n->data && n->cap > blk_room(n->data))
		n->cap = blk_room(n->data);
	if (!n->data)
		n->cap = 0;
	if (t == S_IFREG) {
		if ((size_t)n->st.st_size > n->cap || n->st.st_size < 0)
			n->st.st_size = (off_t)n->cap;
		m->used += n->cap;
	}
	if (t != S_IFDIR)
		n->entries = NULL;
	for (dp = &n->entries; (d = *dp);) {
		if (!take(c, d, sizeof(*d))) {
			*dp = NULL;
			break;
		}
		if (!take_str(c, d->name) || !d->name[0] || strchr(d->name, '/') || d->ino < 2 ||
		    d->ino > m->r->nnodes) {
			*dp = d->next;
			untake(c, d);
			continue;
		}
		dp = &d->next;
	}
	for (xp = &n->xattrs; (x = *xp);) {
		if (!take(c, x, sizeof(*x))) {
			*xp = NULL;
			break;
		}
		if (!take_str(c, x->name) || !take(c, x->value, x->size ? x->size : 1)) {
			*xp = x->next;
			untake(c, x);
			continue;
		}
		xp = &x->next;
	}
}

/* Check a predecessor's tree: every pointer a block of ours, reached
 * once; what is not is cut off. Count links again, free what nothing
 * reaches. 0, or -1 when there is no root to keep (then: a fresh tree). */
static int mf_check(struct mf *m)
{
	struct mf_root *r = m->r;
	size_t nb = (size_t)(H.end - H.start) / 16 + 1, i;
	struct chk c = { calloc(nb / 8 + 1, 1), calloc(nb / 8 + 1, 1), NULL };
	char *p;
	int ret = -1;

	if (!c.used || !c.mark)
		goto out;
	if (r->top < (uint64_t)(H.start - H.base) || r->top > r->size || (r->top & 15))
		goto out;
	c.top = H.base + r->top;
	/* the blocks, end to end; a header this code did not write ends them */
	for (p = H.start; p < c.top;) {
		struct blk *b = (struct blk *)p;

		if (b->size < 2 * BLK_HDR || (b->size & 15) || b->size > (uint64_t)(c.top - p) ||
		    (b->tag != BLK_USED && b->tag != BLK_FREE)) {
			r->top = (uint64_t)(p - H.base);
			c.top = p;
			break;
		}
		if (b->tag == BLK_USED)
			c.used[bit(b + 1) / 8] |= (uint8_t)(1u << (bit(b + 1) % 8));
		p += b->size;
	}
	if (!take(&c, r->nodes, sizeof(*r->nodes)))
		goto out;
	if (r->nnodes > blk_room(r->nodes) / sizeof(*r->nodes))
		r->nnodes = blk_room(r->nodes) / sizeof(*r->nodes);
	m->used = 0;
	for (i = 0; i < r->nnodes; i++) {
		struct mf_node *n = r->nodes[i];

		if (!n)
			continue;
		if (!take(&c, n, sizeof(*n))) {
			r->nodes[i] = NULL;
			continue;
		}
		n->st.st_ino = i + 1;
		check_node(&c, m, n);
	}
	if (!r->nodes[0] || !S_ISDIR(r->nodes[0]->st.st_mode))
		goto out;
	/* links, counted again: a name per dirent, a directory's ".." in its
	 * parent; a directory no dirent names (but the root) has none */
	for (i = 0; i < r->nnodes; i++)
		if (r->nodes[i])
			r->nodes[i]->st.st_nlink = 0;
	r->nodes[0]->st.st_nlink = 1;
	for (i = 0; i < r->nnodes; i++) {
		struct mf_node *n = r->nodes[i];
		struct mf_dirent **dp, *d;

		if (!n || !S_ISDIR(n->st.st_mode))
			continue;
		for (dp = &n->entries; (d = *dp);) {
			struct mf_node *t = r->nodes[d->ino - 1];

			if (!t) {
				*dp = d->next; /* a name of nothing */
				continue;
			}
			t->st.st_nlink++;
			if (S_ISDIR(t->st.st_mode))
				n->st.st_nlink++;
			dp = &d->next;
		}
	}
	for (i = 0; i < r->nnodes; i++)
		if (r->nodes[i] && S_ISDIR(r->nodes[i]->st.st_mode) && r->nodes[i]->st.st_nlink)
			r->nodes[i]->st.st_nlink++; /* "." */
	r->nodes[0]->nlookup = 1;
	/* what nothing reaches, and the free blocks: the free lists */
	memset(H.small, 0, sizeof(H.small));
	H.large = NULL;
	for (p = H.start; p < c.top; p += ((struct blk *)p)->size) {
		struct blk *b = (struct blk *)p;

		if (b->tag == BLK_FREE || !is_set(c.mark, bit(b + 1)))
			blk_put_free(b);
	}
	ret = 0;
out:
	free(c.used);
	free(c.mark);
	return ret;
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
	m->r = &m->own;
	m->reaped = 1;
	if (a->state && a->state_size >= (1u << 20)) {
		size_t hs = (sizeof(struct mf_root) + 15) & ~(size_t)15;
		struct mf_root *r = a->state;

		H.base = a->state;
		H.r = r;
		H.start = H.base + hs;
		H.end = H.base + a->state_size;
		m->r = r;
		if (m->limit > (size_t)(H.end - H.start))
			m->limit = (size_t)(H.end - H.start);
		if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == MF_MAGIC &&
		    r->version == MF_VERSION && r->size == a->state_size && mf_check(m) == 0) {
			m->reaped = 0; /* orphans go at the first request */
			*userdata = m;
			return 0;
		}
		/* nothing, or nothing to trust: a fresh tree, the magic last */
		__atomic_store_n(&r->magic, 0, __ATOMIC_RELEASE);
		memset(r, 0, sizeof(*r));
		memset(H.small, 0, sizeof(H.small));
		H.large = NULL;
		r->version = MF_VERSION;
		r->size = a->state_size;
		r->top = hs;
		m->used = 0;
	}
	if (new_node(m, S_IFDIR | 0755, NULL) != RF_ROOT_ID)
		return ENOMEM;
	m->r->nodes[0]->nlookup = 1;
	if (H.base)
		__atomic_store_n(&H.r->magic, MF_MAGIC, __ATOMIC_RELEASE);
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
		char *d, *old;

		while (cap < size)
			cap *= 2;
		if (m->used + (cap - n->cap) > m->limit)
			return ENOSPC;
		/* a new buffer, whole, then one store; the old one freed after */
		d = mf_calloc(cap);
		if (!d)
			return ENOSPC;
		if (n->data)
			memcpy(d, n->data, n->cap);
		old = n->data;
		__atomic_store_n(&n->data, d, __ATOMIC_RELEASE);
		m->used += cap - n->cap;
		n->cap = cap;
		mf_free(old);
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
		n->data = mf_strdup(target);
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
	sv.f_ffree = sv.f_favail = (1u << 20) - m->r->nnodes;
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
	{
		void *v = mf_calloc(size ? size : 1), *old;

		x = pp ? *pp : mf_calloc(sizeof(*x));
		if (!v || !x || (!pp && !(x->name = mf_strdup(name)))) {
			mf_free(v);
			if (!pp && x)
				mf_free(x);
			err = ENOMEM;
			goto out;
		}
		if (size)
			memcpy(v, value, size);
		/* the size first while a new value is at least as long; the
		 * pointer in one store */
		old = x->value;
		if (size > x->size) {
			__atomic_store_n(&x->value, v, __ATOMIC_RELEASE);
			x->size = size;
		} else {
			x->size = size;
			__atomic_store_n(&x->value, v, __ATOMIC_RELEASE);
		}
		mf_free(old);
		if (!pp) {
			x->next = n->xattrs;
			__atomic_store_n(&n->xattrs, x, __ATOMIC_RELEASE);
		}
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
		__atomic_store_n(pp, x->next, __ATOMIC_RELEASE);
		mf_free(x->name);
		mf_free(x->value);
		mf_free(x);
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

/* A dead worker's node, by its inode number (stable here) and type. */
static int mf_restore_node(void *userdata, const struct rf_restore_node *r, uint64_t *ino)
{
	struct mf *m = userdata;
	struct mf_node *n;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	n = raw_node(m, r->ino);
	if (!n || r->ino == RF_ROOT_ID || (n->st.st_mode & S_IFMT) != r->type)
		err = ESTALE;
	else
		n->nlookup += r->nlookup;
	pthread_mutex_unlock(&m->lock);
	if (!err)
		*ino = r->ino;
	return err;
}

/* A dead worker's open file: held open again (mf_open's handle). */
static int mf_reopen(void *userdata, uint64_t ino, int flags, int dir, uint64_t *fh)
{
	struct mf *m = userdata;
	struct mf_node *n;

	(void)flags;
	pthread_mutex_lock(&m->lock);
	n = raw_node(m, ino);
	if (n && !dir)
		n->nopen++;
	pthread_mutex_unlock(&m->lock);
	if (!n)
		return ESTALE;
	*fh = dir ? 0 : ino;
	return 0;
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
	.restore_node = mf_restore_node,
	.reopen = mf_reopen,
};
