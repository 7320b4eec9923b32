/* SPDX-License-Identifier: MIT */
/*
 * The deployment policy file: a [global] section and any number of
 * [mount NAME] sections of `key = value` lines. '#' starts a comment.
 *
 * Parsing is pure (no system calls beyond reading the file) so that
 * `ringfenced --check` validates without touching the system. Every error
 * names FILE:LINE and the key at fault.
 */
#ifndef RINGFENCE_POLICY_H
#define RINGFENCE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringfence/plugin.h"
#include "transport.h"

/* A kernel feature the policy may ask for: used where the kernel offers
 * it (auto), required (on: the tenant does not start without it), or not
 * used (off). */
enum rf_feature {
	RF_FEATURE_AUTO = 0,
	RF_FEATURE_ON,
	RF_FEATURE_OFF,
};

/* The paths built in (the Makefile's PATHS: a plain build's point into
 * its tree, make install's to where it installs); these are make
 * install's defaults, for a compiler run without them. */
#ifndef RF_PLUGIN_DIR
#define RF_PLUGIN_DIR "/usr/local/lib/ringfence/plugins"
#endif
#ifndef RF_SECCOMP_POLICY
#define RF_SECCOMP_POLICY "/usr/local/etc/ringfence/seccomp.policy"
#endif
#ifndef RF_PROGRAM_POLICY
#define RF_PROGRAM_POLICY "/usr/local/etc/ringfence/program.policy"
#endif
#ifndef RF_WORKER_PATH
#define RF_WORKER_PATH "/usr/local/libexec/ringfence/ringfence-worker"
#endif
#ifndef RF_POLICY_PATH
#define RF_POLICY_PATH "/usr/local/etc/ringfence/ringfence.policy"
#endif
#ifndef RF_VERSION
#define RF_VERSION "unknown"
#endif

#define RF_POLICY_NAME_MAX 64
#define RF_POLICY_PATH_MAX 1024
#define RF_POLICY_OPTIONS_MAX 1024

struct rf_mount_policy {
	char name[RF_POLICY_NAME_MAX];
	int line; /* of the [mount NAME] header */
	char mountpoint[RF_POLICY_PATH_MAX];
	char plugin[RF_POLICY_PATH_MAX]; /* "" for a program's mount */
	/* a libfuse 3 program the plugin host starts instead of a plugin,
	 * and its arguments after the mount point (words apart by blanks) */
	char program[RF_POLICY_PATH_MAX];
	char program_args[RF_POLICY_OPTIONS_MAX];
	char source[RF_POLICY_PATH_MAX]; /* "" when absent */
	char options[RF_POLICY_OPTIONS_MAX];
	char user[RF_POLICY_NAME_MAX]; /* RF_USER_DYNAMIC: one of the user_range */
	char group[RF_POLICY_NAME_MAX]; /* "": the user's own (primary) group */
	char seccomp_policy[RF_POLICY_PATH_MAX]; /* "" = the global one */
	enum rf_transport transport;
	int bufpool; /* RF_FEATURE_*: the kernel's buffer pools (7.46) */
	int zero_copy; /* RF_FEATURE_*: zero-copy queues (7.46, needs the pools) */
	uint64_t pool_size; /* bytes the pool may pin with buffer pools; 0: automatic */
	uint32_t queue_depth;
	uint32_t max_write;
	uint32_t start_timeout; /* seconds for a worker to report READY */
	uint64_t max_file_size; /* RLIMIT_FSIZE of the worker; 0: unlimited */
	uint64_t state_size; /* memory the plugin keeps across worker deaths; 0: none */
	uint32_t restore_nodes; /* node ids and open files a successor restores; 0: none */
	uint64_t disk_max; /* bytes the tenant may keep in its source; 0: none */
	uint32_t inodes_max; /* files it may keep there; 0: none */
	uint64_t memory_max; /* cgroup memory limit; 0: the default */
	uint32_t pids_max; /* cgroup pids limit; 0: the default */
	uint32_t cpu_weight; /* cgroup cpu weight 1..10000; 0: default */
	/* RF_FEATURE_*: the worker runs SCHED_IDLE in a cpu cgroup of its
	 * own (broker/cgroup.c says why) */
	int sched_idle;
	uint32_t request_timeout; /* seconds; 0: none */
	/* seconds the kernel lets a request wait before it aborts the whole
	 * connection (FUSE_REQUEST_TIMEOUT); 0: none; RF_KERNEL_TIMEOUT_AUTO:
	 * RF_KERNEL_TIMEOUT_SLACK past request_timeout + start_timeout +
	 * heartbeat_timeout when request_timeout is set, else none */
	uint32_t kernel_timeout;
	uint32_t heartbeat_timeout; /* seconds a worker has to answer PING; 0: none */
	uint32_t crash_limit; /* deaths within crash_window that end restarts */
	uint32_t crash_window; /* seconds */
	/* a dead plugin host is replaced alone: the worker's keeper, its
	 * rings and every request the kernel queued meanwhile stay */
	bool host_restart;
	bool allow_other;
	bool default_permissions;
	bool read_only;
	/* FUSE_HANDLE_KILLPRIV_V2: the plugin clears setuid/setgid bits
	 * itself, and the kernel stops asking for security.capability
	 * before each write */
	bool handle_killpriv;
	bool shared_user; /* may share its named user with tenants that say so too */
	/* may fill a file system another tenant's source is on, without
	 * disk_max and inodes_max (broker/quota.c refuses it otherwise) */
	bool disk_shared;
	/* a tenant in development: its plugin host may be traced and dumps
	 * core (into core_dir, bound into its root), and the watchdog and
	 * heartbeat leave it alone; never for production */
	bool debug;
	char core_dir[RF_POLICY_PATH_MAX]; /* "": none */
	int ownership; /* RF_OWN_* of the plugin ABI */
};

