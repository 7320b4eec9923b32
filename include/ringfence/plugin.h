/* SPDX-License-Identifier: MIT */
/*
 * ringfence plugin ABI, version 2: the one header a filesystem plugin includes.
 *
 * A plugin is a shared object exporting
 *
 *     const struct rf_plugin ringfence_plugin = { RF_PLUGIN_INIT, ... };
 *
 * The worker's plugin host loads it after dropping every privilege and
 * checks abi_version and struct_size before calling anything (the manual:
 * ringfence-plugin(3)). Link it with `pkg-config --libs ringfence-plugin`
 * after the sources: a name below the worker does not offer then fails the
 * link. Operations are inode based (as in
 * FUSE's lowlevel protocol): the plugin hands out 64-bit node ids in its
 * entry replies and the kernel refers to them until it forgets them.
 * Node id 1 (RF_ROOT_ID) is the root and is never forgotten.
 *
 * Replies. Every operation receives a request handle and must answer it
 * exactly once with one of the rf_reply_*() calls, either before returning
 * or later (asynchronously) from any thread. Request arguments (names, write
 * data) point into the request's slot and stay valid until the first
 * rf_reply_*() or rf_dirbuf_*() call on that request, because the reply is
 * built in the same slot. A NULL operation answers ENOSYS.
 *
 * File data. rf_reply_data() copies bytes from memory. rf_reply_data_fd()
 * and rf_reply_write_fd() instead name a file the plugin owns: the
 * framework moves the bytes between that file and the request's slot in the
 * registered pool with READ_FIXED / WRITE_FIXED, without a copy through the
 * plugin. The descriptor must stay open until the reply completes, that is,
 * until the plugin's next operation on the same file handle. A file whose
 * open or create reply says RF_OPEN_FD_IO is answered that way only; where
 * the kernel offers zero copy (Linux 7.3) its bytes then move between the
 * plugin's file and the client's own pages, through no buffer at all.
 *
 * Threads. The worker runs one thread per FUSE queue (one per possible CPU)
 * and calls operations from all of them concurrently: a plugin must be
 * thread safe, or say RF_PLUGIN_SERIAL in its flags (below) to be called
 * one operation at a time. Calls for one request never overlap. forget() may run
 * concurrently with anything. init() runs once before any operation and
 * destroy() once after the last. A new request for a queue thread wakes it
 * from an interruptible wait, as a signal would: a system call made there
 * that returns EINTR rather than restarting (epoll_wait, for one) can
 * return it, and a plugin retries as it would under signals.
 *
 * Set-user-ID and set-group-ID bits. A plugin that declares
 * RF_PLUGIN_KILLPRIV in its flags clears them itself, as Linux file systems
 * do: S_ISUID, and S_ISGID where the group may execute, on a write, a
 * truncation (setattr of the size, an O_TRUNC open or create) whose request
 * says so (rf_req_kill_suidgid(): the caller lacks CAP_FSETID), and on every
 * change of a non-directory's owner or group. The kernel then never asks
 * for security.capability before a write. A plugin whose files' modes come
 * from another file system's, which clears them itself when the worker (who
 * never has CAP_FSETID) writes, truncates or changes owners, has nothing to
 * do. Under a policy with handle_killpriv (the default) the worker refuses a
 * plugin with a write or setattr operation that does not declare it.
 *
 * Errors are positive errno values (rf_reply_err(req, ENOENT)).
 */
#ifndef RINGFENCE_PLUGIN_H
#define RINGFENCE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2 added restore_node and reopen; the plugin host loads plugins of 1 and 2 */
#define RF_PLUGIN_ABI_VERSION 2
#define RF_ROOT_ID 1
/* fh value passed when the kernel did not name an open file */
#define RF_NO_FH UINT64_MAX

struct rf_req; /* one FUSE request; opaque */

/* Who made the request. */
struct rf_req_ctx {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	mode_t umask; /* for create/mkdir/mknod; 0 elsewhere */
};

/* What the plugin learns at start-up. */
struct rf_init_args {
	const char *name; /* the mount's name in the policy */
	int source_fd; /* O_PATH fd of the policy's source directory, -1 if none */
	const char *source; /* its path as the policy wrote it, "" if none */
	const char *options; /* the policy's `options` string, "" if none */
	uint32_t max_write; /* largest write and read the kernel will send */
	int read_only;
	/* the policy's ownership: RF_OWN_TENANT (0) leaves the source's
	 * owners alone; RF_OWN_XATTR (1) asks the plugin to keep every
	 * file's owner, group and mode itself (passthrough: in an xattr) */
	int ownership;
	/* Memory that outlives this worker (the policy's state_size; NULL
	 * and 0 without it): the broker keeps it for as long as the mount
	 * stands and maps it into every worker generation, at the same
	 * address (pointers into it stay valid), the first finding it
	 * zeroed. A predecessor may have been killed at any instruction
	 * while writing it: keep it so that any moment's contents can be
	 * read back (a version and a checksum, or writes published by one
	 * aligned store), and check what is read. Its pages count against
	 * the tenant's memory limit. */
	void *state;
	size_t state_size;
	/* 0 for the mount's first worker, then one more for each successor */
	uint32_t generation;
};

