// SPDX-License-Identifier: MIT
/*
 * What a libfuse program does around its session: signal handlers,
 * daemonizing, the versions it prints, its help; and the kernel
 * notifications, which ringfence does not pass on.
 *
 * A plugin host is one process the keeper watches by its PID: it does
 * not fork to become a daemon, and its standard output and error stay
 * where the plugin host put them (the broker's log of the tenant).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuse_uapi.h"
#include "libfuse_i.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- signals ---- */

/* the session a SIGHUP, SIGINT or SIGTERM ends (libfuse keeps one too) */
static struct fuse_session *signalled;

static void end_session(int sig)
{
	(void)sig;
	if (signalled)
		fuse_session_exit(signalled);
}

/* SIGPIPE's: a function, not SIG_IGN, so that removing puts back only
 * what this file set */
static void ignore(int sig)
{
	(void)sig;
}

/* As libfuse: a handler is set only where the signal has its default
 * action, and taken away only where it is still this file's. */
static int one(int sig, void (*handler)(int), int remove)
{
	struct sigaction sa = { .sa_handler = remove ? SIG_DFL : handler }, old;

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, NULL, &old) < 0) {
		fuse_log(FUSE_LOG_ERR, "fuse: cannot get old signal handler: %s\n",
			 strerror(errno));
		return -1;
	}
	if (old.sa_handler == (remove ? handler : SIG_DFL) && sigaction(sig, &sa, NULL) < 0) {
		fuse_log(FUSE_LOG_ERR, "fuse: cannot set signal handler: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

EXPORT int fuse_set_signal_handlers(struct fuse_session *se)
{
	if (one(SIGHUP, end_session, 0) < 0 || one(SIGINT, end_session, 0) < 0 ||
	    one(SIGTERM, end_session, 0) < 0 || one(SIGPIPE, ignore, 0) < 0)
		return -1;
	signalled = se;
	return 0;
}

EXPORT void fuse_remove_signal_handlers(struct fuse_session *se)
{
	if (signalled != se) {
		fuse_log(FUSE_LOG_ERR, "fuse: fuse_remove_signal_handlers: unknown session\n");
		return;
	}
	signalled = NULL;
	one(SIGHUP, end_session, 1);
	one(SIGINT, end_session, 1);
	one(SIGTERM, end_session, 1);
	one(SIGPIPE, ignore, 1);
}

/* A backtrace on a fatal signal (libfuse 3.17): the keeper reports a
 * program's death and its signal itself, and a handler could only stand
 * between the signal and that report. Nothing is installed. */
EXPORT int fuse_set_fail_signal_handlers(struct fuse_session *se)
{
	(void)se;
	return 0;
}

/* ---- the process ---- */

/* No fork: the keeper knows its plugin host by its PID, and a daemon's
 * parent would leave it. Its output stays the broker's log, not
 * /dev/null. What libfuse does in the foreground too, it does: the
 * program leaves the directory it was started in. */
EXPORT int fuse_daemonize(int foreground)
{
	(void)foreground;
	if (chdir("/") < 0) {
		fuse_log(FUSE_LOG_ERR, "fuse_daemonize: chdir: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

EXPORT int fuse_version(void)
{
	return FUSE_VERSION;
}

EXPORT const char *fuse_pkgversion(void)
{
	return "3.14.0 (ringfence)";
}

EXPORT void fuse_lowlevel_version(void)
{
	printf("using FUSE kernel interface version %i.%i (ringfence)\n", FUSE_KERNEL_VERSION,
	       FUSE_KERNEL_MINOR_VERSION);
}

/* libfuse's are mount options, which the tenant's policy sets here */
EXPORT void fuse_lowlevel_help(void)
{
	printf("    (mount options are the tenant's policy's: see ringfence.policy(5))\n");
}

/* ---- notifications to the kernel ---- */

/* The keeper writes everything the kernel reads, and takes no
 * notification from a plugin: each says ENOSYS (UNSUPPORTED). */

EXPORT int fuse_lowlevel_notify_inval_inode(struct fuse_session *se, fuse_ino_t ino, off_t off,
					    off_t len)
{
	(void)se;
	(void)ino;
	(void)off;
	(void)len;
	UNSUPPORTED("fuse_lowlevel_notify_inval_inode");
}

EXPORT int fuse_lowlevel_notify_inval_entry(struct fuse_session *se, fuse_ino_t parent,
					    const char *name, size_t namelen)
{
	(void)se;
	(void)parent;
	(void)name;
	(void)namelen;
	UNSUPPORTED("fuse_lowlevel_notify_inval_entry");
}

EXPORT int fuse_lowlevel_notify_delete(struct fuse_session *se, fuse_ino_t parent, fuse_ino_t child,
				       const char *name, size_t namelen)
{
	(void)se;
	(void)parent;
	(void)child;
	(void)name;
	(void)namelen;
	UNSUPPORTED("fuse_lowlevel_notify_delete");
}

EXPORT int fuse_lowlevel_notify_store(struct fuse_session *se, fuse_ino_t ino, off_t offset,
				      struct fuse_bufvec *bufv, enum fuse_buf_copy_flags flags)
{
	(void)se;
	(void)ino;
	(void)offset;
	(void)bufv;
	(void)flags;
	UNSUPPORTED("fuse_lowlevel_notify_store");
}

EXPORT int fuse_lowlevel_notify_retrieve(struct fuse_session *se, fuse_ino_t ino, size_t size,
					 off_t offset, void *cookie)
{
	(void)se;
	(void)ino;
	(void)size;
	(void)offset;
	(void)cookie;
	UNSUPPORTED("fuse_lowlevel_notify_retrieve");
}

/* poll is never called: there is no handle to notify or destroy */
EXPORT int fuse_lowlevel_notify_poll(struct fuse_pollhandle *ph)
{
	(void)ph;
	UNSUPPORTED("fuse_lowlevel_notify_poll");
}

EXPORT void fuse_pollhandle_destroy(struct fuse_pollhandle *ph)
{
	(void)ph;
}

/* ---- the multi-threaded loop's configuration ---- */

/* Kept as the program sets it: ringfence's threads are its FUSE queues',
 * one each, whatever these say. */
EXPORT struct fuse_loop_config *fuse_loop_cfg_create(void)
{
	struct fuse_loop_config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max_idle_threads = UINT_MAX; /* libfuse's -1 */
	c->max_threads = 10;
	return c;
}

EXPORT void fuse_loop_cfg_destroy(struct fuse_loop_config *config)
{
	free(config);
}

EXPORT void fuse_loop_cfg_set_idle_threads(struct fuse_loop_config *config, unsigned int value)
{
	config->max_idle_threads = value;
}

EXPORT void fuse_loop_cfg_set_max_threads(struct fuse_loop_config *config, unsigned int value)
{
	config->max_threads = value;
}

EXPORT void fuse_loop_cfg_set_clone_fd(struct fuse_loop_config *config, unsigned int value)
{
	config->clone_fd = (int)value;
}

EXPORT void fuse_loop_cfg_convert(struct fuse_loop_config *config,
				  struct fuse_loop_config_v1 *v1_conf)
{
	config->max_idle_threads = v1_conf->max_idle_threads;
	config->clone_fd = v1_conf->clone_fd;
}
