/* SPDX-License-Identifier: MIT */
/* libfuse/'s own: the session and request behind libfuse's opaque types. */
#ifndef RINGFENCE_LIBFUSE_I_H
#define RINGFENCE_LIBFUSE_I_H

#include <ringfence/plugin.h>

#include "libfuse.h"

struct fuse_session {
	struct fuse_lowlevel_ops op;
	void *userdata;
	int exited;
	int debug;
	int initialized; /* init ran: destroy is owed */
	int passthrough; /* init asked for FUSE_CAP_PASSTHROUGH (libfuse3.so.4) */
};

/* the multi-threaded loop's configuration, opaque to programs (libfuse
 * 3.12 on) */
struct fuse_loop_config {
	unsigned int max_idle_threads;
	unsigned int max_threads;
	int clone_fd;
};

/* what a request was: how its answer goes to ringfence */
enum ll_kind {
	LL_NONE, /* a FORGET: fuse_reply_none */
	LL_ERR, /* an error or success, nothing more */
	LL_ENTRY,
	LL_CREATE,
	LL_ATTR,
	LL_READLINK,
	LL_OPEN,
	LL_WRITE,
	LL_DATA, /* READ: bytes */
	LL_DIR, /* READDIR: the program's buffer of kernel dirents */
	LL_DIRPLUS, /* READDIRPLUS: of kernel direntplus records */
	LL_STATFS,
	LL_XATTR, /* a size (size 0 asked) or bytes */
	LL_LSEEK,
};

struct fuse_req {
	struct rf_req *r; /* NULL for a FORGET */
	struct fuse_session *se;
	enum ll_kind kind;
	struct fuse_ctx ctx;
};

/* A function ringfence does not offer: ENOSYS (as libfuse says of a
 * notification on a kernel too old for it), the first call of each
 * logged, naming it. */
#define UNSUPPORTED(name)                                                                  \
	do {                                                                               \
		static int said;                                                           \
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))                      \
			rf_log("libfuse: the program called %s, which ringfence does not " \
			       "offer: ENOSYS",                                            \
			       name);                                                      \
		return -ENOSYS;                                                            \
	} while (0)

void rf_ll_req_free(struct fuse_req *req);
/* the file behind a fuse_passthrough_open() id, or -1 */
int rf_ll_backing_fd(int32_t id);
void rf_ll_forget(struct fuse_session *se, uint64_t ino, uint64_t nlookup);

/* The program's session as a ringfence plugin, for the plugin host (NULL
 * for any other session than the process's one). */
const struct rf_plugin *rf_libfuse_plugin(struct fuse_session *se);

#endif /* RINGFENCE_LIBFUSE_I_H */