#define RF_OWN_TENANT 0
#define RF_OWN_XATTR 1

/*
 * Restoring a dead predecessor's nodes (ABI 2). Under a policy with
 * restore_nodes the framework keeps, in memory the broker holds for as long
 * as the mount stands, a record of every node id and open file the kernel
 * holds: the parent and name a node was last reached by (from the request
 * its entry reply answered, kept current across RENAME, dropped by UNLINK
 * and RMDIR), its st_ino and type from that reply, and each open file's
 * node and open flags. A successor, after init() and before it serves,
 * calls restore_node() for each node (a parent before its children) and
 * reopen() for each open file, and the kernel goes on with the ids and
 * handles it has: nothing returns ESTALE or EIO for them. A node whose
 * restore fails answers ESTALE as a node of a dead worker did before, and
 * a file whose reopen fails answers EIO.
 */
struct rf_restore_node {
	uint64_t parent; /* the parent's id in this worker (restored first) */
	/* one component, never "." or ".."; "" for a node that has no name
	 * any more (unlinked, or replaced by a rename, while the kernel held
	 * it): only a plugin that finds nodes by @ino can restore that */
	const char *name;
	ino_t ino; /* st_ino of the entry reply: check it is the same file */
	mode_t type; /* its S_IFMT bits */
	/* lookups the kernel holds: take the node as looked up this often
	 * (its forget() calls will add up to this) */
	uint64_t nlookup;
};

/* An entry (lookup/mkdir/create/... reply). */
struct rf_entry {
	uint64_t ino; /* node id; 0 means "negative entry" (cached ENOENT) */
	uint64_t generation;
	struct stat attr;
	double attr_timeout; /* seconds */
	double entry_timeout;
};

/* setattr: which fields are valid. */
#define RF_SET_MODE (1u << 0)
#define RF_SET_UID (1u << 1)
#define RF_SET_GID (1u << 2)
#define RF_SET_SIZE (1u << 3)
#define RF_SET_ATIME (1u << 4)
#define RF_SET_MTIME (1u << 5)
#define RF_SET_ATIME_NOW (1u << 7)
#define RF_SET_MTIME_NOW (1u << 8)
#define RF_SET_CTIME (1u << 10)

struct rf_setattr {
	uint32_t valid; /* RF_SET_* */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	off_t size;
	struct timespec atime, mtime, ctime;
	uint64_t fh; /* RF_NO_FH if the kernel did not give one */
};

/* open/create reply flags */
#define RF_OPEN_DIRECT_IO (1u << 0)
#define RF_OPEN_KEEP_CACHE (1u << 1)
#define RF_OPEN_NONSEEKABLE (1u << 2)
/* The plugin answers every read of this file with rf_reply_data_fd() (or an
 * error) and every write with rf_reply_write_fd(). Where the kernel offers
 * zero copy (Linux 7.3) and the policy allows it, the file's data then
 * moves between the plugin's file and the client's own pages, never
 * through the pool: write() gets data NULL (size still says how much), and
 * a read answered from memory fails with EIO. Elsewhere it changes nothing. */
#define RF_OPEN_FD_IO (1u << 3)
/* No FLUSH when the client closes this file (FOPEN_NOFLUSH). ringfence
 * keeps locks in the kernel and has no writeback cache, so a flush only
 * carries what closing the plugin's own file would report: leave it out
 * where that is nothing (a local file system, memory). Saves a round trip
 * per close(2). */
#define RF_OPEN_NOFLUSH (1u << 5)

struct rf_plugin {
	uint32_t abi_version; /* RF_PLUGIN_ABI_VERSION */
	uint32_t struct_size; /* sizeof(struct rf_plugin) */
	const char *name;

	/* Returns 0 or a positive errno; *userdata is handed to every call
	 * through rf_req_userdata(). A failing init stops the worker and the
	 * broker reports the error. */
	int (*init)(const struct rf_init_args *args, void **userdata);
	void (*destroy)(void *userdata);

