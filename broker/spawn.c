// SPDX-License-Identifier: MIT
/*
 * Starting a worker, answering it, and burying it.
 *
 * Ring descriptors cannot cross SCM_RIGHTS, so the worker inherits them
 * across fork+exec at fixed numbers; the broker closes its copies as soon as
 * the child exists, so that a dying worker takes its rings with it (a kept
 * reference would leave clients in D state). The pool memfd travels in the
 * CONFIG message.
 *
 * Everything a worker sends is checked: its type must be allowed in the
 * worker's phase, its size exact, its strings terminated, and it may carry
 * no descriptors. The first bad message gets the worker killed. Its plugin
 * host has a channel of its own (CONFIG's last descriptor), on which only
 * LOG, SECCOMP and FAILED are taken; a bad message there ends the host
 * alone where host_restart can replace it. The broker reads at most
 * RF_IPC_READS messages of each channel between two watchdog ticks: a
 * flood waits in its socket, its sender blocks, and the broker's share of
 * a CPU stays bounded.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "msg.h"

/* In the worker: fd 3 is the IPC socket, rings follow from fd 4. */
#define RF_WORKER_IPC_FD 3
#define RF_WORKER_RING_FD0 4

static void stop_start_timer(struct rf_tenant *t)
{
	if (t->start_ev) {
		event_free(t->start_ev);
		t->start_ev = NULL;
	}
}

static void start_timeout_cb(int fd, short what, void *arg)
{
	struct rf_tenant *t = arg;

	(void)fd;
	(void)what;
	stop_start_timer(t);
	snprintf(t->fail_reason, sizeof(t->fail_reason),
		 "worker did not become ready within start_timeout = %u s", t->pol.start_timeout);
	log_warnx("%s: %s", t->pol.name, t->fail_reason);
	rf_worker_sigkill(t);
}

void rf_worker_sigkill(struct rf_tenant *t)
{
	if (t->worker_pid <= 0)
		return;
	t->proc.sigkilled = true;
	kill(t->worker_pid, SIGKILL);
}

/* No more reading of a channel (@ev), and with @fd, none at all. */
static void chan_stop(struct event **ev)
{
	if (*ev) {
		event_free(*ev);
		*ev = NULL;
	}
}

static void chan_close(int *fd, struct event **ev)
{
	chan_stop(ev);
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

void rf_worker_kill(struct rf_tenant *t, const char *why)
{
	log_warnx("%s: killing worker %d: %s", t->pol.name, (int)t->worker_pid, why);
	snprintf(t->fail_reason, sizeof(t->fail_reason), "killed by the broker: %s", why);
	rf_worker_sigkill(t);
	chan_stop(&t->ipc_ev);
	chan_stop(&t->host_ipc_ev);
}

/*
 * With host_restart a plugin host that holds a request too long, leaves a
 * PING unanswered or breaks its channel's rules is the plugin's doing: the
 * keeper is asked to end it (HOST_REPLACE) and settles what it held as
 * for any host's death, the rings never closing. Not during an upgrade
 * (whose own HOST_REPLACE it would be taken for), nor in the responder,
 * nor twice in a row without the keeper reporting the death or a PING
 * answered since (the heartbeat): then it is the keeper that does not do
 * its part, and it is killed whole.
 */
bool rf_host_end(struct rf_tenant *t)
{
	if (!t->pol.host_restart || t->state != RF_TENANT_RUNNING || t->proc.host_killed ||
	    t->proc.hb_host_ended || t->worker_pid <= 0 ||
	    rf_msg_send(t->ipc_fd, RF_MSG_HOST_REPLACE, 0, NULL, 0, NULL, 0) < 0)
		return false;
	t->proc.host_killed = true;
	return true;
}

/* Runs in the child between fork and exec: only async-signal-safe calls. */
static void child_exec(const char *path, char *title, int ipc_fd, const int *ring_fds,
		       uint32_t nrings, const struct rf_cgroup *cg)
{
	/* argv[0] is the keeper's title in ps (worker/title.c) */
	char *const argv[] = { title, (char *)"--ipc-fd", (char *)"3", NULL };
	char *const envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	int high[1 + 4096];
	sigset_t none;
	uint32_t i;
	int nul;

	/* its own session: terminal signals meant for the broker stay there */
	setsid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the OOM killer's first pick, before the broker or anyone else
	 * (raising it takes no privilege) */
	nul = open("/proc/self/oom_score_adj", O_WRONLY);
	if (nul < 0 || write(nul, "1000", 4) != 4)
		_exit(125);
	close(nul);
	/* limits first: nothing of the worker runs outside its cgroups */
	if (rf_cgroup_child_join(cg) < 0)
		_exit(125);
	/* in a cpu group of its own, the worker (and every thread it makes)
	 * runs SCHED_IDLE: the group keeps its share, and a CPU that runs
	 * only this worker counts as idle when a client wakes (cgroup.c) */
	if (cg->sched_idle && sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){ 0 }) < 0)
		_exit(125);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Move every fd we keep above the target range, then down into place;
	 * dup2 clears FD_CLOEXEC on the copies the worker must inherit. */
	high[0] = fcntl(ipc_fd, F_DUPFD_CLOEXEC, 64 + (int)nrings + 8);
	for (i = 0; i < nrings; i++)
		high[1 + i] = fcntl(ring_fds[i], F_DUPFD_CLOEXEC, 64 + (int)nrings + 8);
	for (i = 0; i <= nrings; i++)
		if (high[i] < 0)
			_exit(126);
	if (dup2(high[0], RF_WORKER_IPC_FD) < 0)
		_exit(126);
	for (i = 0; i < nrings; i++)
		if (dup2(high[1 + i], RF_WORKER_RING_FD0 + (int)i) < 0)
			_exit(126);
	close_range(RF_WORKER_RING_FD0 + nrings, ~0U, 0);
	/* the broker's stdin, stdout and stderr (its log, a terminal, the
	 * journal) are not the worker's to write: it speaks through LOG,
	 * which the broker escapes and rate-limits */
	nul = open("/dev/null", O_RDWR);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
		_exit(126);
	if (nul > 2)
		close(nul);
	execve(path, argv, envp);
	_exit(127);
}

