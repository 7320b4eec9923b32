// SPDX-License-Identifier: MIT
/*
 * motd: a plugin built outside ringfence's tree, against the installed
 * SDK (pkg-config ringfence-plugin). One read-only file, /motd, whose
 * text is the mount's `options` string from the policy:
 *
 *     [mount motd]
 *     mountpoint = /run/motd
 *     plugin = /usr/local/lib/ringfence/plugins/motd.so
 *     options = Welcome to this host.
 *
 * It shows init() and userdata: what init() allocates is handed to every
 * operation through rf_req_userdata(), and freed by destroy().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <ringfence/plugin.h>

#define MOTD_ID 2

struct motd {
	size_t len;
	char text[];
};

static int motd_init(const struct rf_init_args *args, void **userdata)
{
	size_t n = strlen(args->options);
	struct motd *m = malloc(sizeof(*m) + n + 2);

	if (!m)
		return ENOMEM;
	memcpy(m->text, args->options, n);
	m->text[n] = '\n';
	m->text[n + 1] = '\0';
	m->len = n + 1;
	*userdata = m;
	return 0;
}

static void motd_destroy(void *userdata)
{
	free(userdata);
}

/* The attributes of node @id; 0 if there is no such node. */
static int attr_of(const struct rf_req *req, uint64_t id, struct stat *st)
{
	const struct motd *m = rf_req_userdata(req);

	memset(st, 0, sizeof(*st));
	st->st_ino = id;
	if (id == RF_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else if (id == MOTD_ID) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)m->len;
	} else {
		return 0;
	}
	return 1;
}

static void motd_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct rf_entry e = { .ino = MOTD_ID, .attr_timeout = 3600, .entry_timeout = 3600 };

	if (parent == RF_ROOT_ID && !strcmp(name, "motd") && attr_of(req, MOTD_ID, &e.attr))
		rf_reply_entry(req, &e);
	else
		rf_reply_err(req, ENOENT);
}

static void motd_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;

	(void)fh;
	if (attr_of(req, ino, &st))
		rf_reply_attr(req, &st, 3600);
	else
		rf_reply_err(req, ENOENT);
}

static void motd_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	static const char *const names[] = { ".", "..", "motd" };
	struct stat st;

	(void)fh;
	(void)size;
	for (; ino == RF_ROOT_ID && off < 3; off++) {
		attr_of(req, off == 2 ? MOTD_ID : RF_ROOT_ID, &st);
		if (rf_dirbuf_add(req, names[off], &st, off + 1) < 0)
			break;
	}
	if (ino == RF_ROOT_ID)
		rf_reply_dirbuf(req);
	else
		rf_reply_err(req, ENOTDIR);
}

static void motd_open(struct rf_req *req, uint64_t ino, int flags)
{
	if ((flags & O_ACCMODE) != O_RDONLY)
		rf_reply_err(req, EROFS);
	else
		rf_reply_open(req, 0, ino == MOTD_ID ? RF_OPEN_KEEP_CACHE : 0);
}

static void motd_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	const struct motd *m = rf_req_userdata(req);
	size_t at = (size_t)off < m->len ? (size_t)off : m->len;

	(void)ino;
	(void)fh;
	rf_reply_data(req, m->text + at, size < m->len - at ? size : m->len - at);
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,		 .name = "motd",	.init = motd_init,
	.destroy = motd_destroy, .lookup = motd_lookup, .getattr = motd_getattr,
	.readdir = motd_readdir, .open = motd_open,	.read = motd_read,
};
