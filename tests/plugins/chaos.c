// SPDX-License-Identifier: MIT
/*
 * chaos: a plugin that misbehaves at random, for tests/integration/t_chaos.sh.
 *
 * It serves a root with eight small files, and then, from a seed it logs:
 *  - answers a request wrongly now and then: another request's id (always
 *    even: an odd one is an interrupt's, on which the kernel WARNs; the
 *    keeper answers under the recorded id, which t_hostile2 checks), a body of a
 *    random length, a random node id, an errno out of range, two answers,
 *    none at all, an answer from another thread later, or an answer bearing
 *    the id of a FORGET (which has none);
 *  - from a thread of its own, sends the broker random bytes, random
 *    messages (with a descriptor now and then) and scribbles random words
 *    over the pool's control area.
 * Nearly each of these ends its worker; the broker replaces it and must
 * neither crash nor let the tenant beside it notice. The plugin knows the
 * worker's internals, as an attacker who reads the source would.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ringfence/plugin.h"
#include "testlog.h"
#include "worker.h"

#define NFILES 8
#define FILE_MAX 4096
#define STASH 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char data[NFILES][FILE_MAX];
static size_t size[NFILES];
static struct rf_req *stash[STASH]; /* answered later, by the chaos thread */
static struct rf_worker *worker; /* found through the first request */
static unsigned int seed0;
static __thread unsigned int seed;

static unsigned int rnd(void)
{
	if (!seed)
		seed = seed0 ^ (unsigned int)(uintptr_t)&seed;
	return (unsigned int)rand_r(&seed);
}

static uint64_t rnd64(void)
{
	return (uint64_t)rnd() << 42 ^ (uint64_t)rnd() << 21 ^ rnd();
}

static int chance(unsigned int per_mille)
{
	return rnd() % 1000 < per_mille;
}

/* a timed wait on a futex nobody wakes: the only sleep seccomp allows */
static void nap(long ms)
{
	static uint32_t never;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

static void fill(uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == RF_ROOT_ID) {
		st->st_mode = S_IFDIR | 0777;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
		pthread_mutex_lock(&lock);
		st->st_size = ino >= 2 && ino < 2 + NFILES ? (off_t)size[ino - 2] : 0;
		pthread_mutex_unlock(&lock);
	}
}

static void keep(struct rf_req *req)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < STASH && stash[i]; i++)
		;
	if (i < STASH)
		stash[i] = req;
	pthread_mutex_unlock(&lock);
	if (i == STASH)
		rf_reply_err(req, EBUSY);
}

/* The id of a FORGET the kernel sent (it sits in a /dev/fuse reader's
 * slot while the plugin's forget runs), 0 if none is to be had. */
static uint64_t forget_id;
/* options: "no_pool" (leave the pool alone), "answer_all" (never leave a
 * request unanswered), to tell apart what a hang comes from */
static int no_pool, answer_all;

/* Answer @req wrongly, or not at all, instead of properly: returns 1 if it
 * did. Each worker lives a few seconds on average under t_chaos's load. */
static int misbehave(struct rf_req *req)
{
	struct rf_entry e;
	char junk[256];

	if (!worker)
		worker = req->q->w;
	if (!chance(25))
		return 0;
	/* an answer the kernel refuses ends the worker (the framework gives
	 * up rather than leave the real request waiting): one kind in 16 */
	switch (rnd() % 16) {
	case 0: /* another request's id, even (see the top), or a FORGET's */
		if (chance(500) && __atomic_load_n(&forget_id, __ATOMIC_RELAXED))
			req->in.unique = __atomic_load_n(&forget_id, __ATOMIC_RELAXED);
		else
			req->in.unique += 2 * (1 + rnd() % 64);
		rf_reply_err(req, ENOENT);
		return 1;
	case 1: /* a body of any length for any request */
		memset(junk, (int)rnd(), sizeof(junk));
		rf_reply_data(req, junk, rnd() % sizeof(junk));
		return 1;
	case 2: /* an entry naming a node that never existed */
		memset(&e, 0, sizeof(e));
		e.ino = chance(500) ? rnd64() : rnd() % 1000;
		fill(2, &e.attr);
		e.attr.st_mode = (mode_t)rnd();
		e.attr_timeout = rnd() % 3;
		rf_reply_entry(req, &e);
		return 1;
	case 3: /* an errno the kernel does not take */
		rf_reply_err(req, chance(500) ? 512 + (int)(rnd() % 100000) : -(int)(rnd() % 600));
		return 1;
	case 4: /* twice */
		rf_reply_err(req, EIO);
		rf_reply_err(req, ENOENT);
		return 1;
	case 5: /* never: the watchdog's (request_timeout) */
		if (answer_all)
			return 0;
		return 1;
	case 6: /* later, from the chaos thread */
		keep(req);
		return 1;
	case 7: /* a zero-length answer to anything */
	case 8:
	case 9:
	case 10:
	case 11:
		rf_reply_ok(req);
		return 1;
	default: /* a body of any length, again */
		memset(junk, (int)rnd(), sizeof(junk));
		rf_reply_data(req, junk, rnd() % sizeof(junk));
		return 1;
	}
}