/* debug = yes with core_dir: the directory the plugin host dumps core
 * into, the tenant's user's alone (made if missing, never through a
 * symbolic link). 0, or -errno, logged. */
static int core_dir_ready(struct rf_tenant *t)
{
	const char *dir = t->pol.core_dir;
	int fd, r = 0;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		r = -errno;
	fd = r ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!r && fd < 0)
		r = -errno;
	if (!r && (fchown(fd, t->uid, t->gid) < 0 || fchmod(fd, 0700) < 0))
		r = -errno;
	if (fd >= 0)
		close(fd);
	if (r < 0)
		log_warnx("%s: core_dir %s: %s (a directory, not a symbolic link)", t->pol.name,
			  dir, strerror(-r));
	return r;
}

/*
 * The connection's count of requests the kernel has not ended, for a
 * successor to read once its set-up is done, before it finishes what the
 * dead worker left: it bounds how many requests no worker received, and so
 * how many ids the successor asks the kernel for (worker/keeper/rescue.c).
 * Read then, not now: the dead worker's ring is torn down in the kernel's
 * own time, and until then a request can still go to one of its idle
 * entries. -1 where fusectl has no such file: the successor then asks for
 * every id it may.
 */
static int open_waiting(const struct rf_tenant *t)
{
	char path[128];
	int fd = rf_mount_fusectl(t, "waiting", O_RDONLY, path, sizeof(path));

	if (fd == -ENOENT && !t->conn_id)
		return -1;
	if (fd < 0)
		log_warnx("%s: %s: %s (its successor asks for every id)", t->pol.name, path,
			  strerror(-fd));
	return fd < 0 ? -1 : fd;
}