struct rf_policy {
	char file[RF_POLICY_PATH_MAX];
	char control_socket[RF_POLICY_PATH_MAX];
	char plugin_dir[RF_POLICY_PATH_MAX];
	char seccomp_policy[RF_POLICY_PATH_MAX];
	char control_group[RF_POLICY_NAME_MAX]; /* "" = root only */
	char log_target[16]; /* "syslog" or "stderr"; -f means stderr */
	uint32_t user_range[2]; /* the uids (and gids) of dynamic users, inclusive */
	char users_file[RF_POLICY_PATH_MAX]; /* which tenant has which of them */
	size_t nmounts;
	struct rf_mount_policy *mounts;
	/* the text it was read from (rf_policy_load), handed to a broker
	 * that re-executes itself; NULL when parsed from a caller's text */
	char *text;
	size_t text_len;
};

/* Defaults (also documented in the README). */
/* the largest policy file read */
#define RF_POLICY_FILE_MAX (1024 * 1024)
#define RF_DEFAULT_CONTROL_SOCKET "/run/ringfence/control.sock"
#define RF_DEFAULT_QUEUE_DEPTH 8
#define RF_DEFAULT_MAX_WRITE (1024 * 1024)
/* A tenant's worker runs as a uid and gid of its own from the policy's
 * user_range unless the policy names a user; systemd's documentation of
 * uid ranges leaves 1879048192-2147352575 to nobody, and 65536 ids from
 * its start are the default. */
#define RF_USER_DYNAMIC "dynamic"
#define RF_DEFAULT_USER RF_USER_DYNAMIC
#define RF_DEFAULT_USER_RANGE_LO 1879048192U
#define RF_DEFAULT_USER_RANGE_HI 1879113727U
#define RF_USER_RANGE_MAX 2147352575U
#define RF_DEFAULT_USERS_FILE "/var/lib/ringfence/users"
#define RF_MAX_WRITE_MIN 4096
#define RF_MAX_WRITE_MAX (1024 * 1024)
#define RF_QUEUE_DEPTH_MAX 128
#define RF_DEFAULT_START_TIMEOUT 30
#define RF_KERNEL_TIMEOUT_AUTO UINT32_MAX
#define RF_KERNEL_TIMEOUT_SLACK 60
#define RF_DEFAULT_HEARTBEAT_TIMEOUT 10
#define RF_DEFAULT_CRASH_LIMIT 5
#define RF_DEFAULT_CRASH_WINDOW 60
/* node ids (and a quarter as many open files) that outlive a plugin
 * host or a worker: at most 3.1 MiB of records (ipc/msg.h) */
#define RF_DEFAULT_RESTORE_NODES 4096
#define RF_CRASH_LIMIT_MAX 32
/* Limits a tenant gets when its policy sets none: memory_max, and for
 * pids_max this many tasks beyond one thread per queue. */
#define RF_DEFAULT_MEMORY_MAX (1ULL << 30)
#define RF_DEFAULT_PIDS_SPARE 64
/* and a cpu group of the default weight (v2 cpu.weight 100) */
#define RF_DEFAULT_CPU_WEIGHT 100

/*
 * Parse @len bytes of @text, naming @file in errors. On success returns 0
 * and a policy the caller frees with rf_policy_free(). On failure returns
 * -EINVAL and writes every error found (one per line, "FILE:LINE: ...") to
 * @err, truncated to @errlen.
 */
int rf_policy_parse(const char *file, const char *text, size_t len, struct rf_policy **out,
		    char *err, size_t errlen);

/* Read @path and parse it. Returns 0, -EINVAL (parse errors in @err) or
 * another -errno when the file cannot be read (also described in @err). */
int rf_policy_load(const char *path, struct rf_policy **out, char *err, size_t errlen);

void rf_policy_free(struct rf_policy *p);

/* readfile.c: the text of the policy file @path (NUL-terminated, freed by
 * the caller) if it is a regular file of at most @max bytes; never waits
 * on a FIFO or a device. Returns 0, -ENOTSUP (not a regular file), -EFBIG
 * (larger than @max) or another -errno; rf_read_policy_error() says which
 * in words. */
int rf_read_policy_file(const char *path, size_t max, char **text, size_t *len);
const char *rf_read_policy_error(int r);

/* "4096", "64K", "1M", "2G" (powers of 1024). Returns 0 or -EINVAL/-ERANGE. */
int rf_parse_size(const char *s, uint64_t *out);

/* What a mount runs, for messages: "plugin NAME" or "program PATH" */
static inline const char *rf_mount_kind(const struct rf_mount_policy *m)
{
	return m->program[0] ? "program" : "plugin";
}
static inline const char *rf_mount_runs(const struct rf_mount_policy *m)
{
	return m->program[0] ? m->program : m->plugin;
}

/* Resolve a mount's plugin to a file: absolute paths stay, bare names
 * become DIR/NAME.so with DIR = the policy's plugin_dir; a program's mount
 * gives its program. Returns 0 or
 * -ENAMETOOLONG. */
int rf_policy_plugin_path(const struct rf_policy *p, const struct rf_mount_policy *m, char *out,
			  size_t outlen);

/* Whether @a and @b configure a mount the same way: every key compared,
 * the line of the section header not. */
bool rf_mount_policy_same(const struct rf_mount_policy *a, const struct rf_mount_policy *b);

/* The seccomp policy file that applies to @m: its own, or a program's
 * mount's RF_PROGRAM_POLICY, or the policy's global one. */
const char *rf_policy_seccomp_path(const struct rf_policy *p, const struct rf_mount_policy *m);

#endif /* RINGFENCE_POLICY_H */