static void c_forget(void *ud, uint64_t ino, uint64_t nlookup)
{
	uint32_t q, e;

	(void)ud;
	(void)ino;
	(void)nlookup;
	if (!worker)
		return;
	for (q = 0; q < worker->nqueues; q++)
		for (e = 0; e < worker->queues[q].nreqs; e++) {
			const struct rf_req *r = &worker->queues[q].reqs[e];

			if (r->classic &&
			    (r->in.opcode == FUSE_FORGET || r->in.opcode == FUSE_BATCH_FORGET))
				__atomic_store_n(&forget_id, r->in.unique, __ATOMIC_RELAXED);
		}
}

static int file_of(uint64_t ino)
{
	return ino >= 2 && ino < 2 + NFILES ? (int)(ino - 2) : -1;
}

static void c_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct rf_entry e = { .attr_timeout = 0.5, .entry_timeout = 0.5 };
	int i;

	if (misbehave(req))
		return;
	if (parent != RF_ROOT_ID || name[0] != 'f' || name[1] < '0' || name[1] >= '0' + NFILES ||
	    name[2]) {
		rf_reply_err(req, ENOENT);
		return;
	}
	i = name[1] - '0';
	e.ino = 2 + (uint64_t)i;
	fill(e.ino, &e.attr);
	rf_reply_entry(req, &e);
}

static void c_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	if (misbehave(req))
		return;
	if (ino != RF_ROOT_ID && file_of(ino) < 0) {
		rf_reply_err(req, ENOENT);
		return;
	}
	fill(ino, &st);
	rf_reply_attr(req, &st, 0.5);
}

static void c_setattr(struct rf_req *req, uint64_t ino, const struct rf_setattr *sa)
{
	struct stat st;
	int i = file_of(ino);

	if (misbehave(req))
		return;
	if (i >= 0 && (sa->valid & RF_SET_SIZE)) {
		pthread_mutex_lock(&lock);
		size[i] = sa->size < FILE_MAX ? (size_t)sa->size : FILE_MAX;
		pthread_mutex_unlock(&lock);
	}
	fill(ino, &st);
	rf_reply_attr(req, &st, 0.5);
}

static void c_open(struct rf_req *req, uint64_t ino, int flags)
{
	(void)flags;
	if (misbehave(req))
		return;
	rf_reply_open(req, ino, 0);
}

static void c_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t n)
{
	char buf[FILE_MAX];
	size_t got = 0;
	int i = file_of(ino);

	(void)fh;
	if (misbehave(req))
		return;
	pthread_mutex_lock(&lock);
	if (i >= 0 && off >= 0 && (size_t)off < size[i]) {
		got = size[i] - (size_t)off < n ? size[i] - (size_t)off : n;
		memcpy(buf, data[i] + off, got);
	}
	pthread_mutex_unlock(&lock);
	rf_reply_data(req, buf, got);
}

static void c_write(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, const void *buf,
		    size_t n)
{
	int i = file_of(ino);

	(void)fh;
	if (misbehave(req))
		return;
	if (i < 0 || off < 0 || (size_t)off >= FILE_MAX) {
		rf_reply_err(req, EFBIG);
		return;
	}
	if (n > FILE_MAX - (size_t)off)
		n = FILE_MAX - (size_t)off;
	pthread_mutex_lock(&lock);
	memcpy(data[i] + off, buf, n);
	if ((size_t)off + n > size[i])
		size[i] = (size_t)off + n;
	pthread_mutex_unlock(&lock);
	rf_reply_write(req, n);
}

static void c_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t n)
{
	struct stat st;
	char name[4] = "f0";
	int i;

	(void)fh;
	(void)n;
	if (misbehave(req))
		return;
	if (ino != RF_ROOT_ID) {
		rf_reply_err(req, ENOTDIR);
		return;
	}
	for (i = (int)off; i < NFILES; i++) {
		name[1] = (char)('0' + i);
		fill(2 + (uint64_t)i, &st);
		if (rf_dirbuf_add(req, name, &st, i + 1) < 0)
			break;
	}
	rf_reply_dirbuf(req);
}

static void c_ok(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	(void)ino;
	(void)fh;
	if (!misbehave(req))
		rf_reply_ok(req);
}

static void c_release(struct rf_req *req, uint64_t ino, uint64_t fh, int flags)
{
	(void)flags;
	c_ok(req, ino, fh);
}

static void c_opendir(struct rf_req *req, uint64_t ino, int flags)
{
	c_open(req, ino, flags);
}

