/* SPDX-License-Identifier: MIT */
/* The privileged broker: one process, one event loop, one tenant per mount. */
#ifndef RINGFENCE_BROKER_H
#define RINGFENCE_BROKER_H

#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fuse_uapi.h"
#include "log.h"
#include "policy.h"
#include "pool.h"

struct bufferevent;
struct event;

struct event_base;
struct io_uring_params;

/* What INIT settled for a connection. */
struct rf_conn_params {
	uint32_t minor;
	uint32_t max_write;
	uint32_t max_pages;
	uint32_t payload_size; /* per entry: max(8192, max_write, max_pages * page) */
	uint64_t flags; /* negotiated INIT flags, flags2 in the high half */
	enum rf_transport transport; /* 0 (AUTO) until INIT has settled it */
	bool bufpool_offered; /* 7.46+ on io-uring: FUSE_HAS_IO_URING_BUFPOOL */
	bool bufpool; /* ... and the policy lets the queues use them */
	bool zero_copy; /* ... and zero-copy queues, which need the pools */
	uint16_t kernel_timeout; /* seconds: the kernel's request timeout, 0: none */
	char why[160]; /* how the transport was chosen, for the log */
};

#define RF_CG_MAX 4

/* The tenant's cgroups: one per hierarchy used (v2: one; v1: up to three). */
struct rf_cgroup {
	int ngroups;
	char dir[RF_CG_MAX][256];
	char procs[RF_CG_MAX][280];
	char mechanism[64]; /* "cgroup2(memory,pids,cpu)", "cgroup1(...)", "rlimits" */
	bool pids; /* a pids controller enforces the task limit */
	bool sched_idle; /* the worker runs SCHED_IDLE in its own cpu group */
};

/*
 * A tenant's life, one state at a time (state.c: the table of the steps
 * each may take, and the word ringfencectl status shows for it). The
 * first four are what status says and what a broker hands over.
 */
enum rf_tenant_state {
	RF_TENANT_STOPPED = 0, /* nothing mounted, no worker */
	RF_TENANT_STARTING, /* a worker started, its READY awaited */
	RF_TENANT_RUNNING, /* its worker serves */
	RF_TENANT_FAILED, /* given up, or never started: nothing serves */
	RF_TENANT_RESPONDING, /* the built-in EIO responder serves (status: failed) */
	RF_TENANT_RESPONDER_STARTING, /* crash loop: the responder started */
	RF_TENANT_RESPAWN_DUE, /* the worker died; its successor's timer runs */
	RF_TENANT_HOST_DUE, /* host_restart: the plugin host died, the keeper
			     * serves on; the next host's timer runs */
	RF_TENANT_HOST_STARTING, /* the next plugin host asked for, its READY awaited */
	RF_TENANT_HOST_LOOP, /* plugin hosts died too often: the worker is
			      * killed, its death a crash */
	RF_TENANT_UPG_KILLED, /* upgrade: the old worker (or plugin host) ends */
	RF_TENANT_UPG_TRIAL, /* the new plugin's, restoring strictly, READY awaited */
	RF_TENANT_UPG_ROLLBACK, /* that failed: the old plugin's, READY awaited */
	RF_TENANT_STOPPING, /* the worker is told to go; no successor */
	RF_TENANT_NSTATES
};

/* Facts of one worker process, reset when the next one is spawned. */
struct rf_worker_proc {
	bool sigkilled; /* the broker sent it SIGKILL */
	bool reaping; /* reading its last words: LOG and FAILED only */
	bool host_killed; /* asked its keeper to end its host (end_host, watchdog.c) */
	bool hb_host_ended; /* the heartbeat did, and no PING was answered since */
};

/* A queue's kicker (recovery.c). */
struct rf_kick {
	pid_t pid; /* while it runs, else 0 */
	unsigned int generation; /* the worker generation it kicks for */
	bool owed; /* a newer generation waits for a kick once it has gone */
};

