// SPDX-License-Identifier: MIT
/*
 * Node ids and open files that outlive a worker (restore.h).
 *
 * The tables are written by this generation only and read back by the
 * next, which trusts nothing in them: each key is checked for its size, a
 * name for being one component, a parent for being a node restored before
 * it (so a cycle or a chain to nowhere restores nothing), and an id for
 * carrying another generation than its own. What fails is dropped and
 * answers ESTALE or EIO, as a dead generation's ids did before the table.
 *
 * Counting follows the kernel's: one per entry reply, counted before the
 * reply is committed, and FORGET subtracts. A worker killed between the
 * two can only leave a count too high (a record kept too long), never one
 * the kernel still holds dropped.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idmap.h"
#include "log.h"
#include "nodetab.h"
#include "restore.h"
#include "worker.h"

#define RK_NODE 1
#define RK_FILE 2
/* opens of one handle a successor reopens, at most: more is a table no
 * worker wrote */
#define RF_REOPEN_MAX 65536

/* a node's key: its directory's kernel id, st_ino, type, then the name
 * (namelen 0: it has none, unlinked or replaced; restore_node gets "",
 * and only a plugin that finds nodes by st_ino restores it) */
struct rkey_node {
	uint64_t parent;
	uint64_t ino;
	uint32_t type;
	uint32_t namelen;
	char name[NAME_MAX];
};

/* an open file's key: its node's kernel id and open flags */
struct rkey_file {
	uint64_t node;
	uint32_t flags;
	uint32_t dir;
};

#define NODE_KEY_LEN(namelen) (offsetof(struct rkey_node, name) + (namelen))

_Static_assert(sizeof(struct rkey_node) <= RF_RESTORE_KEY_MAX, "keys fit the table");

struct rf_restore {
	struct rf_worker *w;
	struct rf_nodetab nodes;
	struct rf_nodetab files;
	pthread_mutex_t lock; /* the maps, and each count with its record */
	struct rf_idmap fwd; /* a dead generation's node id -> plugin id */
	struct rf_idmap rev; /* plugin id -> that node id */
	struct rf_idmap fh; /* a dead generation's file handle -> plugin's */
	struct rf_idmap names; /* name_hash(parent, name) -> node id */
	atomic_bool warned_full;
};

static uint64_t name_hash(uint64_t parent, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (parent * 0x9e3779b97f4a7c15ULL);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 31;
	return h ? h : 1;
}