static int send_config(struct rf_tenant *t, const struct io_uring_params *params, int host_fd)
{
	struct rf_msg_config c;
	struct rf_msg_ring ring;
	uint32_t q;
	int r;

	memset(&c, 0, sizeof(c));
	c.version = RF_IPC_VERSION;
	c.transport = (uint32_t)t->conn.transport;
	c.nqueues = t->geom.nqueues;
	c.depth = t->geom.depth;
	c.max_write = t->conn.max_write;
	c.payload_size = t->geom.payload_size;
	c.pool_addr = (uint64_t)(uintptr_t)t->pool;
	c.pool_size = t->geom.total_size;
	c.qpool_size = t->geom.qpool_size;
	c.zero_copy = t->conn.zero_copy;
	c.uid = t->uid;
	c.gid = t->gid;
	c.proto_minor = t->conn.minor;
	c.init_flags_lo = (uint32_t)t->conn.flags;
	c.init_flags_hi = (uint32_t)(t->conn.flags >> 32);
	c.read_only = t->pol.read_only;
	c.max_file_size = t->pol.max_file_size;
	c.max_tasks = rf_cgroup_nproc(t);
	c.generation = t->generation;
	c.responder = t->state == RF_TENANT_RESPONDER_STARTING;
	c.bench = t->b->bench;
	c.ownership = t->pol.ownership;
	c.adopt = t->generation > 0 && t->conn.transport == RF_TRANSPORT_URING;
	snprintf(c.name, sizeof(c.name), "%s", t->pol.name);
	r = rf_policy_plugin_path(t->b->policy, &t->pol, c.plugin, sizeof(c.plugin));
	if (r < 0)
		return r;
	snprintf(c.source, sizeof(c.source), "%s", t->pol.source);
	c.program = t->pol.program[0] != '\0';
	snprintf(c.mountpoint, sizeof(c.mountpoint), "%s", t->pol.mountpoint);
	snprintf(c.options, sizeof(c.options), "%s",
		 c.program ? t->pol.program_args : t->pol.options);
	snprintf(c.seccomp_policy, sizeof(c.seccomp_policy), "%s",
		 rf_policy_seccomp_path(t->b->policy, &t->pol));
	c.state_size = t->state_fd >= 0 ? t->pol.state_size : 0;
	c.restore_size = t->state_fd >= 0 ? rf_restore_bytes(t->pol.restore_nodes) : 0;
	c.restore_nodes = c.restore_size ? t->pol.restore_nodes : 0;
	/* an upgrade's new plugin restores all, or ends before serving */
	c.restore_strict = t->state == RF_TENANT_UPG_TRIAL;
	c.host_restart = t->pol.host_restart && !c.responder;
	c.debug = t->pol.debug;
	if (t->pol.debug && !t->generation)
		log_warnx("%s: debug = yes: its plugin host may be traced and dumps core%s%s, "
			  "and no watchdog or heartbeat ends it; a tenant in development, not "
			  "for production",
			  t->pol.name, t->pol.core_dir[0] ? " into " : "", t->pol.core_dir);
	if (t->pol.debug && t->pol.core_dir[0]) {
		r = core_dir_ready(t);
		if (r < 0)
			return r;
		snprintf(c.core_dir, sizeof(c.core_dir), "%s", t->pol.core_dir);
	}
	{
		/* the pool, the state if any, the waiting count if any, the
		 * host's channel last */
		int fds[4], n = 0, waiting = c.adopt ? open_waiting(t) : -1;

		c.waiting = waiting >= 0;
		fds[n++] = t->pool_fd;
		if (t->state_fd >= 0)
			fds[n++] = t->state_fd;
		if (waiting >= 0)
			fds[n++] = waiting;
		fds[n++] = host_fd;
		r = rf_msg_send(t->ipc_fd, RF_MSG_CONFIG, 0, &c, sizeof(c), fds, n);
		if (waiting >= 0)
			close(waiting);
	}
	if (r < 0)
		return r;
	for (q = 0; q < t->geom.nqueues; q++) {
		memset(&ring, 0, sizeof(ring));
		ring.qid = q;
		ring.fd = RF_WORKER_RING_FD0 + (int32_t)q;
		ring.params = params[q];
		r = rf_msg_send(t->ipc_fd, RF_MSG_RING, q, &ring, sizeof(ring), NULL, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

int rf_worker_spawn(struct rf_tenant *t)
{
	uint32_t nq = t->geom.nqueues, q, made = 0;
	unsigned int cleared;
	struct io_uring_params *params;
	int *ring_fds, *clones = NULL;
	char title[32 + RF_POLICY_NAME_MAX];
	int sv[2], hv[2] = { -1, -1 }, r;
	pid_t pid;

	snprintf(title, sizeof(title), RF_WORKER_TITLE, "keeper", t->pol.name);
	/* whatever the last worker wrote in the header, this one reads ours;
	 * and it answers only for what it writes itself */
	rf_pool_write_header(t);
	cleared = rf_pool_clean(t->pool, &t->geom, t->generation, t->hb_seq);
	if (cleared)
		log_warnx("%s: pool: cleared %u heartbeat answers and slot records that the last "
			  "worker left and no worker could have written",
			  t->pol.name, cleared);
	params = calloc(nq, sizeof(*params));
	ring_fds = calloc(nq, sizeof(*ring_fds));
	if (!params || !ring_fds) {
		r = -ENOMEM;
		goto out;
	}
	if (t->conn.transport == RF_TRANSPORT_CLASSIC) {
		/* One cloned device per queue; each ring holds its clone as
		 * fixed file 0, so the worker never owns a /dev/fuse fd. */
		clones = calloc(nq, sizeof(*clones));
		if (!clones) {
			r = -ENOMEM;
			goto out;
		}
		for (q = 0; q < nq; q++)
			clones[q] = -1;
		for (q = 0; q < nq; q++) {
			clones[q] = rf_mount_clone(t);
			if (clones[q] < 0) {
				r = clones[q];
				goto close_rings;
			}
		}
	}
	for (q = 0; q < nq; q++, made++) {
		int slot0 = clones ? clones[q] : t->fuse_fd;

		r = rf_ring_create(slot0, t->pool, t->geom.total_size, t->geom.depth,
				   t->conn.zero_copy, t->conn.transport == RF_TRANSPORT_URING,
				   &params[q]);
		if (r < 0) {
			log_warnx("%s: ring for queue %u: %s", t->pol.name, q, strerror(-r));
			goto close_rings;
		}
		ring_fds[q] = r;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		log_warn("%s: socketpair", t->pol.name);
		goto close_rings;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, hv) < 0) {
		r = -errno;
		log_warn("%s: socketpair", t->pol.name);
		close(sv[0]);
		close(sv[1]);
		goto close_rings;
	}
	/* The worker starts in namespaces of its own: it is PID 1 of a new
	 * PID namespace, with no network, no IPC objects, its own hostname and
	 * a mount namespace in which it builds its root. */
	pid = (pid_t)syscall(SYS_clone,
			     (t->b->bench & RF_BENCH_NO_SANDBOX
				      ? 0
				      : CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
						CLONE_NEWPID) |
				     SIGCHLD,
			     NULL, NULL, NULL, 0);
	if (pid < 0) {
		r = -errno;
		log_warn("%s: clone the worker", t->pol.name);
		close(sv[0]);
		close(sv[1]);
		close(hv[0]);
		close(hv[1]);
		goto close_rings;
	}
	if (pid == 0)
		child_exec(t->b->worker_path, title, sv[1], ring_fds, nq, &t->cg);
	close(sv[1]);
	/* the broker never waits on a worker: a worker that stops reading
	 * makes a send fail (EAGAIN), not the event loop stall */
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(hv[0], F_SETFL, O_NONBLOCK);
	t->worker_pid = pid;
	memset(&t->proc, 0, sizeof(t->proc));
	if (rf_proc_starttime(pid, &t->worker_start) < 0)
		t->worker_start = 0;
	rf_orphans_record(t->b);
	t->ipc_fd = sv[0];
	t->host_ipc_fd = hv[0];
	t->hb_sent_seq = 0;
	t->msgs_seen = 0;
	t->host_msgs_seen = 0;
	t->ipc_reads = t->host_ipc_reads = 0;
	t->ipc_waiting = t->host_ipc_waiting = false;
	t->started = time(NULL);
	r = send_config(t, params, hv[1]);
	close(hv[1]);
	if (r < 0) {
		log_warnx("%s: send configuration to worker %d: %s", t->pol.name, (int)pid,
			  strerror(-r));
		rf_worker_sigkill(t);
		r = 0; /* reaped through SIGCHLD like any other death */
	}
	t->ipc_ev = event_new(t->b->base, t->ipc_fd, EV_READ | EV_PERSIST, rf_worker_ipc_cb, t);
	t->host_ipc_ev =
		event_new(t->b->base, t->host_ipc_fd, EV_READ | EV_PERSIST, rf_host_ipc_cb, t);
	if (!t->ipc_ev || event_add(t->ipc_ev, NULL) < 0 || !t->host_ipc_ev ||
	    event_add(t->host_ipc_ev, NULL) < 0)
		fatalx("event_new");
	{
		struct timeval tv = { .tv_sec = t->pol.start_timeout };

		t->start_ev = evtimer_new(t->b->base, start_timeout_cb, t);
		if (!t->start_ev || evtimer_add(t->start_ev, &tv) < 0)
			fatalx("evtimer_new");
	}
	log_info("%s: worker %d started (%u queue%s x %u entries, %s transport)", t->pol.name,
		 (int)pid, nq, nq == 1 ? "" : "s", t->geom.depth,
		 rf_transport_name(t->conn.transport));
close_rings:
	/* The worker has its own copies now; keeping ours would turn a worker
	 * crash into unkillable clients. */
	for (q = 0; q < made; q++)
		close(ring_fds[q]);
	if (clones)
		for (q = 0; q < nq; q++)
			if (clones[q] >= 0)
				close(clones[q]);
out:
	free(clones);
	free(ring_fds);
	free(params);
	return r;
}

/* A worker may log RF_LOG_BURST lines at once and RF_LOG_RATE a second
 * after that; the rest are counted, not written, so that one tenant cannot
 * flood the host's log or keep the broker busy writing it. */
#define RF_LOG_BURST 500
#define RF_LOG_RATE 100

static bool log_allowed(struct rf_tenant *t)
{
	if (!log_rate_take(&t->log_rate, rf_now_ns() / 1000000, RF_LOG_BURST, RF_LOG_RATE)) {
		t->log_dropped++;
		return false;
	}
	rf_worker_log_dropped(t);
	return true;
}

void rf_worker_log_dropped(struct rf_tenant *t)
{
	if (t->log_dropped == t->log_dropped_told)
		return;
	log_warnx("%s: worker: %llu log lines dropped (more than %d a second)", t->pol.name,
		  (unsigned long long)(t->log_dropped - t->log_dropped_told), RF_LOG_RATE);
	t->log_dropped_told = t->log_dropped;
}

static void host_died(struct rf_tenant *t, const struct rf_msg_host_died *d);
static void ipc_drain(struct rf_tenant *t, int fd, struct event **ev, event_callback_fn cb);

/* What either channel may say: a log line, a trapped call, a start-up
 * failure (@who's, "worker" or "plugin host"). */
static void said_log(struct rf_tenant *t, const struct rf_msg *m)
{
	const struct rf_msg_log *l = (const struct rf_msg_log *)m->payload;
	int level = l->level <= RF_LOG_DEBUG ? (int)l->level : RF_LOG_INFO;
	char line[1024];

	if (!log_allowed(t))
		return;
	log_escape(l->line, line, sizeof(line));
	log_msg(level < RF_LOG_ERR ? RF_LOG_ERR : level, "%s: worker: %s", t->pol.name, line);
}

static void said_seccomp(struct rf_tenant *t, const struct rf_msg *m)
{
	struct rf_msg_seccomp sc;
	char *name;

	memcpy(&sc, m->payload, sizeof(sc));
	name = seccomp_syscall_resolve_num_arch(sc.arch, sc.nr);
	snprintf(t->fail_reason, sizeof(t->fail_reason),
		 "seccomp: %s(0x%llx, 0x%llx, 0x%llx, 0x%llx, 0x%llx, 0x%llx) denied",
		 name ? name : "?", (unsigned long long)sc.args[0], (unsigned long long)sc.args[1],
		 (unsigned long long)sc.args[2], (unsigned long long)sc.args[3],
		 (unsigned long long)sc.args[4], (unsigned long long)sc.args[5]);
	log_warnx("%s: %s %s: %s (syscall %d at 0x%llx); the process that made it dies",
		  t->pol.name, rf_mount_kind(&t->pol), rf_mount_runs(&t->pol), t->fail_reason,
		  sc.nr, (unsigned long long)sc.ip);
	free(name);
}

static void said_failed(struct rf_tenant *t, const struct rf_msg *m, const char *who)
{
	const struct rf_msg_failed *f = (const struct rf_msg_failed *)m->payload;
	const char *why = strerror(f->error > 0 && f->error < 4096 ? f->error : EIO);
	size_t n;

	/* room for the errno's text: the worker's own words are cut first */
	log_escape(f->what, t->fail_reason, sizeof(t->fail_reason) - 64);
	n = strlen(t->fail_reason);
	snprintf(t->fail_reason + n, sizeof(t->fail_reason) - n, ": %s", why);
	log_warnx("%s: %s start-up failed: %s", t->pol.name, who, t->fail_reason);
}

static void worker_failed(struct rf_tenant *t, const struct rf_msg *m)
{
	said_failed(t, m, "worker");
}

static void host_failed(struct rf_tenant *t, const struct rf_msg *m)
{
	said_failed(t, m, "plugin host");
}

static void said_hello(struct rf_tenant *t, const struct rf_msg *m)
{
	struct rf_msg_hello h;

	memcpy(&h, m->payload, sizeof(h));
	if (h.version != RF_IPC_VERSION)
		rf_worker_kill(t, "IPC version mismatch");
}

/* A plugin host alone is starting: its READY is the host's. */
static bool host_starting(const struct rf_tenant *t)
{
	return t->state == RF_TENANT_HOST_STARTING ||
	       (t->upg_host &&
		(t->state == RF_TENANT_UPG_TRIAL || t->state == RF_TENANT_UPG_ROLLBACK));
}

static void said_ready(struct rf_tenant *t, const struct rf_msg *m)
{
	struct rf_msg_ready rd;
	bool host_only;

	memcpy(&rd, m->payload, sizeof(rd));
	switch (t->state) {
	case RF_TENANT_STARTING:
	case RF_TENANT_HOST_STARTING:
	case RF_TENANT_RESPONDER_STARTING:
	case RF_TENANT_UPG_TRIAL:
	case RF_TENANT_UPG_ROLLBACK:
		break;
	case RF_TENANT_STOPPING:
	case RF_TENANT_STOPPED:
	case RF_TENANT_FAILED:
	case RF_TENANT_HOST_LOOP:
		/* a worker the broker is ending */
		log_debug("%s: READY while %s: ignored", t->pol.name,
			  rf_tenant_state_name(t->state));
		return;
	default:
		rf_worker_kill(t, "READY when nothing was starting");
		return;
	}
	stop_start_timer(t);
	host_only = host_starting(t);
	/* an upgrade's READY ends the upgrade (rf_upgrade_ready) */
	if (!rf_tenant_upgrading(t))
		rf_tenant_enter(t, t->state == RF_TENANT_RESPONDER_STARTING ? RF_TENANT_RESPONDING
									    : RF_TENANT_RUNNING);
	if (host_only) {
		/* the keeper and its rings served on: nothing waits for a
		 * kick */
		log_info("%s: plugin host generation %u serving", t->pol.name, t->generation);
		t->b->events->ready(t, true);
		return;
	}
	log_info("%s: serving %s on %s through %s (%u queue%s x %u)", t->pol.name,
		 rf_mount_runs(&t->pol), t->pol.mountpoint, rf_transport_name(rd.transport),
		 rd.nqueues, rd.nqueues == 1 ? "" : "s", t->geom.depth);
	t->b->events->ready(t, false);
}

static void said_host_died(struct rf_tenant *t, const struct rf_msg *m)
{
	struct rf_msg_host_died d;

	memcpy(&d, m->payload, sizeof(d));
	/* what the dead host said (a trapped call, a failure) was sent
	 * before the keeper saw it die: it comes first */
	ipc_drain(t, t->host_ipc_fd, &t->host_ipc_ev, rf_host_ipc_cb);
	host_died(t, &d);
}

/* What a worker may say, when, and what the broker does with it. */
static const struct rf_says worker_says[] = {
	{ RF_MSG_HELLO, RF_SAYS_ONCE | RF_SAYS_BEFORE_READY, said_hello },
	{ RF_MSG_READY, RF_SAYS_ONCE | RF_SAYS_AFTER_HELLO, said_ready },
	{ RF_MSG_LOG, RF_SAYS_AFTER_HELLO | RF_SAYS_DEAD_TOO, said_log },
	{ RF_MSG_SECCOMP, RF_SAYS_ONCE | RF_SAYS_AFTER_HELLO, said_seccomp },
	{ RF_MSG_FAILED,
	  RF_SAYS_ONCE | RF_SAYS_AFTER_HELLO | RF_SAYS_BEFORE_READY | RF_SAYS_DEAD_TOO,
	  worker_failed },
	/* host_restart: as often as its plugin hosts die (host_died holds
	 * it to the tenant's state); a new host's READY, SECCOMP and FAILED
	 * count afresh after it */
	{ RF_MSG_HOST_DIED, RF_SAYS_AFTER_HELLO, said_host_died },
};

/* A plugin host's channel, of each host anew: it logs, and before it dies
 * names a trapped call or a start-up failure. Nothing of the keeper's
 * (HELLO, READY, HOST_DIED) is believed from it. */
static const struct rf_says host_says[] = {
	{ RF_MSG_LOG, RF_SAYS_DEAD_TOO, said_log },
	{ RF_MSG_SECCOMP, RF_SAYS_ONCE | RF_SAYS_DEAD_TOO, said_seccomp },
	{ RF_MSG_FAILED, RF_SAYS_ONCE | RF_SAYS_DEAD_TOO, host_failed },
};

#define NRULES(a) (sizeof(a) / sizeof((a)[0]))
#define RF_NOT_FROM_WORKER "message type not allowed from a worker"
#define RF_NOT_FROM_HOST "message type not allowed from a plugin host"

const char *rf_worker_msg_refusal(uint32_t type, uint32_t seen)
{
	return rf_says_refusal(worker_says, NRULES(worker_says), type, seen, RF_NOT_FROM_WORKER);
}

const char *rf_host_msg_refusal(uint32_t type, uint32_t seen)
{
	return rf_says_refusal(host_says, NRULES(host_says), type, seen, RF_NOT_FROM_HOST);
}

static void handle_msg(struct rf_tenant *t, struct rf_msg *m)
{
	const char *refusal = rf_says_handle(worker_says, NRULES(worker_says), t, m, &t->msgs_seen,
					     t->proc.reaping, RF_NOT_FROM_WORKER);

	if (refusal) {
		char why[128];

		snprintf(why, sizeof(why), "%s (%s)", refusal, rf_msg_name(m->hdr.type));
		rf_worker_kill(t, why);
	}
}

/* RF_IPC_READS messages of a channel between two watchdog ticks; past
 * them the channel waits for the next tick (rf_worker_ipc_tick). A few
 * microseconds each (a receive, the checks, a log line): a flood costs
 * the broker a few milliseconds of CPU a second. */
#define RF_IPC_READS 1000

static bool ipc_budget(struct rf_tenant *t, struct event *ev, uint32_t *reads, bool *waiting)
{
	if (t->proc.reaping)
		return true; /* a dead worker's last words: bounded by the caller */
	if (*reads < RF_IPC_READS) {
		(*reads)++;
		return true;
	}
	event_del(ev);
	*waiting = true;
	t->ipc_waits++;
	return false;
}

void rf_worker_ipc_tick(struct rf_tenant *t)
{
	t->ipc_reads = t->host_ipc_reads = 0;
	if (t->ipc_waiting && t->ipc_ev && event_add(t->ipc_ev, NULL) < 0)
		fatalx("event_add");
	if (t->host_ipc_waiting && t->host_ipc_ev && event_add(t->host_ipc_ev, NULL) < 0)
		fatalx("event_add");
	t->ipc_waiting = t->host_ipc_waiting = false;
}

/* One message off a channel, checked for its form; 0 when there is none
 * to handle, else 1 (a message in @m) or -1 (@why says what was wrong). */
static int ipc_read(struct rf_tenant *t, int fd, struct event **ev, struct rf_msg *m,
		    const char **why)
{
	int r = rf_msg_recv(fd, m);

	if (r == -EAGAIN || r == -EINTR)
		return 0;
	if (r == -ECONNRESET || r == -EPIPE) {
		/* the worker closed its end; SIGCHLD will tell how it ended */
		chan_stop(ev);
		return 0;
	}
	if (r == -EBADMSG) {
		*why = "malformed message";
		return -1;
	}
	if (r < 0) {
		log_warnx("%s: worker IPC: %s", t->pol.name, strerror(-r));
		*why = "IPC failure";
		return -1;
	}
	if (m->nfds) {
		/* a worker never sends descriptors (rf_msg_recv enforces the
		 * per-type limit of 0, so this is belt and braces) */
		rf_msg_close_fds(m);
		*why = "descriptors from a worker";
		return -1;
	}
	return 1;
}

void rf_worker_ipc_cb(int fd, short what, void *arg)
{
	struct rf_tenant *t = arg;
	const char *why = NULL;
	struct rf_msg m;
	int r;

	(void)what;
	if (!ipc_budget(t, t->ipc_ev, &t->ipc_reads, &t->ipc_waiting))
		return;
	r = ipc_read(t, fd, &t->ipc_ev, &m, &why);
	if (r < 0)
		rf_worker_kill(t, why);
	else if (r > 0)
		handle_msg(t, &m);
}

/* A plugin host that breaks its channel's rules: ended alone where it can
 * be (rf_host_end), else its worker is killed. Nothing to do for a host
 * already being ended, or dead. */
static void host_offense(struct rf_tenant *t, const char *why)
{
	if (t->proc.reaping || t->worker_pid <= 0 || t->proc.host_killed)
		return;
	if (rf_host_end(t)) {
		log_warnx("%s: ending the plugin host of worker %d: %s", t->pol.name,
			  (int)t->worker_pid, why);
		snprintf(t->fail_reason, sizeof(t->fail_reason), "ended by the broker: %s", why);
		return;
	}
	rf_worker_kill(t, why);
}

void rf_host_ipc_cb(int fd, short what, void *arg)
{
	struct rf_tenant *t = arg;
	const char *why = NULL, *refusal;
	struct rf_msg m;
	char words[128];
	int r;

	(void)what;
	if (!ipc_budget(t, t->host_ipc_ev, &t->host_ipc_reads, &t->host_ipc_waiting))
		return;
	r = ipc_read(t, fd, &t->host_ipc_ev, &m, &why);
	if (r < 0) {
		host_offense(t, why);
		return;
	}
	if (!r)
		return;
	refusal = rf_says_handle(host_says, NRULES(host_says), t, &m, &t->host_msgs_seen,
				 t->proc.reaping, RF_NOT_FROM_HOST);
	if (refusal) {
		snprintf(words, sizeof(words), "%s (%s)", refusal, rf_msg_name(m.hdr.type));
		host_offense(t, words);
	}
}

/* What a channel still holds (a dead process's last words), at most as
 * many messages as a socket holds, with no process left for a verdict
 * to end. */
static void ipc_drain(struct rf_tenant *t, int fd, struct event **ev, event_callback_fn cb)
{
	bool was = t->proc.reaping;

	t->proc.reaping = true;
	for (int i = 0; i < 64 && *ev && fd >= 0; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLIN))
			break;
		cb(fd, EV_READ, t);
	}
	t->proc.reaping = was;
}