struct rf_tenant {
	struct rf_broker *b;
	struct rf_mount_policy pol;
	unsigned int index; /* picks the pool's fixed address */
	enum rf_tenant_state state;
	char fail_reason[1024];
	uid_t uid;
	gid_t gid;
	int fuse_fd;
	bool mounted;
	uint32_t conn_id; /* /sys/fs/fuse/connections/<conn_id> */
	struct rf_conn_params conn;
	struct rf_cgroup cg;
	char disk_mechanism[32]; /* quota.c: "prjquota(ext4)", ..., "none" */
	int pool_fd;
	int state_fd; /* the plugin's state (policy state_size), or -1 */
	void *pool;
	struct rf_pool_geom geom;
	pid_t worker_pid;
	unsigned long long worker_start; /* its start time (/proc/PID/stat) */
	int ipc_fd;
	struct event *ipc_ev;
	/* the plugin host's channel: LOG, SECCOMP and FAILED, once each of
	 * the last two per host (host_msgs_seen) */
	int host_ipc_fd;
	struct event *host_ipc_ev;
	uint32_t host_msgs_seen;
	/* messages read from each channel since the watchdog's last tick:
	 * past RF_IPC_READS it waits for the next (spawn.c) */
	uint32_t ipc_reads, host_ipc_reads;
	bool ipc_waiting, host_ipc_waiting;
	uint64_t ipc_waits; /* ticks a channel waited so */
	struct event *start_ev; /* deadline for READY */
	uint32_t msgs_seen; /* RF_MSG_BIT()s of what the worker sent */
	time_t started;
	unsigned int restarts; /* by the operator (restart) */
	unsigned int crashes; /* worker deaths */
	unsigned int generation; /* of the current worker */
	unsigned int watchdog_kills;
	unsigned int heartbeat_kills;
	unsigned int outside_kills; /* deaths by signals the broker did not send */
	struct rf_worker_proc proc; /* the current worker's */
	uint64_t hb_seq; /* the last PING sent, per tenant, never reused */
	uint64_t hb_sent_seq; /* the PING awaiting its answer; 0: none */
	uint64_t hb_sent_ns;
	time_t deaths[RF_CRASH_LIMIT_MAX]; /* when the last deaths were, a ring */
	/* a worker's log lines: a token bucket (spawn.c), and what it dropped */
	struct log_rate log_rate;
	uint64_t log_dropped, log_dropped_told;
	struct rf_kick *kicks; /* recovery.c: one per queue */
	time_t kick_started;
	struct event *respawn_ev;
	/* upgrade.c: ringfencectl upgrade, from the kill of the old worker to
	 * the new one's READY (or the old plugin's, rolled back): the
	 * RF_TENANT_UPG_* states */
	bool upg_host; /* of the plugin host alone (host_restart) */
	char upg_old[RF_POLICY_PATH_MAX]; /* the plugin to roll back to */
	char upg_why[512]; /* why the new one did not serve */
	struct bufferevent *upg_conn; /* the control connection waiting */
	uint64_t upg_nodes0, upg_files0; /* restored_* before it */
};

/*
 * The broker is three layers, each calling only the ones below: the
 * control plane (main.c, reexec.c, control.c), tenants (tenant.c,
 * upgrade.c) and worker processes (recovery.c, spawn.c), with the pure
 * and system files under all three. What a lower layer tells an upper one
 * goes through what the upper one registered: these events of a worker's
 * life (tenant.c's rf_tenant_events), and the broker's hooks below.
 * tests/check-calls.py fails on any call circle among broker files.
 */
struct rf_worker_events {
	/* READY came: the worker serves, or (@host_only) its next plugin
	 * host does */
	void (*ready)(struct rf_tenant *t, bool host_only);
	/* during an upgrade a plugin host died, or the worker was reaped:
	 * true if that was the upgrade's own doing (no crash) */
	bool (*upgrade_host_died)(struct rf_tenant *t);
	bool (*upgrade_reaped)(struct rf_tenant *t);
	/* a worker died, a crash: a successor, or the tenant given up */
	void (*died)(struct rf_tenant *t, bool conn_gone);
	/* no successor could be started */
	void (*lost)(struct rf_tenant *t);
};