/* The thread that talks to the broker and scribbles on the pool. */
static void ipc_garbage(void)
{
	unsigned char buf[300];
	size_t i, n = rnd() % sizeof(buf);
	struct rf_msg_hdr *h = (void *)buf;
	int fd = 0;

	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)rnd();
	if (n >= sizeof(*h) && chance(500)) {
		/* a header that looks right, a body that may not */
		h->type = rnd() % (RF_MSG_TYPE_MAX + 2);
		h->len = chance(500) ? (uint32_t)(n - sizeof(*h)) : rnd();
		h->flags = chance(800) ? 0 : rnd();
	}
	if (chance(200))
		rf_fdpass_send(3, buf, n ? n : 1, &fd, 1);
	else if (write(3, buf, n) < 0)
		test_log("chaos: IPC write: %s", strerror(errno));
}

/* the pool's control area, found at init in /proc/self/maps (the memfd
 * mapping) and its header's ctl_size, as an attacker would */
static uint64_t *pool_ctl;
static size_t pool_words;

static void find_pool(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:ringfence-pool") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			struct rf_pool_ctl *ctl = (struct rf_pool_ctl *)lo;

			pool_ctl = (uint64_t *)ctl;
			pool_words = (ctl->ctl_size < hi - lo ? ctl->ctl_size : hi - lo) / 8;
			break;
		}
	fclose(f);
}

static void pool_scribble(void)
{
	uint64_t *w = pool_ctl;
	size_t n = pool_words;
	int i;

	if (!w || !n)
		return;
	for (i = 1 + (int)(rnd() % 64); i > 0; i--) {
		/* mostly the parts the broker reads first */
		size_t at = chance(300) ? rnd() % (sizeof(struct rf_pool_ctl) / sizeof(*w))
					: rnd() % n;

		w[at] = chance(500) ? rnd64() : w[at] + 1;
	}
}

static void answer_stash(void)
{
	struct rf_req *r[STASH];
	int i, n = 0;

	pthread_mutex_lock(&lock);
	for (i = 0; i < STASH; i++)
		if (stash[i] && chance(300)) {
			r[n++] = stash[i];
			stash[i] = NULL;
		}
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n; i++)
		if (chance(700) || !misbehave(r[i]))
			rf_reply_err(r[i], EAGAIN);
}

/* What this worker's chaos thread goes for, chosen at init: so that every
 * kind comes up in a run, whichever ends a worker first. */
enum {
	GO_POOL,
	GO_IPC,
	GO_REPLIES,
	GO_N
};
static unsigned int go;

static void *chaos(void *arg)
{
	unsigned int tick;

	(void)arg;
	for (tick = 0;; tick++) {
		nap(10 + rnd() % 40);
		answer_stash();
		/* in its own mode, from the tenth tick on, whatever else may
		 * have ended the worker by then */
		if (chance(go == GO_IPC && tick >= 10 ? 100 : 2))
			ipc_garbage();
		if (!no_pool && chance(go == GO_POOL && tick >= 10 ? 100 : 2))
			pool_scribble();
		if (chance(5))
			test_log("chaos: still here");
	}
	return NULL;
}

static int c_init(const struct rf_init_args *a, void **ud)
{
	struct timespec now;
	pthread_t th;
	int i;

	*ud = NULL;
	no_pool = strstr(a->options, "no_pool") != NULL;
	answer_all = strstr(a->options, "answer_all") != NULL;
	/* nanoseconds: a plugin host the keeper forks again (host_restart)
	 * has the same addresses, and may start within the same second */
	clock_gettime(CLOCK_MONOTONIC, &now);
	seed0 = (unsigned int)now.tv_sec ^ (unsigned int)now.tv_nsec ^ (unsigned int)(uintptr_t)&th;
	for (i = 0; i < NFILES; i++)
		size[i] = (size_t)snprintf(data[i], FILE_MAX, "file %d\n", i);
	find_pool();
	go = rnd() % GO_N;
	test_log("chaos: seed %u, going for %s", seed0,
		 go == GO_POOL	? "the pool"
		 : go == GO_IPC ? "the channel"
				: "replies");
	return pthread_create(&th, NULL, chaos, NULL);
}

const struct rf_plugin ringfence_plugin = {
	/* its files' modes never have setuid or setgid bits to clear */
	RF_PLUGIN_INIT,	      .name = "chaos",	    .flags = RF_PLUGIN_KILLPRIV,
	.init = c_init,	      .lookup = c_lookup,   .forget = c_forget,
	.getattr = c_getattr, .setattr = c_setattr, .open = c_open,
	.read = c_read,	      .write = c_write,	    .flush = c_ok,
	.release = c_release, .opendir = c_opendir, .readdir = c_readdir,
	.releasedir = c_ok,
};