	void (*lookup)(struct rf_req *req, uint64_t parent, const char *name);
	/* No reply: forget is not a request. */
	void (*forget)(void *userdata, uint64_t ino, uint64_t nlookup);
	void (*getattr)(struct rf_req *req, uint64_t ino, uint64_t fh);
	void (*setattr)(struct rf_req *req, uint64_t ino, const struct rf_setattr *sa);
	void (*readlink)(struct rf_req *req, uint64_t ino);
	void (*mknod)(struct rf_req *req, uint64_t parent, const char *name, mode_t mode,
		      dev_t rdev);
	void (*mkdir)(struct rf_req *req, uint64_t parent, const char *name, mode_t mode);
	void (*unlink)(struct rf_req *req, uint64_t parent, const char *name);
	void (*rmdir)(struct rf_req *req, uint64_t parent, const char *name);
	void (*symlink)(struct rf_req *req, const char *target, uint64_t parent, const char *name);
	/* flags: RENAME_NOREPLACE / RENAME_EXCHANGE / RENAME_WHITEOUT */
	void (*rename)(struct rf_req *req, uint64_t parent, const char *name, uint64_t newparent,
		       const char *newname, unsigned int flags);
	void (*link)(struct rf_req *req, uint64_t ino, uint64_t newparent, const char *newname);
	void (*open)(struct rf_req *req, uint64_t ino, int flags);
	void (*read)(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size);
	/* data is NULL for a file opened RF_OPEN_FD_IO whose data is
	 * zero-copied: answer with rf_reply_write_fd() */
	void (*write)(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, const void *data,
		      size_t size);
	void (*flush)(struct rf_req *req, uint64_t ino, uint64_t fh);
	void (*release)(struct rf_req *req, uint64_t ino, uint64_t fh, int flags);
	void (*fsync)(struct rf_req *req, uint64_t ino, uint64_t fh, int datasync);
	void (*opendir)(struct rf_req *req, uint64_t ino, int flags);
	/* Fill with rf_dirbuf_add() from offset @off, then rf_reply_dirbuf(). */
	void (*readdir)(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size);
	void (*releasedir)(struct rf_req *req, uint64_t ino, uint64_t fh);
	void (*fsyncdir)(struct rf_req *req, uint64_t ino, uint64_t fh, int datasync);
	void (*statfs)(struct rf_req *req, uint64_t ino);
	void (*setxattr)(struct rf_req *req, uint64_t ino, const char *name, const void *value,
			 size_t size, int flags);
	/* size 0: reply rf_reply_xattr_size(); else rf_reply_data() or ERANGE */
	void (*getxattr)(struct rf_req *req, uint64_t ino, const char *name, size_t size);
	void (*listxattr)(struct rf_req *req, uint64_t ino, size_t size);
	void (*removexattr)(struct rf_req *req, uint64_t ino, const char *name);
	void (*access)(struct rf_req *req, uint64_t ino, int mask);
	void (*create)(struct rf_req *req, uint64_t parent, const char *name, mode_t mode,
		       int flags);
	void (*fallocate)(struct rf_req *req, uint64_t ino, uint64_t fh, int mode, off_t off,
			  off_t len);
	void (*lseek)(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, int whence);
	/* Like readdir, but fill with rf_dirbuf_add_plus(). Without it the
	 * framework answers READDIRPLUS through readdir (no attributes). */
	void (*readdirplus)(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size);

	/* RF_PLUGIN_*; a plugin built before this field has none (the worker
	 * reads it only when struct_size covers it) */
	uint32_t flags;

	/* ABI 2, restoring a predecessor's nodes (see struct rf_restore_node).
	 * restore_node: find @r->name under @r->parent again and set *@ino to
	 * the node's id; 0 or a positive errno (ENOENT, ESTALE: not the same
	 * file). reopen: open node @ino again with @flags (never O_CREAT,
	 * O_EXCL or O_TRUNC), as open() (opendir() if @dir) would have, and
	 * set *@fh; 0 or a positive errno. It is called once for each open
	 * the kernel holds of one handle (a plugin that hands one handle to
	 * several opens gets as many calls; the first call's *@fh is the
	 * handle). Both run before any request. */
	int (*restore_node)(void *userdata, const struct rf_restore_node *r, uint64_t *ino);
	int (*reopen)(void *userdata, uint64_t ino, int flags, int dir, uint64_t *fh);
};

/* The plugin clears set-user-ID and set-group-ID bits itself (see above). */
#define RF_PLUGIN_KILLPRIV (1u << 0)
/* The plugin's operations are called one at a time, from any queue thread
 * (as libfuse's single-threaded loop calls a program's): for a plugin that
 * is not thread-safe, at the cost of every queue but one waiting. */
#define RF_PLUGIN_SERIAL (1u << 1)

