// SPDX-License-Identifier: MIT
/*
 * The session's loops. In a ringfence plugin host (a tenant's program),
 * the host's runtime serves the session: libringfence-plugin.so.1, beside
 * this library, whose queue threads call the program's operations as a
 * plugin's; the loop returns when the keeper ends the host. Its threads
 * are the mount's FUSE queues', one each, whatever the loop's
 * configuration asks for. Anywhere else there is nothing to serve: the
 * broker mounted, and the kernel's requests reach the keeper alone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>

#include "libfuse_i.h"

#define EXPORT __attribute__((visibility("default")))

/* worker/host/runtime.h */
#define RF_HOST_SERVE "rf_host_program_serve"

/* @serial: the single-threaded loop's, whose program's operations are
 * called one at a time (a program without threads may not be
 * thread-safe) */
static int serve(struct fuse_session *se, bool serial)
{
	const struct rf_plugin *p = rf_libfuse_plugin(se);
	int (*run)(const struct rf_plugin *);
	struct rf_plugin copy;
	int r;

	if (!p) {
		fuse_log(FUSE_LOG_ERR, "fuse: no session to serve (none was made, or another)\n");
		return -EINVAL;
	}
	copy = *p;
	if (serial)
		copy.flags |= RF_PLUGIN_SERIAL;
	*(void **)&run = dlsym(RTLD_DEFAULT, RF_HOST_SERVE);
	r = run ? run(&copy) : -ENOTCONN;
	if (r == -ENOTCONN)
		fuse_log(FUSE_LOG_ERR,
			 "fuse: ringfence's libfuse serves a session only as a ringfence "
			 "tenant's program (program = in ringfence.policy(5))\n");
	else if (r == -EBUSY)
		fuse_log(FUSE_LOG_ERR, "fuse: the session was served already\n");
	return r;
}

EXPORT int fuse_session_loop(struct fuse_session *se)
{
	return serve(se, true);
}

int fuse_session_loop_mt_312(struct fuse_session *se, struct fuse_loop_config *config);
int fuse_session_loop_mt_32(struct fuse_session *se, struct fuse_loop_config_v1 *config);
int fuse_session_loop_mt_31(struct fuse_session *se, int clone_fd);

EXPORT int fuse_session_loop_mt_312(struct fuse_session *se, struct fuse_loop_config *config)
{
	(void)config;
	return serve(se, false);
}

EXPORT int fuse_session_loop_mt_32(struct fuse_session *se, struct fuse_loop_config_v1 *config)
{
	(void)config;
	return serve(se, false);
}

EXPORT int fuse_session_loop_mt_31(struct fuse_session *se, int clone_fd)
{
	(void)clone_fd;
	return serve(se, false);
}

__asm__(".symver fuse_session_loop_mt_312, fuse_session_loop_mt@@FUSE_3.12");
__asm__(".symver fuse_session_loop_mt_32, fuse_session_loop_mt@FUSE_3.2");
__asm__(".symver fuse_session_loop_mt_31, fuse_session_loop_mt@FUSE_3.0");

/* the high-level API's: its session's */
EXPORT int fuse_loop(struct fuse *f)
{
	return serve(fuse_get_session(f), true);
}

int fuse_loop_mt_312(struct fuse *f, struct fuse_loop_config *config);
int fuse_loop_mt_32(struct fuse *f, struct fuse_loop_config_v1 *config);
int fuse_loop_mt_31(struct fuse *f, int clone_fd);

EXPORT int fuse_loop_mt_312(struct fuse *f, struct fuse_loop_config *config)
{
	(void)config;
	return serve(fuse_get_session(f), false);
}

EXPORT int fuse_loop_mt_32(struct fuse *f, struct fuse_loop_config_v1 *config)
{
	(void)config;
	return serve(fuse_get_session(f), false);
}

EXPORT int fuse_loop_mt_31(struct fuse *f, int clone_fd)
{
	(void)clone_fd;
	return serve(fuse_get_session(f), false);
}

__asm__(".symver fuse_loop_mt_312, fuse_loop_mt@@FUSE_3.12");
__asm__(".symver fuse_loop_mt_32, fuse_loop_mt@FUSE_3.2");
__asm__(".symver fuse_loop_mt_31, fuse_loop_mt@FUSE_3.0");