struct rf_broker {
	struct event_base *base;
	const struct rf_worker_events *events;
	/* control.c's answer to a waiting control connection (rf_control_reply),
	 * for upgrade.c; reexec.c's request (rf_reexec_request), for control.c */
	void (*answer)(struct rf_broker *b, struct bufferevent **conn, const char *text);
	int (*reexec_request)(struct rf_broker *b, char *why, size_t len);
	struct rf_policy *policy;
	const char *config; /* the policy file's path, for reloads */
	pid_t pid;
	int debug;
	char self[PATH_MAX]; /* this binary's path, re-executed by upgrade-broker */
	unsigned int handovers; /* times this broker re-executed itself */
	/* reexec.c: an upgrade-broker waiting for the tenants to settle */
	bool hov_pending;
	bool hov_waited; /* "waiting until ..." said */
	struct bufferevent *hov_conn; /* the control peer to answer, or NULL (SIGUSR2) */
	struct event *hov_ev;
	uint64_t hov_deadline_ns;
	struct rf_tenant **tenants;
	size_t ntenants;
	uint32_t nqueues; /* possible CPUs */
	int foreground;
	unsigned int bench; /* RF_BENCH_*, from --bench-unsafe */
	char worker_path[PATH_MAX];
	char workers_file[PATH_MAX + 16]; /* <control_socket>.workers */
	int ctl_fd;
	struct event *ctl_ev;
	unsigned int ctl_conns; /* control connections open */
	bool ctl_paused; /* no accepting: a broker upgrade is waiting */
	struct event *watchdog_ev;
	bool stopping;
	int exit_status;
};

/* init.c: FUSE_INIT negotiation, pure. Returns 0 and fills @out (the reply
 * body) and @cp, or -EPROTO (bad INIT) / -EOPNOTSUPP (transport = uring
 * but the kernel offers no FUSE io-uring), with the reason in cp->why. */
int rf_init_negotiate(const struct fuse_init_in *in, const struct rf_mount_policy *p,
		      uint32_t max_pages_limit, struct fuse_init_out *out,
		      struct rf_conn_params *cp);

/* mount.c: mount @t's mountpoint and answer FUSE_INIT (0 or -errno);
 * unmount it (lazily if busy) and close /dev/fuse; abort its connection
 * through fusectl; a clone of its /dev/fuse for one classic queue (the fd,
 * or -errno). */
int rf_mount_attach(struct rf_tenant *t);
void rf_mount_detach(struct rf_tenant *t);
int rf_mount_abort(struct rf_tenant *t);
/* @file of @t's connection in fusectl, opened with @flags (the fd, or
 * -errno; -ENOENT before the connection is known); its path in @path */
int rf_mount_fusectl(const struct rf_tenant *t, const char *file, int flags, char *path,
		     size_t len);
/* Whether @t's FUSE connection is still up: the kernel's word (a worker's
 * exit status saying it ended is not taken for it). */
bool rf_mount_connected(const struct rf_tenant *t);
int rf_mount_clone(struct rf_tenant *t);
uint32_t rf_possible_cpus(void);

/* pool.c */
int rf_pool_create(struct rf_tenant *t);
/* The mount's fixed pool address; map @t's pool memfd there (t->pool):
 * 0, or -errno (-EEXIST: placed elsewhere). Bytes of @t's state memfd. */
void *rf_pool_addr(const struct rf_tenant *t);
int rf_pool_map(struct rf_tenant *t);
uint64_t rf_pool_state_bytes(const struct rf_tenant *t);
void rf_pool_destroy(struct rf_tenant *t);
/* (Re)write the pool's header from the broker's records: at creation, and
 * before each worker starts, so that no successor reads what a dead worker
 * wrote there. */
void rf_pool_write_header(struct rf_tenant *t);
/* Before worker generation @generation starts: clear what no worker
 * playing by the rules could have left, so that a successor is never
 * blamed (rf_pool_verify) for its predecessor's writes: heartbeat answers
 * newer than @hb_seq (set to 0, none), and slot records in no known state
 * or of generation @generation or later (set to none, generation 0).
 * Records of earlier generations in known states stay: the successor
 * adopts what they name. Returns how many fields it cleared. Pure. */
unsigned int rf_pool_clean(void *pool, const struct rf_pool_geom *g, uint32_t generation,
			   uint64_t hb_seq);