static bool name_ok(const char *name, size_t len)
{
	return len > 0 && len <= NAME_MAX && !memchr(name, '/', len) && !memchr(name, '\0', len) &&
	       !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* A record the table has no room for: not restorable, said once (counted
 * by the keeper: rf_side.count). */
static void full(struct rf_restore *rs, const char *what)
{
	rs->w->side->count(rs->w, RF_CNT_RESTORE_FULL, 1, 0, 0);
	if (!atomic_exchange(&rs->warned_full, true))
		log_warnx("restore table full (restore_nodes = %u): %s past it will not survive "
			  "the worker",
			  rs->w->cfg.restore_nodes, what);
}

/* The node @kid's key, or -ENOENT. Called locked. */
static int node_key(struct rf_restore *rs, uint64_t kid, struct rkey_node *k)
{
	uint32_t kind, len;
	int r;

	memset(k, 0, sizeof(*k));
	r = rf_nodetab_get(&rs->nodes, kid, &kind, k, sizeof(*k), &len, NULL);
	if (r < 0)
		return r;
	if (kind != RK_NODE || len < NODE_KEY_LEN(0) || k->namelen != len - NODE_KEY_LEN(0))
		return -ENOENT;
	return 0;
}

/* Forget @kid's name in the index if it is the one there. Called locked. */
static void unname(struct rf_restore *rs, uint64_t kid, const struct rkey_node *k)
{
	uint64_t h, at;

	if (!k->namelen)
		return;
	h = name_hash(k->parent, k->name, k->namelen);
	if (rf_idmap_get(&rs->names, h, &at) && at == kid)
		rf_idmap_del(&rs->names, h);
}

/* Index @kid under its name @k, if it has one. Called locked. */
static void index_name(struct rf_restore *rs, uint64_t kid, const struct rkey_node *k)
{
	if (k->namelen)
		rf_idmap_set(&rs->names, name_hash(k->parent, k->name, k->namelen), kid);
}

/* Give @kid the key @k (its name indexed). Called locked. */
static int set_key(struct rf_restore *rs, uint64_t kid, const struct rkey_node *k)
{
	int r = rf_nodetab_put(&rs->nodes, kid, RK_NODE, k, (uint32_t)NODE_KEY_LEN(k->namelen));

	if (r == 0)
		index_name(rs, kid, k);
	return r;
}

/* The node named @name in @parent, per the index and its record. */
static uint64_t named(struct rf_restore *rs, uint64_t parent, const char *name, struct rkey_node *k)
{
	size_t len = strlen(name);
	uint64_t kid;

	if (!name_ok(name, len) || !rf_idmap_get(&rs->names, name_hash(parent, name, len), &kid))
		return 0;
	if (node_key(rs, kid, k) < 0 || k->parent != parent || k->namelen != len ||
	    memcmp(k->name, name, len) != 0)
		return 0;
	return kid;
}

uint64_t rf_restore_entry(struct rf_req *req, uint64_t pid, const char *name, const struct stat *st)
{
	struct rf_worker *w = req->q->w;
	struct rf_restore *rs = w->restore;
	struct rkey_node k, old;
	uint64_t kid;
	size_t len = name ? strlen(name) : 0;
	int r;

	if (!rs || pid == 0 || pid == RF_ROOT_ID)
		return rf_id_out(w, pid);
	if (pid > RF_ID_MASK)
		return 0;
	memset(&k, 0, sizeof(k));
	k.parent = req->kid;
	k.ino = (uint64_t)st->st_ino;
	k.type = (uint32_t)(st->st_mode & S_IFMT);
	if (name && name_ok(name, len)) {
		k.namelen = (uint32_t)len;
		memcpy(k.name, name, len);
	}
	pthread_mutex_lock(&rs->lock);
	if (!rf_idmap_get(&rs->rev, pid, &kid))
		kid = w->tag | pid;
	r = node_key(rs, kid, &old);
	if (r < 0 || old.parent != k.parent || old.ino != k.ino || old.type != k.type ||
	    old.namelen != k.namelen || memcmp(old.name, k.name, k.namelen) != 0) {
		if (r == 0)
			unname(rs, kid, &old);
		r = set_key(rs, kid, &k);
	}
	if (r == 0)
		r = rf_nodetab_count_add(&rs->nodes, kid, 1, NULL);
	pthread_mutex_unlock(&rs->lock);
	if (r < 0)
		full(rs, "node ids");
	return kid;
}

void rf_restore_opened(struct rf_req *req, uint64_t kid, uint64_t kfh)
{
	struct rf_restore *rs = req->q->w->restore;
	struct rkey_file k = { .node = kid };
	uint32_t op = req->in.opcode;
	int r;

	if (!rs)
		return;
	if (op == FUSE_CREATE)
		k.flags = ((const struct fuse_create_in *)req->arg0)->flags;
	else
		k.flags = ((const struct fuse_open_in *)req->arg0)->flags;
	/* a reopen must never create or truncate */
	k.flags &= ~(uint32_t)(O_CREAT | O_EXCL | O_TRUNC);
	k.dir = op == FUSE_OPENDIR;
	/* counted: a plugin may hand one handle out to several opens (memfs
	 * answers with the inode, a plugin without opendir with 0) */
	pthread_mutex_lock(&rs->lock);
	r = rf_nodetab_put(&rs->files, kfh, RK_FILE, &k, sizeof(k));
	if (r == 0)
		r = rf_nodetab_count_add(&rs->files, kfh, 1, NULL);
	pthread_mutex_unlock(&rs->lock);
	if (r < 0)
		full(rs, "open files");
}

/* @key in the map at @off in w->restore (fwd or fh), locked */
static bool mapped(struct rf_worker *w, size_t off, uint64_t key, uint64_t *val)
{
	bool ok;

	if (!w->restore)
		return false;
	pthread_mutex_lock(&w->restore->lock);
	ok = rf_idmap_get((struct rf_idmap *)((char *)w->restore + off), key, val);
	pthread_mutex_unlock(&w->restore->lock);
	return ok;
}

bool rf_restore_id_in(struct rf_worker *w, uint64_t kid, uint64_t *pid)
{
	return mapped(w, offsetof(struct rf_restore, fwd), kid, pid);
}

bool rf_restore_fh_in(struct rf_worker *w, uint64_t kfh, uint64_t *fh)
{
	return mapped(w, offsetof(struct rf_restore, fh), kfh, fh);
}

uint64_t rf_restore_forget(struct rf_worker *w, uint64_t kid, uint64_t n)
{
	struct rf_restore *rs = w->restore;
	uint64_t pid = 0, now;
	struct rkey_node k;

	if (!rs)
		return rf_id_in(w, kid, &pid) == 0 ? pid : 0;
	pthread_mutex_lock(&rs->lock);
	if (rf_id_in(w, kid, &pid) < 0 && !rf_idmap_get(&rs->fwd, kid, &pid))
		pid = 0;
	if (node_key(rs, kid, &k) == 0 &&
	    rf_nodetab_count_add(&rs->nodes, kid, -(int64_t)(n > INT64_MAX ? INT64_MAX : n),
				 &now) == 0 &&
	    now == 0) {
		uint64_t back;

		unname(rs, kid, &k);
		rf_nodetab_del(&rs->nodes, kid);
		if (rf_idmap_del(&rs->fwd, kid) && rf_idmap_get(&rs->rev, pid, &back) &&
		    back == kid)
			rf_idmap_del(&rs->rev, pid);
	}
	pthread_mutex_unlock(&rs->lock);
	return pid;
}

void rf_restore_release(struct rf_worker *w, uint64_t kfh)
{
	struct rf_restore *rs = w->restore;

	uint64_t now = 0;

	if (!rs)
		return;
	pthread_mutex_lock(&rs->lock);
	if (rf_nodetab_count_add(&rs->files, kfh, -1, &now) < 0 || now == 0) {
		rf_nodetab_del(&rs->files, kfh);
		rf_idmap_del(&rs->fh, kfh);
	}
	pthread_mutex_unlock(&rs->lock);
}

/* Give @kid the name @name in @parent (NULL: none). Called locked. */
static void rename_to(struct rf_restore *rs, uint64_t kid, struct rkey_node *k, uint64_t parent,
		      const char *name)
{
	unname(rs, kid, k);
	k->parent = parent;
	k->namelen = 0;
	if (name && name_ok(name, strlen(name))) {
		k->namelen = (uint32_t)strlen(name);
		memcpy(k->name, name, k->namelen);
	}
	set_key(rs, kid, k);
}

void rf_restore_moved(struct rf_req *req)
{
	struct rf_restore *rs = req->q->w->restore;
	struct rkey_node ks, kd;
	uint64_t src, dst;

	if (!rs || !req->name)
		return;
	pthread_mutex_lock(&rs->lock);
	src = named(rs, req->kid, req->name, &ks);
	if (req->in.opcode == FUSE_UNLINK || req->in.opcode == FUSE_RMDIR) {
		if (src)
			rename_to(rs, src, &ks, ks.parent, NULL);
	} else if (req->name2) {
		dst = named(rs, req->kid2, req->name2, &kd);
		if (dst && dst != src) {
			/* exchanged, or replaced (unlinked) */
			if (req->rename_flags & RENAME_EXCHANGE)
				rename_to(rs, dst, &kd, req->kid, req->name);
			else
				rename_to(rs, dst, &kd, kd.parent, NULL);
		}
		if (src)
			rename_to(rs, src, &ks, req->kid2, req->name2);
	}
	pthread_mutex_unlock(&rs->lock);
}

/* ---- the successor's start ---- */

/* one node record as read back, and how its restore went */
struct found {
	uint64_t kid;
	uint64_t count;
	uint64_t pid;
	int state; /* F_* */
	struct rkey_node k;
};

enum {
	F_TODO,
	F_BUSY,
	F_DONE,
	F_FAILED
};

struct walk {
	struct found *v;
	struct rf_idmap at; /* kid -> index in v */
	uint32_t n, cap;
	uint32_t said; /* failures logged */
	uint64_t tag;
};

static void collect(uint64_t id, uint32_t kind, uint64_t count, const void *key, uint32_t len,
		    void *arg)
{
	struct walk *wk = arg;
	struct found *f;

	if (wk->n == wk->cap)
		return;
	f = &wk->v[wk->n];
	memset(f, 0, sizeof(*f));
	f->kid = id;
	f->count = count;
	f->state = F_FAILED;
	if (kind == RK_NODE && len >= NODE_KEY_LEN(0) && len <= sizeof(f->k)) {
		memcpy(&f->k, key, len);
		/* a name, a count, a type, and an id of another generation
		 * that is no node the kernel calls by a fixed number */
		if (f->k.namelen == len - NODE_KEY_LEN(0) &&
		    (f->k.namelen == 0 || name_ok(f->k.name, f->k.namelen)) && count > 0 &&
		    (f->k.type & ~(uint32_t)S_IFMT) == 0 && f->k.type &&
		    (id & ~RF_ID_MASK) != wk->tag && (id & ~RF_ID_MASK) != 0)
			f->state = F_TODO;
	}
	/* (not qsort: glibc's asks sysinfo, which the sandbox refuses) */
	if (rf_idmap_set(&wk->at, id, wk->n) < 0)
		fatalx("restore: out of memory");
	wk->n++;
}

static struct found *lookup_found(struct walk *wk, uint64_t kid)
{
	uint64_t i;

	return rf_idmap_get(&wk->at, kid, &i) ? &wk->v[i] : NULL;
}

/* Restore @f: its parents first, then itself. No recursion: a stack of
 * the chain up to a node done (or the root), so a chain as long as the
 * table, or a cycle, costs nothing but its length. */
static void restore_chain(struct rf_restore *rs, struct walk *wk, struct found *f,
			  struct found **stack)
{
	const struct rf_plugin *p = rs->w->plugin;
	uint32_t depth = 0;

	while (f && f->state == F_TODO) {
		f->state = F_BUSY;
		stack[depth++] = f;
		f = f->k.parent == RF_ROOT_ID ? NULL : lookup_found(wk, f->k.parent);
		if (f && f->state == F_BUSY)
			f = NULL, stack[depth - 1]->k.parent = 0; /* a cycle: fails */
	}
	while (depth > 0) {
		struct found *c = stack[--depth];
		struct found *par = c->k.parent == RF_ROOT_ID ? NULL
							      : lookup_found(wk, c->k.parent);
		struct rf_restore_node r;
		char name[NAME_MAX + 1];
		int err;

		c->state = F_FAILED;
		if (c->k.parent != RF_ROOT_ID && (!par || par->state != F_DONE)) {
			if (wk->said++ < 5)
				log_info("restore: node 0x%llx: its directory 0x%llx was not "
					 "restored",
					 (unsigned long long)c->kid,
					 (unsigned long long)c->k.parent);
			continue;
		}
		memcpy(name, c->k.name, c->k.namelen);
		name[c->k.namelen] = '\0';
		memset(&r, 0, sizeof(r));
		r.parent = par ? par->pid : RF_ROOT_ID;
		r.name = name;
		r.ino = (ino_t)c->k.ino;
		r.type = (mode_t)c->k.type;
		r.nlookup = c->count;
		c->pid = 0;
		err = p->restore_node(rs->w->userdata, &r, &c->pid);
		if (err == 0 && (c->pid == 0 || c->pid == RF_ROOT_ID || c->pid > RF_ID_MASK)) {
			log_warnx("plugin: restore_node of %s gave id 0x%llx; not restored", name,
				  (unsigned long long)c->pid);
			err = EIO;
		}
		if (err == 0)
			c->state = F_DONE;
		else if (wk->said++ < 5)
			log_info("restore: '%s' (st_ino %llu, nlookup %llu) in node 0x%llx: %s",
				 name, (unsigned long long)c->k.ino, (unsigned long long)c->count,
				 (unsigned long long)c->k.parent, strerror(err));
	}
}

struct files_walk {
	struct rf_restore *rs;
	struct walk *nodes;
	uint32_t done, failed, stale;
	uint64_t *drop;
	uint32_t ndrop, cap;
};

static void reopen_one(uint64_t kfh, uint32_t kind, uint64_t count, const void *key, uint32_t len,
		       void *arg)
{
	struct files_walk *fw = arg;
	struct rf_restore *rs = fw->rs;
	const struct rf_plugin *p = rs->w->plugin;
	struct rkey_file k = { 0 };
	uint64_t pid = 0, fh = 0;
	struct found *n;
	uint64_t i;
	int err = ENOENT;

	/* once for each open the kernel holds of the handle */
	if (kind == RK_FILE && len == sizeof(k) && (kfh & ~RF_ID_MASK) != rs->w->tag &&
	    (kfh & ~RF_ID_MASK) != 0 && count > 0 && count <= RF_REOPEN_MAX) {
		memcpy(&k, key, sizeof(k));
		if (k.node != RF_ROOT_ID && !lookup_found(fw->nodes, k.node)) {
			/* an open file pins its inode: with the node forgotten,
			 * the kernel holds no such file (a RELEASE a dead
			 * worker took and never ran) */
			fw->stale++;
			if (fw->ndrop < fw->cap)
				fw->drop[fw->ndrop++] = kfh;
			return;
		}
		if (k.node == RF_ROOT_ID)
			pid = RF_ROOT_ID;
		else if ((n = lookup_found(fw->nodes, k.node)) && n->state == F_DONE)
			pid = n->pid;
		for (i = 0; i < count && pid && p->reopen &&
			    !(k.flags & (O_CREAT | O_EXCL | O_TRUNC)) && k.dir <= 1;
		     i++) {
			uint64_t again;

			err = p->reopen(rs->w->userdata, pid, (int)k.flags, (int)k.dir,
					i ? &again : &fh);
			if (err)
				break;
		}
		if (err == 0 && fh > RF_ID_MASK)
			err = EIO;
		if (err == 0 && rf_idmap_set(&rs->fh, kfh, fh) < 0)
			err = ENOMEM;
	}
	if (err == 0) {
		fw->done++;
		return;
	}
	if (fw->failed++ < 5)
		log_info("restore: open file 0x%llx (%llu opens) of node 0x%llx (%s): %s",
			 (unsigned long long)kfh, (unsigned long long)count,
			 (unsigned long long)k.node,
			 k.node == RF_ROOT_ID ? "the root"
			 : (n = lookup_found(fw->nodes, k.node)) && n->state == F_DONE
				 ? "restored"
				 : "not restored",
			 strerror(err));
	if (fw->ndrop < fw->cap)
		fw->drop[fw->ndrop++] = kfh;
}

static void restore_free(struct rf_restore *rs)
{
	if (!rs)
		return;
	rf_nodetab_close(&rs->nodes);
	rf_nodetab_close(&rs->files);
	rf_idmap_free(&rs->fwd);
	rf_idmap_free(&rs->rev);
	rf_idmap_free(&rs->fh);
	rf_idmap_free(&rs->names);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

void rf_restore_stop(struct rf_worker *w)
{
	restore_free(w->restore);
	w->restore = NULL;
}

static int open_tables(struct rf_restore *rs)
{
	struct rf_worker *w = rs->w;
	uint64_t nb = rf_restore_node_bytes(w->cfg.restore_nodes);
	char *mem = w->restore_mem;
	int a, b;

	if (w->cfg.restore_size != rf_restore_bytes(w->cfg.restore_nodes)) {
		log_warnx("CONFIG: a restore table of %llu bytes for %u records",
			  (unsigned long long)w->cfg.restore_size, w->cfg.restore_nodes);
		return -EINVAL;
	}
	a = rf_nodetab_open(&rs->nodes, mem, nb, RF_RESTORE_KEY_MAX);
	if (a < 0)
		return a;
	b = rf_nodetab_open(&rs->files, mem + nb, w->cfg.restore_size - nb, RF_RESTORE_KEY_MAX);
	if (b < 0) {
		rf_nodetab_close(&rs->nodes);
		return b;
	}
	if (w->cfg.generation > 0 && (a || b))
		log_warnx("restore table: none this build can read; nothing restored");
	return 0;
}

int rf_restore_start(struct rf_worker *w, char *why, size_t len)
{
	const struct rf_plugin *p = w->plugin;
	struct rf_restore *rs;
	struct walk wk = { 0 };
	struct files_walk fw = { 0 };
	struct found **stack = NULL;
	struct timespec t0, t1;
	uint32_t i, nodes_done = 0, nodes_failed;
	int r;

	if (!w->restore_mem)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		goto nomem;
	pthread_mutex_init(&rs->lock, NULL);
	if (rf_idmap_init(&rs->fwd, 0) < 0 || rf_idmap_init(&rs->rev, 0) < 0 ||
	    rf_idmap_init(&rs->fh, 0) < 0 || rf_idmap_init(&rs->names, 0) < 0)
		goto nomem;
	rs->w = w;
	r = open_tables(rs);
	if (r < 0) {
		log_warnx("restore table: %s; ids of earlier workers answer ESTALE", strerror(-r));
		restore_free(rs);
		return 0;
	}
	wk.tag = w->tag;
	wk.cap = rf_nodetab_count(&rs->nodes);
	wk.v = calloc(wk.cap ? wk.cap : 1, sizeof(*wk.v));
	stack = calloc(wk.cap ? wk.cap : 1, sizeof(*stack));
	if (!wk.v || !stack || rf_idmap_init(&wk.at, wk.cap) < 0)
		goto nomem;
	rf_nodetab_each(&rs->nodes, collect, &wk);
	if (!p->restore_node && wk.n)
		log_warnx("plugin %s cannot restore nodes (no restore_node): %u node ids of the "
			  "dead worker answer ESTALE",
			  p->name ? p->name : "?", wk.n);
	for (i = 0; p->restore_node && i < wk.n; i++)
		restore_chain(rs, &wk, &wk.v[i], stack);
	for (i = 0; i < wk.n; i++)
		nodes_done += wk.v[i].state == F_DONE;
	nodes_failed = wk.n - nodes_done;
	/* open files, of nodes restored (or the root) */
	fw.rs = rs;
	fw.nodes = &wk;
	fw.cap = rf_nodetab_count(&rs->files);
	fw.drop = calloc(fw.cap ? fw.cap : 1, sizeof(*fw.drop));
	if (!fw.drop)
		goto nomem;
	rf_nodetab_each(&rs->files, reopen_one, &fw);
	if (w->cfg.restore_strict && (nodes_failed || fw.failed)) {
		/* an upgrade: the old plugin comes back and restores them; the
		 * tables stay as they are */
		snprintf(why, len,
			 "restore: %u of %u node ids and %u of %u open files could not be "
			 "restored by this plugin%s",
			 nodes_failed, wk.n, fw.failed, fw.done + fw.failed,
			 p->restore_node ? "" : " (it has no restore_node)");
		r = -ESTALE;
		goto out;
	}
	for (i = 0; i < wk.n; i++) {
		struct found *f = &wk.v[i];

		if (f->state != F_DONE) {
			rf_nodetab_del(&rs->nodes, f->kid);
			continue;
		}
		if (rf_idmap_set(&rs->fwd, f->kid, f->pid) < 0)
			goto nomem;
		if (!rf_idmap_get(&rs->rev, f->pid, NULL) &&
		    rf_idmap_set(&rs->rev, f->pid, f->kid) < 0)
			goto nomem;
		index_name(rs, f->kid, &f->k);
	}
	for (i = 0; i < fw.ndrop; i++)
		rf_nodetab_del(&rs->files, fw.drop[i]);
	rs->w->side->count(rs->w, RF_CNT_RESTORED, nodes_done, fw.done,
			   (int32_t)(nodes_failed + fw.failed));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (wk.n || fw.done || fw.failed)
		log_info("restored %u node ids and %u open files of earlier workers in %.1f ms; "
			 "%u node ids and %u files could not be (ESTALE, EIO)",
			 nodes_done, fw.done,
			 (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
				 (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
			 nodes_failed, fw.failed);
	w->restore = rs;
	rs = NULL;
	r = 0;
out:
	free(fw.drop);
	free(stack);
	free(wk.v);
	rf_idmap_free(&wk.at);
	restore_free(rs);
	return r;
nomem:
	fatalx("restore: out of memory");
}
