// SPDX-License-Identifier: MIT
/*
 * persist: a test plugin that counts, in the memory that outlives its
 * worker (the policy's state_size), how many workers of its mount have
 * started. Its root holds one file, "inits", reading
 * "inits=N generation=G state=BYTES", or "no state" without any.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ringfence/plugin.h"

#define PERSIST_MAGIC 0x7473697372657066ULL /* "fpersist" */
#define INITS_ID 2

struct persisted {
	uint64_t magic;
	uint32_t inits;
};

static char text[128];

static int p_init(const struct rf_init_args *a, void **ud)
{
	struct persisted *p = a->state;

	*ud = NULL;
	if (!p || a->state_size < sizeof(*p)) {
		snprintf(text, sizeof(text), "no state\n");
		return 0;
	}
	/* the first generation finds it zeroed */
	if (p->magic != PERSIST_MAGIC) {
		p->inits = 0;
		__atomic_store_n(&p->magic, PERSIST_MAGIC, __ATOMIC_RELEASE);
	}
	__atomic_add_fetch(&p->inits, 1, __ATOMIC_RELEASE);
	snprintf(text, sizeof(text), "inits=%u generation=%u state=%zu\n", p->inits, a->generation,
		 a->state_size);
	return 0;
}

static void attrs(uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = ino == RF_ROOT_ID ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = ino == RF_ROOT_ID ? 2 : 1;
	st->st_size = ino == RF_ROOT_ID ? 0 : (off_t)strlen(text);
}

static void p_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct rf_entry e = { .ino = INITS_ID };

	if (parent != RF_ROOT_ID || strcmp(name, "inits")) {
		rf_reply_err(req, ENOENT);
		return;
	}
	attrs(INITS_ID, &e.attr);
	rf_reply_entry(req, &e);
}

static void p_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	attrs(ino, &st);
	rf_reply_attr(req, &st, 0);
}

static void p_open(struct rf_req *req, uint64_t ino, int flags)
{
	(void)ino;
	(void)flags;
	rf_reply_open(req, 0, RF_OPEN_DIRECT_IO);
}

static void p_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	size_t len = strlen(text), at = (size_t)off < len ? (size_t)off : len;

	(void)ino;
	(void)fh;
	rf_reply_data(req, text + at, size < len - at ? size : len - at);
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,	      .name = "persist", .init = p_init, .lookup = p_lookup,
	.getattr = p_getattr, .open = p_open,	 .read = p_read,
};
