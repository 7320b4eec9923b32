// SPDX-License-Identifier: MIT
/* hello: a read-only filesystem with one file, the smallest useful plugin. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "ringfence/plugin.h"

#define HELLO_INO 2
static const char hello_name[] = "hello";
static const char hello_text[] = "Hello from a ringfenced plugin.\n";

static void fill(uint64_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == RF_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = sizeof(hello_text) - 1;
	}
}

static void hello_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct rf_entry e = { .ino = HELLO_INO, .attr_timeout = 60, .entry_timeout = 60 };

	if (parent != RF_ROOT_ID || strcmp(name, hello_name)) {
		rf_reply_err(req, ENOENT);
		return;
	}
	fill(HELLO_INO, &e.attr);
	rf_reply_entry(req, &e);
}

static void hello_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	if (ino != RF_ROOT_ID && ino != HELLO_INO) {
		rf_reply_err(req, ENOENT);
		return;
	}
	fill(ino, &st);
	rf_reply_attr(req, &st, 60);
}

static void hello_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	static const struct {
		const char *name;
		uint64_t ino;
	} ents[] = { { ".", RF_ROOT_ID }, { "..", RF_ROOT_ID }, { hello_name, HELLO_INO } };
	struct stat st;
	size_t i;

	(void)fh;
	(void)size;
	if (ino != RF_ROOT_ID) {
		rf_reply_err(req, ENOTDIR);
		return;
	}
	for (i = (size_t)off; i < sizeof(ents) / sizeof(ents[0]); i++) {
		fill(ents[i].ino, &st);
		if (rf_dirbuf_add(req, ents[i].name, &st, (off_t)i + 1) < 0)
			break;
	}
	rf_reply_dirbuf(req);
}

static void hello_open(struct rf_req *req, uint64_t ino, int flags)
{
	if (ino != HELLO_INO)
		rf_reply_err(req, EISDIR);
	else if ((flags & O_ACCMODE) != O_RDONLY)
		rf_reply_err(req, EACCES);
	else
		rf_reply_open(req, 0, RF_OPEN_KEEP_CACHE);
}

static void hello_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	size_t len = sizeof(hello_text) - 1;

	(void)ino;
	(void)fh;
	if ((size_t)off >= len)
		rf_reply_data(req, NULL, 0);
	else
		rf_reply_data(req, hello_text + off,
			      size < len - (size_t)off ? size : len - (size_t)off);
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,		  .name = "hello",	    .lookup = hello_lookup,
	.getattr = hello_getattr, .readdir = hello_readdir, .open = hello_open,
	.read = hello_read,
};