/* Whether what a worker can write in @pool could have come from a worker
 * that plays by the rules: the header as the broker wrote it (@g,
 * @transport), slot records in a known state and of no generation after
 * @generation, fetched no later than @now_ns, heartbeats no newer than the
 * last PING sent (@hb_seq). NULL, or what is impossible, in @why. Pure: it
 * reads the pool, touches nothing. */
const char *rf_pool_verify(const void *pool, const struct rf_pool_geom *g, uint32_t transport,
			   uint32_t generation, uint64_t hb_seq, uint64_t now_ns, char *why,
			   size_t len);

/* ring.c: a fenced ring on @slot0_fd with the pool as fixed buffer 0 and,
 * if @zero_copy, @depth empty buffer slots after it (RF_BUF_INDEX_ZC);
 * FUSE's io-uring commands (URING_CMD) only if @fuse_cmds.
 * Returns the ring fd (the broker must close it as soon as the worker has
 * inherited it) or -errno. */
int rf_ring_create(int slot0_fd, void *pool, size_t pool_size, uint32_t depth, bool zero_copy,
		   bool fuse_cmds, struct io_uring_params *params);

/* spawn.c */
int rf_worker_spawn(struct rf_tenant *t);
/* Drop the timer of a next worker or plugin host (respawn_ev), if any. */
void rf_respawn_cancel(struct rf_tenant *t);
void rf_worker_ipc_cb(int fd, short what, void *arg);
void rf_host_ipc_cb(int fd, short what, void *arg);
void rf_worker_reaped(struct rf_tenant *t, int status);
void rf_worker_stop(struct rf_tenant *t);
/* Kill the worker for breaking the rules (@why goes to the log and the
 * tenant's reason); its death is handled like any other. */
void rf_worker_kill(struct rf_tenant *t, const char *why);
/* SIGKILL to @t's worker, remembered as the broker's own (no outside
 * kill, rf_worker_reaped). */
void rf_worker_sigkill(struct rf_tenant *t);
/* With host_restart, while the worker serves: ask the keeper to end its
 * plugin host (HOST_REPLACE), whose death it then reports; false where
 * the host cannot be ended alone (the caller kills the worker). */
bool rf_host_end(struct rf_tenant *t);
/* Once a second (the watchdog): a channel that waited for its budget of
 * reads is read again. */
void rf_worker_ipc_tick(struct rf_tenant *t);

/* phase.c: a channel's rules, one per message type it may carry: when
 * it may come, and what handles it. */
#define RF_MSG_BIT(type) (1U << (type))
struct rf_msg;
enum {
	RF_SAYS_ONCE = 1 << 0, /* once per process (SECCOMP, FAILED: it dies after) */
	RF_SAYS_AFTER_HELLO = 1 << 1, /* only once HELLO has come */
	RF_SAYS_BEFORE_READY = 1 << 2, /* only until READY has come */
	RF_SAYS_DEAD_TOO = 1 << 3, /* handled from a dead process too (its last words) */
};
struct rf_says {
	uint32_t type;
	unsigned int when;
	void (*handle)(struct rf_tenant *t, const struct rf_msg *m);
};
/* NULL if a process that has sent the types in @seen (a mask of
 * RF_MSG_BIT()s) may send @type now, else why not (@none: no rule names
 * it). */
const char *rf_says_refusal(const struct rf_says *rules, size_t n, uint32_t type, uint32_t seen,
			    const char *none);
/* @m checked against @rules and handled, @seen updated; NULL once handled
 * or dropped (from a @dead process, a type not RF_SAYS_DEAD_TOO), else
 * why it may not come now, and nothing was done. */
const char *rf_says_handle(const struct rf_says *rules, size_t n, struct rf_tenant *t,
			   const struct rf_msg *m, uint32_t *seen, bool dead, const char *none);
/* spawn.c's rules: a worker's channel, a plugin host's (@seen its own) */
const char *rf_worker_msg_refusal(uint32_t type, uint32_t seen);
const char *rf_host_msg_refusal(uint32_t type, uint32_t seen);