/* Signals the kernel raises for a process's own doing: a fault, abort(),
 * seccomp, an rlimit, a broken pipe. */
static bool own_doing(int sig)
{
	switch (sig) {
	case SIGSEGV:
	case SIGBUS:
	case SIGFPE:
	case SIGILL:
	case SIGTRAP:
	case SIGABRT:
	case SIGSYS:
	case SIGXCPU:
	case SIGXFSZ:
	case SIGPIPE:
		return true;
	default:
		return false;
	}
}

#define RF_NOT_OURS                                                                       \
	", which the broker did not send (root, a process with the worker's uid, or the " \
	"OOM killer)"

/* How a process ended, in words, by its wait @status (a plugin host's as
 * the keeper claims it, @host: the broker never signals one, its keeper
 * may, @by_keeper); whether by a signal from outside, which counts
 * apart. */
static bool end_words(const struct rf_tenant *t, int status, bool host, bool by_keeper, char *how,
		      size_t len)
{
	bool outside = false;

	if (WIFEXITED(status)) {
		snprintf(how, len, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		/* a kill the broker did not send: say so, and count it apart
		 * (it counts as a crash all the same) */
		outside = !(host ? t->proc.host_killed || by_keeper : t->proc.sigkilled) &&
			  !own_doing(WTERMSIG(status));
		snprintf(how, len, "was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)),
			 outside ? RF_NOT_OURS
			 : by_keeper && !t->proc.host_killed
				 ? " by its keeper, for breaking the rules"
				 : "");
	} else {
		snprintf(how, len, "ended (status 0x%x)", status);
	}
	return outside;
}

int rf_host_start(struct rf_tenant *t, bool plugin_file)
{
	struct rf_msg_host_start hs;
	struct timeval tv = { .tv_sec = t->pol.start_timeout };
	int fd = -1, r;

	memset(&hs, 0, sizeof(hs));
	if (plugin_file) {
		/* opened here, as the worker opens its first (as root, before
		 * its sandbox hides the path) */
		r = rf_policy_plugin_path(t->b->policy, &t->pol, hs.plugin, sizeof(hs.plugin));
		if (r < 0)
			return r;
		fd = open(hs.plugin, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			r = -errno;
			snprintf(t->fail_reason, sizeof(t->fail_reason), "open plugin %.900s: %s",
				 hs.plugin, strerror(errno));
			return r;
		}
	}
	t->generation++;
	t->fail_reason[0] = '\0';
	hs.generation = t->generation;
	/* an upgrade's new plugin restores all, or ends before serving */
	hs.restore_strict = t->state == RF_TENANT_UPG_TRIAL;
	r = rf_msg_send(t->ipc_fd, RF_MSG_HOST_START, 0, &hs, sizeof(hs), &fd, fd >= 0 ? 1 : 0);
	if (fd >= 0)
		close(fd);
	if (r < 0)
		return r;
	if (!rf_tenant_upgrading(t))
		rf_tenant_enter(t, RF_TENANT_HOST_STARTING);
	log_info("%s: starting plugin host generation %u%s", t->pol.name, t->generation,
		 t->state == RF_TENANT_UPG_TRIAL      ? " (the upgrade)"
		 : t->state == RF_TENANT_UPG_ROLLBACK ? " (rolled back)"
						      : "");
	stop_start_timer(t);
	t->start_ev = evtimer_new(t->b->base, start_timeout_cb, t);
	if (!t->start_ev || evtimer_add(t->start_ev, &tv) < 0)
		fatalx("evtimer_new");
	return 0;
}

static void host_start_cb(int fd, short what, void *arg)
{
	struct rf_tenant *t = arg;

	(void)fd;
	(void)what;
	rf_respawn_cancel(t);
	if (t->state != RF_TENANT_HOST_DUE || t->worker_pid <= 0)
		return;
	if (rf_host_start(t, false) < 0)
		rf_worker_kill(t, "cannot ask for the next plugin host");
}

/*
 * host_restart: the worker's plugin host died and its keeper serves on,
 * holding what comes meanwhile. A death as any other for the counts and
 * the back-off; the next host starts at the same pace a next worker
 * would (HOST_START), and a crash loop ends the worker, for the EIO
 * responder (rf_worker_reaped, RF_TENANT_HOST_LOOP).
 */
static void host_died(struct rf_tenant *t, const struct rf_msg_host_died *d)
{
	int status = d->status;
	struct rf_backoff bo;
	struct timeval tv;
	char how[192];
	bool outside;

	if (!t->pol.host_restart || rf_tenant_responder(t) || t->state == RF_TENANT_HOST_DUE ||
	    (!host_starting(t) && !(t->msgs_seen & RF_MSG_BIT(RF_MSG_READY)))) {
		rf_worker_kill(t, "HOST_DIED where no plugin host can have died");
		return;
	}
	outside = end_words(t, status, true, d->by_keeper == 1, how, sizeof(how));
	t->proc.host_killed = false;
	stop_start_timer(t);
	t->msgs_seen &= ~(RF_MSG_BIT(RF_MSG_READY) | RF_MSG_BIT(RF_MSG_SECCOMP) |
			  RF_MSG_BIT(RF_MSG_FAILED));
	t->host_msgs_seen = 0;
	t->hb_sent_seq = 0;
	if (rf_tenant_ending(t) || rf_tenant_upgrading(t)) {
		if (!t->fail_reason[0])
			snprintf(t->fail_reason, sizeof(t->fail_reason), "plugin host %s", how);
		if (!rf_tenant_ending(t) && t->b->events->upgrade_host_died(t))
			return; /* the upgrade's own doing, or its rollback's */
		if (rf_tenant_ending(t) || rf_tenant_upgrading(t)) {
			/* an upgrade of the whole worker settles by its end */
			rf_worker_sigkill(t);
			return;
		}
		/* a rollback that did not serve either: a crash from here */
	}
	t->crashes++;
	t->outside_kills += outside;
	log_warnx("%s: plugin host %s%s%s", t->pol.name, how, t->fail_reason[0] ? " after: " : "",
		  t->fail_reason);
	if (!t->fail_reason[0])
		snprintf(t->fail_reason, sizeof(t->fail_reason), "plugin host %s", how);
	bo = rf_backoff_after_death(t->deaths, t->pol.crash_limit, t->pol.crash_window, t->crashes,
				    time(NULL));
	if (bo.crash_loop) {
		rf_tenant_enter(t, RF_TENANT_HOST_LOOP);
		rf_worker_sigkill(t);
		return;
	}
	rf_tenant_enter(t, RF_TENANT_HOST_DUE);
	rf_respawn_cancel(t);
	tv.tv_sec = bo.delay_ms / 1000;
	tv.tv_usec = (bo.delay_ms % 1000) * 1000;
	t->respawn_ev = evtimer_new(t->b->base, host_start_cb, t);
	if (!t->respawn_ev || evtimer_add(t->respawn_ev, &tv) < 0)
		fatalx("evtimer_new");
	log_warnx("%s: the worker's keeper serves on; a new plugin host in %ld ms (death %u)",
		  t->pol.name, bo.delay_ms, t->crashes);
}

void rf_worker_reaped(struct rf_tenant *t, int status)
{
	bool conn_gone, outside = false;
	int host_sig = rf_host_signal(status);
	char how[192];

	if (host_sig) {
		/* the plugin host, which the broker never signals (the
		 * worker's claim, as any exit status is) */
		outside = !own_doing(host_sig);
		snprintf(how, sizeof(how), "exited: its plugin host was killed by signal %d (%s)%s",
			 host_sig, strsignal(host_sig), outside ? RF_NOT_OURS : "");
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == RF_EXIT_HOST_ENDED) {
		snprintf(how, sizeof(how),
			 "exited: it ended its plugin host, for breaking the rules (its log line "
			 "says how)");
	} else {
		outside = end_words(t, status, false, false, how, sizeof(how));
	}
	/* What it said before dying (a start-up failure names its cause) may
	 * still wait in the sockets when SIGCHLD comes first: its host's
	 * first, then its own (the pid may already be another's). */
	t->worker_pid = 0;
	ipc_drain(t, t->host_ipc_fd, &t->host_ipc_ev, rf_host_ipc_cb);
	ipc_drain(t, t->ipc_fd, &t->ipc_ev, rf_worker_ipc_cb);
	chan_close(&t->ipc_fd, &t->ipc_ev);
	chan_close(&t->host_ipc_fd, &t->host_ipc_ev);
	stop_start_timer(t);
	t->worker_pid = 0;
	rf_orphans_record(t->b);
	if (((WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) || host_sig == SIGSYS) &&
	    !t->fail_reason[0])
		/* a trap with SIGSYS blocked, or an i386/x32 call: the kernel
		 * kills without running the reporting handler */
		snprintf(t->fail_reason, sizeof(t->fail_reason),
			 "seccomp killed the worker without a report (a call made with signals "
			 "blocked, or an i386/x32 system call)");
	if (rf_tenant_ending(t)) {
		log_info("%s: worker %s", t->pol.name, how);
		rf_cgroup_remove(t);
		return;
	}
	if (rf_tenant_upgrading(t)) {
		log_info("%s: worker %s%s%s", t->pol.name, how, t->fail_reason[0] ? " after: " : "",
			 t->fail_reason);
		if (t->b->events->upgrade_reaped(t))
			return; /* no crash: the upgrade's own doing */
	}
	if (t->state == RF_TENANT_HOST_LOOP) {
		/* its plugin hosts died too often, each death counted */
		log_info("%s: worker %s, its plugin hosts dying too often", t->pol.name, how);
		t->b->events->died(t, !rf_mount_connected(t));
		return;
	}
	t->crashes++;
	t->outside_kills += outside;
	log_warnx("%s: worker %s%s%s", t->pol.name, how, t->fail_reason[0] ? " after: " : "",
		  t->fail_reason);
	if (!t->fail_reason[0])
		snprintf(t->fail_reason, sizeof(t->fail_reason), "worker %s", how);
	/* RF_EXIT_CONN_GONE is the worker's claim; the kernel decides */
	conn_gone = !rf_mount_connected(t);
	if (WIFEXITED(status) && WEXITSTATUS(status) == RF_EXIT_CONN_GONE && !conn_gone)
		log_warnx("%s: the worker said its FUSE connection had ended, but it has not: a "
			  "crash like any other",
			  t->pol.name);
	t->b->events->died(t, conn_gone);
}

void rf_respawn_cancel(struct rf_tenant *t)
{
	if (t->respawn_ev) {
		event_free(t->respawn_ev);
		t->respawn_ev = NULL;
	}
}

void rf_worker_stop(struct rf_tenant *t)
{
	int status, i;

	if (!rf_tenant_ending(t))
		rf_tenant_enter(t, RF_TENANT_STOPPING);
	if (t->worker_pid <= 0)
		return;
	if (t->ipc_fd >= 0)
		rf_msg_send(t->ipc_fd, RF_MSG_SHUTDOWN, 0, NULL, 0, NULL, 0);
	/* give it two seconds to go, then make it */
	for (i = 0; i < 200; i++) {
		pid_t p = waitpid(t->worker_pid, &status, WNOHANG);

		if (p == t->worker_pid) {
			rf_worker_reaped(t, status);
			return;
		}
		usleep(10000);
	}
	log_warnx("%s: worker %d did not stop; killing it", t->pol.name, (int)t->worker_pid);
	rf_worker_sigkill(t);
	if (waitpid(t->worker_pid, &status, 0) == t->worker_pid)
		rf_worker_reaped(t, status);
}