#define RF_PLUGIN_INIT .abi_version = RF_PLUGIN_ABI_VERSION, .struct_size = sizeof(struct rf_plugin)

/* ---- logging ---- */
/* A warning for the host's log, from any thread: the broker logs it as the
 * tenant's, "worker: plugin: ...", escaped, and drops lines past its rate
 * limit (counting them). For what an administrator must act on, not for
 * each request. */
void rf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- request accessors ---- */
const struct rf_req_ctx *rf_req_ctx(const struct rf_req *req);
void *rf_req_userdata(const struct rf_req *req);
/* Nonzero once the kernel has sent an INTERRUPT for this request. */
int rf_req_interrupted(const struct rf_req *req);
/* Nonzero for a write, a setattr of the size, or an O_TRUNC open or create
 * after which the plugin must clear the file's set-user-ID bit, and its
 * set-group-ID bit where the group may execute (RF_PLUGIN_KILLPRIV). */
int rf_req_kill_suidgid(const struct rf_req *req);

/* @mode with its set-user-ID bit cleared, and its set-group-ID bit where
 * the group may execute: what a write or truncation that
 * rf_req_kill_suidgid() flags, or a change of owner or group, leaves. */
static inline mode_t rf_mode_killpriv(mode_t mode)
{
	mode &= ~(mode_t)S_ISUID;
	if (mode & S_IXGRP)
		mode &= ~(mode_t)S_ISGID;
	return mode;
}

/* ---- replies: exactly one per request ---- */
void rf_reply_err(struct rf_req *req, int err);
void rf_reply_ok(struct rf_req *req); /* unlink, rmdir, rename, flush, release, ... */
void rf_reply_entry(struct rf_req *req, const struct rf_entry *e);
void rf_reply_create(struct rf_req *req, const struct rf_entry *e, uint64_t fh,
		     uint32_t open_flags);
void rf_reply_attr(struct rf_req *req, const struct stat *st, double timeout);
void rf_reply_open(struct rf_req *req, uint64_t fh, uint32_t open_flags);
/* Before rf_reply_open() or rf_reply_create() of a regular file: the
 * framework moves the file's data itself, between @fd and the client's
 * requests, and the plugin's read and write are not called for it (but
 * for a write that must clear the set-user-ID and set-group-ID bits,
 * which still is). It is what a plugin that answers every read with
 * rf_reply_data_fd(@fd, off, size) and every write with
 * rf_reply_write_fd(@fd, off) would do, without the plugin's part of
 * each request: for a mount served over FUSE io-uring, half the context
 * switches of every transfer. @fd stays the plugin's: keep it open until
 * the release; the framework holds its own copy until then. With
 * RF_OPEN_FD_IO as well, the data is zero-copied where the kernel offers
 * it (Linux 7.3), by the framework alone too. */
void rf_req_backing(struct rf_req *req, int fd);
void rf_reply_readlink(struct rf_req *req, const char *target);
void rf_reply_statfs(struct rf_req *req, const struct statvfs *st);
/* Bytes from memory: read data, getxattr value, listxattr list. */
void rf_reply_data(struct rf_req *req, const void *buf, size_t len);
/* Read up to @len bytes at @off of the plugin's file @fd into the reply
 * (READ_FIXED into the pool). A short read is a short reply. */
void rf_reply_data_fd(struct rf_req *req, int fd, off_t off, size_t len);
void rf_reply_write(struct rf_req *req, size_t written);
/* Write the request's data to the plugin's file @fd at @off (WRITE_FIXED
 * from the pool) and reply with the count written. */
void rf_reply_write_fd(struct rf_req *req, int fd, off_t off);
void rf_reply_xattr_size(struct rf_req *req, size_t size);
void rf_reply_lseek(struct rf_req *req, off_t off);

/* ---- directory listings, built in place in the reply buffer ---- */
/* Add one entry whose next offset is @next_off. Returns 0, or -1 when the
 * entry does not fit (stop and reply). Only st_ino and the type bits of
 * st_mode are used. */
int rf_dirbuf_add(struct rf_req *req, const char *name, const struct stat *st, off_t next_off);
/* readdirplus: an entry with its attributes. An entry with a nonzero ino
 * counts as a lookup, as rf_reply_entry() does; when this returns -1 the
 * entry was not sent and the plugin must undo that lookup itself. */
int rf_dirbuf_add_plus(struct rf_req *req, const char *name, const struct rf_entry *e,
		       off_t next_off);
void rf_reply_dirbuf(struct rf_req *req);

#ifdef __cplusplus
}
#endif

#endif /* RINGFENCE_PLUGIN_H */