/* tenant.c */
int rf_tenant_start(struct rf_tenant *t);
/* No successor: abort the connection (waiting clients get an error at
 * once), detach the mount, and mark the tenant failed. */
void rf_tenant_give_up(struct rf_tenant *t);
void rf_tenant_stop(struct rf_tenant *t);
/* What the tenant layer does at each event of a worker's life. */
extern const struct rf_worker_events rf_tenant_events;
int rf_tenant_restart(struct rf_tenant *t);
struct rf_tenant *rf_tenant_add(struct rf_broker *b, const struct rf_mount_policy *pol);
void rf_tenant_remove(struct rf_tenant *t);
struct rf_tenant *rf_tenant_find(struct rf_broker *b, const char *name);
/* Re-read the policy file and apply the difference; a file with errors is
 * refused whole. Writes a one-line summary or the errors to @msg. */
int rf_tenant_reload(struct rf_broker *b, char *msg, size_t len);
/* exit 1 once every tenant has failed */
void rf_tenant_check_alive(struct rf_broker *b);

/* notify.c: tell systemd (Type=notify), if it is listening */
void rf_notify(const char *msg);

/* config.c: load a policy and the seccomp policies it names, errors in
 * @err (0 or -errno); parse one seccomp policy, its rules to @print if
 * set or its errors (FILE:LINE:COL) to @err. */
int rf_config_load(const char *path, struct rf_policy **out, char *err, size_t errlen);
int rf_config_seccomp(const char *path, FILE *print, char *err, size_t errlen);
/* Pure: whether a mount that was @om under @op must restart to become @nm
 * under @np (every key, and the globals it takes: seccomp_policy,
 * plugin_dir); the line of its section does not count. */
bool rf_config_changed(const struct rf_policy *op, const struct rf_mount_policy *om,
		       const struct rf_policy *np, const struct rf_mount_policy *nm);

/* users.c: the uid and gid of @t's worker: the policy's named user, or a
 * dynamic one from user_range (recorded in users_file); refused when
 * another tenant has the same uid and not both set shared_user. An empty
 * source of a dynamic user is handed to it. 0 or -errno, said why. */
int rf_users_resolve(struct rf_tenant *t);
/* Whether a worker running as @uid:@gid (no supplementary groups) can use
 * @m's source as the policy says (write it, unless read_only): 0, or 1
 * with a sentence in @msg naming the problem and its fix. */
int rf_users_source_problem(const struct rf_mount_policy *m, uid_t uid, gid_t gid, char *msg,
			    size_t len);
/* The uid and gid @m's worker would run as, taking nothing (a dynamic
 * user users_file lacks is the one it would get): 0, or -errno and why. */
int rf_users_peek(const struct rf_policy *p, const struct rf_mount_policy *m, uid_t *uid,
		  gid_t *gid, char *msg, size_t len);
/* --check: rf_users_peek then rf_users_source_problem (an empty source a
 * dynamic user would be handed is no problem); 0, or 1 with @msg. */
int rf_users_check(const struct rf_policy *p, const struct rf_mount_policy *m, char *msg,
		   size_t len);

/* quota.c: apply disk_max and inodes_max to @t's source through the
 * kernel (project quotas, btrfs qgroups, tmpfs user quotas), or say why
 * they cannot be (-EOPNOTSUPP, t->fail_reason). Needs t->uid. */
int rf_quota_setup(struct rf_tenant *t);
/* Mount @m of policy @p could fill a file system another writable
 * tenant's source is on: its own source writable, no disk_max (nor
 * inodes_max where the file system has a fixed inode table), no
 * disk_shared. 1 with why in @msg, else 0. */
int rf_quota_shared_problem(const struct rf_policy *p, const struct rf_mount_policy *m, char *msg,
			    size_t len);

/* cgroup.c: create and fill the tenant's groups (0, or -errno when the
 * policy's limits cannot be applied); the child joins them before exec;
 * they are removed once the worker is gone. */
int rf_cgroup_setup(struct rf_tenant *t);
/* The same with the hierarchy version given (tests); the hierarchies and
 * the file naming the broker's own cgroup moved (tests). */
