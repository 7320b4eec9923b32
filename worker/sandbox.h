/* SPDX-License-Identifier: MIT */
/* Entering the sandbox (sandbox.c). Each returns 0 or -errno. */
#ifndef RINGFENCE_SANDBOX_H
#define RINGFENCE_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "msg.h"

/* Pivot into a read-only tmpfs root holding /proc and, if @source is set,
 * /source (a nosuid,nodev bind, read-only if @read_only), and if @core_dir
 * is set, /cores (a writable nosuid,nodev,noexec bind of it); if @libdir
 * is set (a program's), /usr, /lib*, /bin, /sbin and /etc/ld.so.cache
 * read-only as the host has them, and @libdir read-only at
 * RF_SANDBOX_LIBDIR. */
int rf_sandbox_fs(const char *source, int read_only, const char *core_dir, const char *libdir);
/* core 0 (hard limit @core_max at most), RLIMIT_NOFILE @nofile (or the inherited hard limit, if lower),
 * RLIMIT_DATA @data bytes, RLIMIT_FSIZE @fsize bytes (RLIM_INFINITY for
 * none), and where @nproc is not 0 RLIMIT_NPROC @nproc tasks: where no
 * pids cgroup limits the tenant's tasks (it counts every task of the uid
 * on the host, the tenant's alone when the tenant has a uid of its own) */
int rf_sandbox_limits(rlim_t nofile, rlim_t data, rlim_t fsize, rlim_t nproc, rlim_t core_max);
int rf_sandbox_drop(uid_t uid, gid_t gid);
/* A thread's own part of the drop, made by each queue thread while it still
 * holds every capability, before rf_sandbox_drop() in the main thread: empty
 * bounding, inheritable and ambient sets, no_new_privs, and of the
 * permitted and effective sets only CAP_SETUID and CAP_SETGID. glibc makes
 * every thread change its ids when one does (and aborts the process if one
 * cannot), and that change to the tenant's uid clears those two. */
int rf_sandbox_drop_thread(void);
/* After the drop: every thread of the process runs as @uid/@gid with no
 * supplementary group, no capability in any set and no_new_privs, and
 * under seccomp if @seccomp (from /proc/self/task). 0, or -EPERM (-EIO if
 * /proc cannot tell) with the thread and field at fault in @why. */
int rf_sandbox_check_threads(uid_t uid, gid_t gid, bool seccomp, char *why, size_t len);
/* Its pure part: one thread's /proc status text; the field at fault in @why. */
int rf_sandbox_status_ok(const char *status, uid_t uid, gid_t gid, bool seccomp, char *why,
			 size_t len);
/* Die with the broker: SIGKILL on its death (the credential change in
 * rf_sandbox_drop() clears any earlier setting), and exit now if it is
 * already gone (@ipc_fd hung up). Call after rf_sandbox_drop(). */
int rf_sandbox_tie_to_broker(int ipc_fd);
/* The deny-list stage; trapped calls are reported on @ipc_fd. The plugin
 * host's differs in two rules: no io_uring_register at all, and no
 * mremap() of the stride of the pool at @pool_addr. A keeper that starts
 * the next plugin host when one dies (host_restart) may fork; a host it
 * started so stacks its own list on the keeper's it inherited. */
enum {
	RF_DENY_KEEPER = 0,
	RF_DENY_KEEPER_FORKS = 1,
	RF_DENY_HOST = 2,
	RF_DENY_HOST_AGAIN = 3,
	/* or'd in: a debug tenant's keeper, whose hosts become dumpable */
	RF_DENY_DEBUG = 0x100,
};
int rf_sandbox_seccomp_base(int ipc_fd, unsigned int who, uint64_t pool_addr);

/* Everything above in order, the worker's way from trusted start-up into
 * its sandbox, in two parts: root (if @sandboxed), the source opened as
 * /source, limits (rf_sandbox_enter_root, once, before the plugin host is
 * forked); then in each process the privilege drop, death with the
 * broker, the deny list (if @sandboxed) and the check of every thread
 * (rf_sandbox_enter_drop). 0, or -errno with the step that failed in
 * @failed. */
struct rf_sandbox {
	int sandboxed; /* 0 only for ringfenced --bench-unsafe=no-sandbox */
	unsigned int who; /* whose deny list: RF_DENY_* (rf_sandbox_seccomp_base) */
	uint64_t pool_addr;
	const char *source; /* "" if none */
	int read_only;
	/* a tenant in development: the plugin host dumpable, with a core
	 * limit, its working directory core_dir ("" none) bound at /cores;
	 * the keeper keeps a core limit of 0 it may not raise past the
	 * inherited one, and lets its hosts become dumpable */
	bool debug;
	const char *core_dir;
	/* a program's: ringfence's libfuse directory, and the system's
	 * programs and libraries ("" none: a plugin's) */
	const char *libdir;
	rlim_t nofile, data, fsize, nproc;
	uid_t uid;
	gid_t gid;
	int ipc_fd;
	int source_fd; /* out: an O_PATH of the source, -1 if none */
	char failed[256]; /* out */
};
int rf_sandbox_enter_root(struct rf_sandbox *sb);
int rf_sandbox_enter_drop(struct rf_sandbox *sb);
/* A debug tenant's plugin host, before its deny list: dumpable again (the
 * change of ids cleared it), its soft core limit at the hard one the
 * keeper left, its working directory /cores where core_dir is set. */
int rf_sandbox_debuggable(struct rf_sandbox *sb);

#endif /* RINGFENCE_SANDBOX_H */
