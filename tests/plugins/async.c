// SPDX-License-Identifier: MIT
/*
 * async: a test plugin that answers every READ from its own helper threads,
 * never from the worker's queue thread, to exercise asynchronous replies
 * (the framework must carry them back to the right ring).
 *
 * One read-only file, "pattern", of 16 MiB whose byte at offset i is
 * (i % 251); every other op is answered inline.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ringfence/plugin.h"

#define FILE_INO 2
#define FILE_SIZE (16u << 20)
#define HELPERS 3

struct job {
	struct rf_req *req;
	off_t off;
	size_t size;
	struct job *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct job *head, **tail = &head;
static int stopping;
static pthread_t helpers[HELPERS];

static void *helper(void *arg)
{
	static __thread char buf[1 << 20];

	(void)arg;
	for (;;) {
		struct job *j;
		size_t i;

		pthread_mutex_lock(&lock);
		while (!head && !stopping)
			pthread_cond_wait(&cond, &lock);
		if (!head) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		j = head;
		head = j->next;
		if (!head)
			tail = &head;
		pthread_mutex_unlock(&lock);
		for (i = 0; i < j->size; i++)
			buf[i] = (char)((j->off + (off_t)i) % 251);
		rf_reply_data(j->req, buf, j->size);
		free(j);
	}
}

static int as_init(const struct rf_init_args *a, void **ud)
{
	int i;

	(void)a;
	*ud = NULL;
	for (i = 0; i < HELPERS; i++)
		if (pthread_create(&helpers[i], NULL, helper, NULL))
			return EAGAIN;
	return 0;
}

static void as_destroy(void *ud)
{
	int i;

	(void)ud;
	pthread_mutex_lock(&lock);
	stopping = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < HELPERS; i++)
		pthread_join(helpers[i], NULL);
}

static void fill(uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_nlink = 1;
	if (ino == RF_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_size = FILE_SIZE;
	}
}

static void as_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct rf_entry e = { .ino = FILE_INO, .attr_timeout = 10, .entry_timeout = 10 };

	if (parent != RF_ROOT_ID || strcmp(name, "pattern")) {
		rf_reply_err(req, ENOENT);
		return;
	}
	fill(FILE_INO, &e.attr);
	rf_reply_entry(req, &e);
}

static void as_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	fill(ino, &st);
	rf_reply_attr(req, &st, 10);
}

static void as_open(struct rf_req *req, uint64_t ino, int flags)
{
	(void)flags;
	rf_reply_open(req, ino, 0);
}

static void as_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	struct job *j = malloc(sizeof(*j));

	(void)ino;
	(void)fh;
	if (!j) {
		rf_reply_err(req, ENOMEM);
		return;
	}
	if (off >= (off_t)FILE_SIZE)
		size = 0;
	else if ((off_t)size > (off_t)FILE_SIZE - off)
		size = (size_t)((off_t)FILE_SIZE - off);
	j->req = req;
	j->off = off;
	j->size = size;
	j->next = NULL;
	pthread_mutex_lock(&lock);
	*tail = j;
	tail = &j->next;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	/* returns without replying: a helper thread answers */
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,	     .name = "async",	    .init = as_init, .destroy = as_destroy,
	.lookup = as_lookup, .getattr = as_getattr, .open = as_open, .read = as_read,
};