int rf_cgroup_setup_version(struct rf_tenant *t, int version);
void rf_cgroup_set_root(const char *root, const char *self_cgroup_file);
/* Tests: the fake v2 tree refuses to enable @controller (NULL: none). */
void rf_cgroup_test_refuse(const char *controller);
int rf_cgroup_child_join(const struct rf_cgroup *cg);
/* The tenant's task limit: the policy's pids_max, or by default
 * RF_DEFAULT_PIDS_SPARE beyond one thread per queue. A cgroup enforces it
 * where one can, the worker's RLIMIT_NPROC always. */
uint32_t rf_cgroup_pids_max(const struct rf_tenant *t);
/* The worker's RLIMIT_NPROC: the task limit where no pids controller
 * enforces it, else 0 (left as it is). Call after rf_cgroup_setup(). */
uint32_t rf_cgroup_nproc(const struct rf_tenant *t);
void rf_cgroup_remove(struct rf_tenant *t);

/* spawn.c: say how many of a worker's log lines were dropped since the
 * last time (called with the next line written, and once a second). */
void rf_worker_log_dropped(struct rf_tenant *t);

/* backoff.c, pure: record a death at @now (death number @crashes) in
 * @deaths, the ring of the last @limit; @recent counts those within
 * @window seconds, and @delay_ms is how long until a successor (0 for the
 * first), unless @recent reached @limit (crash_loop). */
struct rf_backoff {
	unsigned int recent;
	long delay_ms;
	bool crash_loop; /* @recent reached the limit: the EIO responder's turn */
};
struct rf_backoff rf_backoff_after_death(time_t *deaths, unsigned int limit, unsigned int window,
					 unsigned int crashes, time_t now);

/* recovery.c: after a worker death, schedule a successor (returns true)
 * or decline (false: crash loop, or the connection itself is gone); kick
 * every queue once a successor is ready. */
bool rf_recovery_plan(struct rf_tenant *t, bool conn_gone);
void rf_recovery_kick(struct rf_tenant *t);
/* Whether @pid, just reaped, was a kicker (it is forgotten then). */
bool rf_recovery_reaped(struct rf_broker *b, pid_t pid);
/* Kickers past their deadline get SIGKILL (once; one already inside its
 * request goes when the request ends). */
void rf_recovery_kick_deadline(struct rf_tenant *t);

/* watchdog.c: once a second, check what workers wrote in the pool, kill
 * workers holding a request past request_timeout or leaving a PING
 * unanswered (heartbeat_timeout), and run the kickers' deadline. */
void rf_watchdog_start(struct rf_broker *b);

/* orphans.c: workers a dead broker left. The file that records this
 * broker's workers (init), rewritten after each spawn and death (record),
 * removed at a clean exit (forget); at start, before anything is mounted,
 * kill the workers a previous broker recorded there and that still run. */
void rf_orphans_init(struct rf_broker *b);
void rf_orphans_record(struct rf_broker *b);
void rf_orphans_forget(struct rf_broker *b);
void rf_orphans_sweep(struct rf_broker *b);
/* The start time of @pid in clock ticks since boot. 0 or -errno. */
int rf_proc_starttime(pid_t pid, unsigned long long *start);

/* control.c */
int rf_control_open(struct rf_broker *b);
void rf_control_close(struct rf_broker *b);
/* Answer the control connection in *@conn with @text and close it (none
 * waiting: nothing); *@conn is NULL after. */
void rf_control_reply(struct rf_broker *b, struct bufferevent **conn, const char *text);
/* Stop accepting (a broker upgrade waits for the open connections to end),
 * and start again. */
void rf_control_pause(struct rf_broker *b, bool pause);
/* The new image: listen on the inherited @fd again (0 or -errno), and
 * answer @reply_fd (if >= 0) with @text. */
int rf_control_adopt(struct rf_broker *b, int fd, int reply_fd, const char *text);

/* handover.c: the broker's state as text, for the image that replaces it
 * (reexec.c). Pure. */
#define RF_HANDOVER_MAGIC "ringfence-broker-state"
/* format 2: one state per tenant; 1 (still read): four states, and the
 * responder and a stopping tenant as flags beside them */
#define RF_HANDOVER_FORMAT 2
struct rf_handover {
	int pid; /* the process: the same before and after exec */
	int ipc_version, pool_version; /* of the running workers */
	unsigned int nqueues, bench, handovers;
	int foreground, debug;
	int ctl_fd, reply_fd; /* the control socket; the peer to answer, or -1 */
	char writer[64]; /* the version that wrote it */
	char config[PATH_MAX];
	struct rf_policy *policy; /* its text kept */
	struct rf_tenant *tenants; /* policy, records and descriptor numbers */
	size_t ntenants;
};
/* Write @b's state (answer @reply_fd once resumed, -1: none) to @f: 0 or
 * -errno. Needs b->policy->text. */
int rf_handover_write(const struct rf_broker *b, int reply_fd, FILE *f);
/* Parse and check a state (from any broker: a field this build does not
 * know, a version of the workers' IPC or pool it does not speak, or a
 * record no broker could have written is refused); 0, or -EINVAL with the
 * line and the reason in @err. */
int rf_handover_parse(const char *text, size_t len, struct rf_handover *h, char *err,
		      size_t errlen);
void rf_handover_free(struct rf_handover *h);

/* reexec.c: ringfencectl upgrade-broker (the peer the caller leaves in
 * b->hov_conn is answered by the new image, or with the reason there was
 * none) and SIGUSR2: once no tenant is between states, re-execute the
 * broker's binary keeping every mount, pool and worker. 0, or -EBUSY with
 * @why. */
int rf_reexec_request(struct rf_broker *b, char *why, size_t len);
/* --resume-check FD: whether this build can take over the state in FD;
 * prints why not. Exit status. */
int rf_reexec_check(int fd);
/* --resume FD, in the new image: read the state (0, or -errno and @err),
 * then take over the control socket, the tenants and their workers. */
int rf_reexec_load(int fd, struct rf_handover *h, char *err, size_t errlen);
void rf_reexec_adopt(struct rf_broker *b, struct rf_handover *h);

/* upgrade.c: ringfencectl upgrade TENANT [PLUGIN]: a new worker generation
 * (of PLUGIN, a name or an absolute path) through the restore hand-over;
 * 0, or -errno with the reason in @why. Then, from the worker's life
 * cycle: a worker of @t was reaped (true: the upgrade took care of it, no
 * crash); READY came; the tenant stops (a waiting peer is told). */
int rf_upgrade_start(struct rf_tenant *t, const char *plugin, char *why, size_t len);
bool rf_upgrade_reaped(struct rf_tenant *t);
/* With host_restart the upgrade replaces the plugin host alone: its death
 * (the upgrade's, or a new plugin's that did not take over) is the
 * upgrade's to settle (true), or a crash from here (false). */
bool rf_upgrade_host_died(struct rf_tenant *t);
/* spawn.c: ask the keeper for its next plugin host (HOST_START), of the
 * policy's plugin file opened afresh if @plugin_file; 0 or -errno */
int rf_host_start(struct rf_tenant *t, bool plugin_file);
void rf_upgrade_ready(struct rf_tenant *t);
void rf_upgrade_abandon(struct rf_tenant *t, const char *why);

/* state.c: a state's name ("host due"); the one of the first four that
 * status shows for it; whether @from may step to @to; the step (a step
 * the table does not allow is logged as the broker's bug, and taken);
 * whether the tenant is ending (no successor: stopping, stopped, failed),
 * upgrading (RF_TENANT_UPG_*), served by the EIO responder (starting or
 * serving), or settled (none of its processes between
 * two states: a broker may hand it over). */
const char *rf_tenant_state_name(enum rf_tenant_state s);
enum rf_tenant_state rf_tenant_state_shown(enum rf_tenant_state s);
bool rf_tenant_state_may(enum rf_tenant_state from, enum rf_tenant_state to);
void rf_tenant_enter(struct rf_tenant *t, enum rf_tenant_state s);
bool rf_tenant_ending(const struct rf_tenant *t);
bool rf_tenant_upgrading(const struct rf_tenant *t);
bool rf_tenant_responder(const struct rf_tenant *t);
bool rf_tenant_settled(enum rf_tenant_state s);

#endif /* RINGFENCE_BROKER_H */
