// SPDX-License-Identifier: MIT
/*
 * ringfence-worker: serves one mount for the broker, as two processes
 * (host/host.c says why): the keeper, this process, and the plugin host.
 *
 * Start-up runs as root, trusted, and does only this: take the configuration
 * and the inherited rings, map the pool at the broker's address, make the
 * host's channels and rings, start the queue threads (each enables its
 * ring and adds its queue, then drops its own share of the privileges),
 * open the plugin file and the source directory, build the sandbox's root
 * and fork the host. Each process then drops every privilege in every
 * thread; only then does the host load plugin code (its constructors run
 * at dlopen). Without a plugin (the EIO responder) there is no host.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "report.h"
#include "sandbox.h"
#include "seccomp_policy.h"
#include "title.h"
#include "uexec.h"
#include "worker.h"
#include "host/host.h"
#include "host/runtime.h"
#include "keeper/keeper.h"

/* descriptors a worker may hold: pool, rings, plugin files (passthrough
 * keeps one per inode the kernel knows); the host's hard limit if lower */
#define RF_WORKER_NOFILE 65536
/* private memory of the worker and its plugin (the pool is shared and not
 * counted); the tenant's cgroup limits all its memory (memory_max) */
#define RF_WORKER_DATA (1ULL << 30)

static struct rf_worker W;

static bool terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

static void recv_config(void)
{
	struct rf_msg m;
	uint64_t total;
	uint32_t q;
	int r;

	r = rf_msg_recv(W.ipc_fd, &m);
	if (r < 0 || m.hdr.type != RF_MSG_CONFIG || m.nfds < 1)
		fatalx("expected CONFIG from the broker (%s)", r < 0 ? strerror(-r) : "wrong type");
	memcpy(&W.cfg, m.payload, sizeof(W.cfg));
	total = W.cfg.state_size + W.cfg.restore_size;
	if (m.nfds != 2 + (total ? 1 : 0) + (W.cfg.waiting ? 1 : 0) || (W.cfg.waiting > 1) ||
	    (W.cfg.waiting && !W.cfg.adopt) || total < W.cfg.state_size ||
	    (W.cfg.restore_size & 4095))
		fatalx("CONFIG: %d descriptors for a state of %llu + %llu bytes%s", m.nfds,
		       (unsigned long long)W.cfg.restore_size, (unsigned long long)W.cfg.state_size,
		       W.cfg.waiting ? " and the waiting count" : "");
	/* read once the keeper is set up (rf_rescue_bound), closed then */
	W.waiting_fd = W.cfg.waiting ? m.fds[m.nfds - 2] : -1;
	if (total) {
		/* at one address in every generation (the upper half of the
		 * mount's pool stride), so pointers into it stay valid */
		char *want = (char *)(uintptr_t)(W.cfg.pool_addr + RF_POOL_STRIDE / 2);
		struct stat st;
		char *mem;

		if (fstat(m.fds[1], &st) < 0 || (uint64_t)st.st_size != total ||
		    total > RF_POOL_STRIDE / 2)
			fatalx("CONFIG: the state is not %llu bytes", (unsigned long long)total);
		mem = mmap(want, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
			   m.fds[1], 0);
		if (mem == MAP_FAILED || mem != want)
			rf_report_fail(errno ? errno : EEXIST, "map the mount's state at %p",
				       (void *)want);
		close(m.fds[1]);
		W.restore_mem = W.cfg.restore_size ? mem : NULL;
		W.state = W.cfg.state_size ? mem + W.cfg.restore_size : NULL;
	}
	if (W.cfg.version != RF_IPC_VERSION || !terminated(W.cfg.name, sizeof(W.cfg.name)) ||
	    !terminated(W.cfg.plugin, sizeof(W.cfg.plugin)) ||
	    !terminated(W.cfg.mountpoint, sizeof(W.cfg.mountpoint)) ||
	    !terminated(W.cfg.source, sizeof(W.cfg.source)) ||
	    !terminated(W.cfg.options, sizeof(W.cfg.options)) ||
	    !terminated(W.cfg.seccomp_policy, sizeof(W.cfg.seccomp_policy)) ||
	    !terminated(W.cfg.core_dir, sizeof(W.cfg.core_dir)))
		fatalx("malformed CONFIG");
	if (rf_pool_geom_init(&W.geom, W.cfg.nqueues, W.cfg.depth, W.cfg.payload_size,
			      W.cfg.qpool_size) < 0 ||
	    W.geom.total_size != W.cfg.pool_size)
		fatalx("CONFIG: pool geometry does not add up");
	W.pool = mmap((void *)(uintptr_t)W.cfg.pool_addr, W.cfg.pool_size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_FIXED_NOREPLACE, m.fds[0], 0);
	if (W.pool == MAP_FAILED || W.pool != (void *)(uintptr_t)W.cfg.pool_addr)
		rf_report_fail(errno ? errno : EEXIST, "map the pool at 0x%llx",
			       (unsigned long long)W.cfg.pool_addr);
	/* the same pool, read-only, for the plugin host's view of the
	 * records (host/host.c); the keeper closes it at the fork */
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", m.fds[0]);
		W.pool_ro_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (W.pool_ro_fd < 0)
			rf_report_fail(errno, "open the pool read-only");
	}
	close(m.fds[0]);
	/* the plugin host's own channel to the broker (host_main) */
	W.host_ipc_fd = m.fds[m.nfds - 1];
	fcntl(W.host_ipc_fd, F_SETFD, FD_CLOEXEC);
	W.ctl = W.pool;
	W.transport = W.cfg.transport;
	if (W.ctl->magic != RF_POOL_MAGIC || W.ctl->nqueues != W.cfg.nqueues)
		fatalx("the pool's control area does not match CONFIG");

	W.nqueues = W.cfg.nqueues;
	W.queues = calloc(W.nqueues, sizeof(*W.queues));
	if (!W.queues)
		fatal("calloc");
	for (q = 0; q < W.nqueues; q++) {
		struct rf_msg_ring ring;

		r = rf_msg_recv(W.ipc_fd, &m);
		if (r < 0 || m.hdr.type != RF_MSG_RING)
			fatalx("expected RING %u from the broker", q);
		memcpy(&ring, m.payload, sizeof(ring));
		if (ring.qid != q)
			fatalx("RING for queue %u out of order", ring.qid);
		W.queues[q].ring_fd = ring.fd;
		W.queues[q].params = ring.params;
		W.queues[q].chan_fd = -1;
		W.queues[q].host_chan_fd = -1;
		W.queues[q].hring_fd = -1;
		W.queues[q].hevfd = -1;
		W.queues[q].hevfd_next = -1;
		W.queues[q].chan.peer_evfd = -1;
		W.queues[q].chan_next = -1;
		W.queues[q].host_end = -1;
		W.queues[q].host_end_next = -1;
	}
}

/*
 * make bench only (--bench-unsafe=private-payload): a payload in the
 * worker's own private memory, as a libfuse server's buffers are, instead
 * of the pool the broker shares (per-entry buffers only: a kernel buffer
 * pool's payloads are where the kernel says); its data moves by pread/pwrite (the ring's
 * fixed-buffer ops only reach the pool). The broker cannot see such a
 * payload, so adoption of its request after a death is not what it is.
 */
static char *private_payload(size_t size)
{
	/* shared with the plugin host, which is forked after this */
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		fatal("mmap private payload");
	return p;
}

static void setup_queues(void)
{
	uint32_t q, e;

	for (q = 0; q < W.nqueues; q++) {
		struct rf_queue *qu = &W.queues[q];
		bool reader = (q == 0 && W.cfg.transport == RF_TRANSPORT_URING);

		qu->w = &W;
		qu->qid = q;
		qu->stats = rf_pool_stats(W.pool, q);
		qu->nreqs = W.cfg.depth + (reader ? 1 : 0);
		if (W.geom.qpool_size) {
			qu->qpool = (char *)W.pool + rf_pool_qpool(&W.geom, q);
			qu->qpool_size = W.geom.qpool_size;
			qu->zc = W.cfg.zero_copy != 0;
		}
		qu->reqs = calloc(qu->nreqs, sizeof(*qu->reqs));
		if (!qu->reqs)
			fatal("calloc");
		for (e = 0; e < qu->nreqs; e++) {
			struct rf_req *req = &qu->reqs[e];
			uint32_t slot = e < W.cfg.depth ? rf_pool_slot_index(&W.geom, q, e)
							: W.geom.nslots - 1;

			req->q = qu;
			req->idx = e;
			req->classic = W.cfg.transport == RF_TRANSPORT_CLASSIC || e == W.cfg.depth;
			req->hdr = (char *)W.pool + rf_pool_slot_offset(&W.geom, slot);
			/* with a buffer pool, each request says where its
			 * payload is (rf_queue_fetched) */
			req->payload = qu->qpool && !req->classic ? qu->qpool
								  : req->hdr + RF_SLOT_HDR_SIZE;
			req->payload_cap = W.geom.payload_size;
			if ((W.cfg.bench & RF_BENCH_PRIVATE_PAYLOAD) && !qu->qpool && !req->classic)
				req->payload = private_payload(req->payload_cap);
			req->fd = -1;
			req->backing_fd = -1;
			req->backing_ref = -1;
			req->ss = rf_pool_slot_state(W.pool, &W.geom, slot);
		}
	}
}

static int open_plugin_file(void)
{
	int fd = open(W.cfg.plugin, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		rf_report_fail(errno, "open plugin %s", W.cfg.plugin);
	return fd;
}

/* A plugin built before struct rf_plugin had flags ends at readdirplus. */
#define RF_PLUGIN_MIN_SIZE offsetof(struct rf_plugin, flags)

/* Under FUSE_HANDLE_KILLPRIV_V2 nothing but the plugin clears setuid and
 * setgid bits: one that can change a file must say it does. */
static void check_killpriv(const struct rf_plugin *p)
{
	uint64_t flags = W.cfg.init_flags_lo | (uint64_t)W.cfg.init_flags_hi << 32;
	uint32_t pflags = p->struct_size > RF_PLUGIN_MIN_SIZE ? p->flags : 0;

	if ((flags & FUSE_HANDLE_KILLPRIV_V2) && (p->write || p->setattr) &&
	    !(pflags & RF_PLUGIN_KILLPRIV))
		rf_report_fail(EINVAL,
			       "plugin %s does not clear setuid and setgid bits itself (no "
			       "RF_PLUGIN_KILLPRIV); "
			       "set handle_killpriv = no in its mount's policy",
			       W.cfg.plugin);
}

static struct rf_plugin plugin_copy;

static void load_plugin(int plugin_fd)
{
	char path[64];
	const struct rf_plugin *p;
	struct link_map *lm;
	void *h;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", plugin_fd);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		rf_report_fail(ENOEXEC, "load plugin %s: %s", W.cfg.plugin, dlerror());
	close(plugin_fd);
	/* The loader names it as it was opened, which means nothing to a
	 * debugger (gdb would open its own descriptor of that number): it
	 * gets the plugin's path, where gdb finds the file, attached to the
	 * plugin host or reading its core. */
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0)
		lm->l_name = W.cfg.plugin;
	p = dlsym(h, "ringfence_plugin");
	if (!p)
		rf_report_fail(ENOEXEC, "plugin %s exports no 'ringfence_plugin'", W.cfg.plugin);
	if (p->abi_version < 1 || p->abi_version > RF_PLUGIN_ABI_VERSION)
		rf_report_fail(ENOEXEC, "plugin %s has ABI version %u; this worker speaks 1 to %u",
			       W.cfg.plugin, p->abi_version, RF_PLUGIN_ABI_VERSION);
	if (p->struct_size < RF_PLUGIN_MIN_SIZE)
		rf_report_fail(ENOEXEC,
			       "plugin %s: struct rf_plugin of %u bytes, expected at least %zu",
			       W.cfg.plugin, p->struct_size, RF_PLUGIN_MIN_SIZE);
	check_killpriv(p);
	/* fields past the plugin's struct_size are none (NULL, 0): a copy,
	 * so that nothing reads past the object the plugin built */
	memcpy(&plugin_copy, p,
	       p->struct_size < sizeof(plugin_copy) ? p->struct_size : sizeof(plugin_copy));
	W.plugin = &plugin_copy;
}

/* The queue threads' trusted start-up (keeper/loop.c), before the privilege
 * drop: a zero-copy queue needs CAP_SYS_ADMIN in the thread that adds it,
 * and that thread must be the one that serves its ring (single issuer). */
static void prepare_queues(void)
{
	char why[200];
	int err = rf_queues_prepare(&W, why, sizeof(why));

	if (err < 0)
		rf_report_fail(-err, "%s", why);
}

/* The sandbox's root, its source and limits (sandbox.c says what each step
 * does), for both processes of the worker. */
static struct rf_sandbox SB;

static void enter_sandbox_root(bool sandbox)
{
	int err;

	SB = (struct rf_sandbox){
		.sandboxed = sandbox,
		.source = W.cfg.source,
		.read_only = (int)W.cfg.read_only,
		.debug = W.cfg.debug != 0,
		.core_dir = W.cfg.core_dir,
		.libdir = W.cfg.program ? RF_LIBFUSE_DIR : "",
		.nofile = RF_WORKER_NOFILE,
		.data = RF_WORKER_DATA,
		.fsize = W.cfg.max_file_size ? W.cfg.max_file_size : RLIM_INFINITY,
		.nproc = W.cfg.max_tasks,
		.uid = W.cfg.uid,
		.gid = W.cfg.gid,
		.ipc_fd = W.ipc_fd,
		.pool_addr = W.cfg.pool_addr,
	};
	if (!sandbox)
		log_warnx("running WITHOUT the sandbox (ringfenced --bench-unsafe)");
	err = rf_sandbox_enter_root(&SB);
	if (err < 0)
		rf_report_fail(-err, "%s", SB.failed);
	W.source_fd = SB.source_fd;
}

/* ... then each process drops every privilege: nothing comes back out but
 * the worker's channel, its rings, the pool and /source. */
static void enter_sandbox_drop(bool host)
{
	int err;

	SB.who = host					  ? RF_DENY_HOST
		 : W.cfg.host_restart && !W.cfg.responder ? RF_DENY_KEEPER_FORKS
							  : RF_DENY_KEEPER;
	err = rf_sandbox_enter_drop(&SB);
	if (err < 0)
		rf_report_fail(-err, "%s", SB.failed);
}

static void __attribute__((noreturn))
host_main(int plugin_fd, struct rf_sc_policy *sc_policy, bool sandbox, bool again);

/* The main thread's part once the queues serve: the broker's PINGs, passed
 * to every queue thread, until SHUTDOWN. */
static void worker_dispatch(void)
{
	uint32_t q;

	for (;;) {
		struct rf_msg m;
		int r = rf_msg_recv(W.ipc_fd, &m);

		if (r == -EINTR)
			continue;
		if (r < 0)
			/* the broker is gone (SIGKILL from PDEATHSIG is on its
			 * way): go now, even if a queue thread is stuck in the
			 * plugin, for our rings keep the mount's clients waiting */
			_exit(1);
		if (m.hdr.type == RF_MSG_SHUTDOWN)
			return;
		if (m.hdr.type == RF_MSG_PING) {
			struct rf_msg_ping ping;

			/* each queue thread answers in the pool once woken
			 * (with a host, once its host thread answered): a
			 * stuck thread, or a stuck main thread, stays silent */
			memcpy(&ping, m.payload, sizeof(ping));
			if (W.host_pid && W.cfg.host_restart &&
			    atomic_load(&W.reported_seq) == atomic_load(&W.host_seq))
				continue; /* no host to answer: the broker waits (READY) */
			/* (the host's answer counts only as the answer to
			 * this PING: keeper/answer.c) */
			atomic_store(&W.ping_seq, ping.seq);
			if (W.host_pid) {
				rf_host_broadcast(&W, RF_CH_PING, ping.seq);
				continue;
			}
			for (q = 0; q < W.nqueues; q++)
				rf_queue_wake(&W.queues[q]);
			continue;
		}
		if (m.hdr.type == RF_MSG_HOST_START && W.host_pid) {
			struct rf_msg_host_start hs;

			memcpy(&hs, m.payload, sizeof(hs));
			if (m.nfds == 1 && terminated(hs.plugin, sizeof(hs.plugin))) {
				/* another plugin file from now on (an upgrade,
				 * or its rollback), restored as it says */
				close(W.plugin_fd);
				W.plugin_fd = m.fds[0];
				fcntl(W.plugin_fd, F_SETFD, FD_CLOEXEC);
				memcpy(W.cfg.plugin, hs.plugin, sizeof(W.cfg.plugin));
			} else {
				rf_msg_close_fds(&m);
			}
			W.cfg.restore_strict = hs.restore_strict;
			if (rf_host_respawn(&W, hs.generation) == 0)
				host_main(W.plugin_fd, W.sc_policy, W.sandbox, true);
			continue;
		}
		if (m.hdr.type == RF_MSG_HOST_REPLACE && W.host_pid && W.cfg.host_restart) {
			/* ringfencectl upgrade, the watchdog, the
			 * heartbeat: the reaper tells of its end */
			if (atomic_load(&W.reported_seq) != atomic_load(&W.host_seq))
				kill(W.host_pid, SIGKILL);
			continue;
		}
		rf_msg_close_fds(&m);
		log_warnx("unexpected %s from the broker; ignored", rf_msg_name(m.hdr.type));
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ringfence-worker --ipc-fd FD\n"
		   "\n"
		   "Serves one ringfence mount. Started by ringfenced, which passes the\n"
		   "rings and the configuration; not meant to be run by hand.\n");
}

/* Trusted start-up: the broker's configuration, the queues, what a
 * successor must finish, and what the plugin will need from outside the
 * sandbox (its file, the seccomp policy). Returns the plugin's fd. */
static int start_up(struct rf_sc_policy **sc_policy)
{
	struct rf_msg_hello hello = { .version = RF_IPC_VERSION, .pid = (uint32_t)getpid() };
	static char sc_err[4096];
	uint32_t q;
	int err;

	if (rf_msg_send(W.ipc_fd, RF_MSG_HELLO, 0, &hello, sizeof(hello), NULL, 0) < 0)
		fatal("send HELLO");
	recv_config();
	W.tag = rf_gen_tag(W.cfg.generation);
	for (q = 0; q < W.nqueues; q++)
		fcntl(W.queues[q].ring_fd, F_SETFD, FD_CLOEXEC);
	setup_queues();
	W.seen = rf_pool_seen(W.pool, &W.geom);
	if (W.cfg.adopt)
		rf_rescue_plan(&W);
	err = rf_sc_policy_load(W.cfg.seccomp_policy, sc_policy, sc_err, sizeof(sc_err));
	if (err < 0)
		rf_report_fail(-err, "seccomp policy %s: %s", W.cfg.seccomp_policy, sc_err);
	return open_plugin_file();
}

/* Untrusted from here on: the plugin's code runs from dlopen. Load it (or
 * be the built-in EIO responder), initialise it, then stack
 * seccomp.policy on the deny list, across every thread it may have
 * started. */
static void start_plugin(int plugin_fd, struct rf_sc_policy *sc_policy, bool sandbox)
{
	int err;

	if (W.cfg.responder) {
		/* the built-in responder: no plugin, every request EIO */
		static const struct rf_plugin none = { RF_PLUGIN_INIT, .name = "eio-responder" };

		close(plugin_fd);
		W.plugin = &none;
		log_info("answering every request EIO (the plugin kept crashing)");
	} else {
		load_plugin(plugin_fd);
	}
	err = rf_plugin_init(&W);
	if (err)
		rf_report_fail(err, "plugin %s init",
			       W.plugin->name ? W.plugin->name : W.cfg.plugin);
	/* make bench's one-process target: the keeper's deny list alone (its
	 * data path makes register calls a plugin's policy refuses; a filter
	 * costs tens of nanoseconds a call, docs/performance.md) */
	if (!sandbox || (W.cfg.bench & RF_BENCH_ONE_PROCESS))
		err = 0;
	else if (W.cfg.bench & RF_UNSAFE_LEARN_SECCOMP)
		err = rf_learn_start(&W, sc_policy);
	else
		err = rf_sc_policy_load_filter(sc_policy);
	if (err < 0)
		rf_report_fail(-err, "load seccomp policy %s", W.cfg.seccomp_policy);
	rf_sc_policy_free(sc_policy);
	/* a predecessor's node ids and open files, through the plugin's
	 * hooks, under its seccomp policy */
	if (!W.cfg.responder) {
		char why[256];

		err = rf_restore_start(&W, why, sizeof(why));
		if (err < 0)
			rf_report_fail(-err, "%s", why);
	}
}

/* --learn-seccomp, a program's: the learning filter's listener goes to
 * the keeper, whose thread answers (a thread of this process would not
 * outlive the program's start) */
static int learn_by_keeper(const struct rf_sc_policy *p)
{
	char byte = 'L';
	int fd = rf_sc_policy_load_learning(p), r;

	if (fd < 0)
		return fd;
	r = rf_fdpass_send(W.learn_wr, &byte, 1, &fd, 1);
	close(fd);
	if (r == 0)
		log_warnx("learning: every system call the seccomp policy refuses is allowed "
			  "and logged");
	return r;
}

static int keep_open(int fd)
{
	return fcntl(fd, F_SETFD, 0);
}

/*
 * A program tenant's plugin host becomes its program (host/runtime.c
 * says how it is then served): the tenant's seccomp policy first, for the
 * program's code runs from the loader's first instruction; then the
 * system's loader in this process (uexec.c), with ringfence's libfuse
 * directory searched first, for the program (its file, opened before the
 * sandbox, by its descriptor; named as the policy names it), the mount
 * point, and the policy's program_args, split at blanks (the mount point
 * where they say {mountpoint}, instead of before them).
 */
static void __attribute__((noreturn))
start_program(int program_fd, struct rf_sc_policy *sc_policy, bool sandbox)
{
	char args[sizeof(W.cfg.options)], fd_path[32], host_env[96], why[256];
	char *argv[8 + sizeof(args) / 2], *envp[] = { host_env, "PATH=/usr/bin:/bin", NULL };
	char *word, *save = NULL;
	size_t n = 0, first;
	bool placed = false;
	int err;

	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", program_fd);
	snprintf(host_env, sizeof(host_env), RF_HOST_ENV "=%llx %zu %u",
		 (unsigned long long)(uintptr_t)&W, sizeof(W), (unsigned int)RF_IPC_VERSION);
	argv[n++] = "ld.so";
	argv[n++] = "--library-path";
	argv[n++] = RF_SANDBOX_LIBDIR;
	argv[n++] = "--argv0";
	argv[n++] = W.cfg.plugin;
	argv[n++] = fd_path;
	/* the mount point first, or where the arguments say */
	first = n;
	argv[n++] = W.cfg.mountpoint;
	snprintf(args, sizeof(args), "%s", W.cfg.options);
	for (word = strtok_r(args, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
		placed |= !strcmp(word, RF_MOUNTPOINT_WORD);
		argv[n++] = strcmp(word, RF_MOUNTPOINT_WORD) ? word : W.cfg.mountpoint;
	}
	if (placed) {
		memmove(&argv[first], &argv[first + 1], (n - first - 1) * sizeof(argv[0]));
		n--;
	}
	argv[n] = NULL;
	/* its standard output and error: the keeper logs them */
	if (dup2(W.out_wr, STDOUT_FILENO) < 0 || dup2(W.out_wr, STDERR_FILENO) < 0)
		rf_report_fail(errno, "program %s: its output to the keeper", W.cfg.plugin);
	/* past the loader's exec-like start: the program's file, and what
	 * the runtime serves with (the broker's channel, and per queue the
	 * host's ring, its socket to the keeper and both eventfds) */
	if (keep_open(program_fd) < 0 || keep_open(W.ipc_fd) < 0 ||
	    (W.source_fd >= 0 && keep_open(W.source_fd) < 0))
		rf_report_fail(errno, "program %s: keep its descriptors open", W.cfg.plugin);
	for (uint32_t q = 0; q < W.nqueues; q++) {
		struct rf_queue *qu = &W.queues[q];

		if (keep_open(qu->hring_fd) < 0 || keep_open(qu->chan_fd) < 0 ||
		    keep_open(qu->hevfd) < 0 || keep_open(qu->evfd) < 0)
			rf_report_fail(errno, "program %s: keep queue %u's descriptors open",
				       W.cfg.plugin, q);
	}
	if (!sandbox || (W.cfg.bench & RF_BENCH_ONE_PROCESS))
		err = 0;
	else if (W.cfg.bench & RF_UNSAFE_LEARN_SECCOMP)
		err = learn_by_keeper(sc_policy);
	else
		err = rf_sc_policy_load_filter(sc_policy);
	if (err < 0)
		rf_report_fail(-err, "load seccomp policy %s", W.cfg.seccomp_policy);
	err = rf_uexec(argv, envp, why, sizeof(why));
	rf_report_fail(-err, "start program %s: %s", W.cfg.plugin, why);
}

/* The queue threads serve, the main thread answers the broker, until
 * SHUTDOWN; then the threads stop and the plugin is told (by the host). */
static void serve(void)
{
	struct rf_msg_ready ready = { .transport = W.cfg.transport, .nqueues = W.nqueues };
	uint32_t q;

	rf_queues_serve(&W);
	if (W.host_pid && W.cfg.host_restart)
		rf_host_reaper_start(&W);
	if (W.host_pid)
		rf_host_wait_ready(&W);
	rf_msg_send(W.ipc_fd, RF_MSG_READY, 0, &ready, sizeof(ready), NULL, 0);
	worker_dispatch();
	atomic_store(&W.stop, 1);
	if (W.host_pid)
		rf_host_broadcast(&W, RF_CH_STOP, 0);
	for (q = 0; q < W.nqueues; q++)
		rf_queue_wake(&W.queues[q]);
	for (q = 0; q < W.nqueues; q++)
		pthread_join(W.queues[q].thread, NULL);
	if (W.host_pid) {
		rf_host_reap(&W);
		return;
	}
	if (W.plugin->destroy)
		W.plugin->destroy(W.userdata);
	rf_restore_stop(&W);
}

/* A host the keeper forks again (host_restart) keeps of the keeper's
 * descriptors only what a host holds: its channel to the broker, the pool
 * read-only, the source, the plugin's file (a program's, and the pipe to
 * the keeper for its output), and per queue its ring, its
 * socket, its wake-up eventfd and the keeper's (not the keeper's rings,
 * nor a file a dead host passed it). */
static void keep_only_host_fds(void)
{
	int *keep = malloc((6 + 4 * (size_t)W.nqueues) * sizeof(*keep)), n = 0, i, j, lo = 3;
	uint32_t q;

	if (!keep)
		rf_report_fail(ENOMEM, "start the next plugin host");
	keep[n++] = W.ipc_fd;
	keep[n++] = W.pool_ro_fd;
	keep[n++] = W.source_fd;
	keep[n++] = W.plugin_fd;
	if (W.out_wr >= 0)
		keep[n++] = W.out_wr;
	if (W.learn_wr >= 0)
		keep[n++] = W.learn_wr;
	for (q = 0; q < W.nqueues; q++) {
		keep[n++] = W.queues[q].hring_fd;
		keep[n++] = W.queues[q].host_chan_fd;
		keep[n++] = W.queues[q].hevfd_next;
		keep[n++] = W.queues[q].evfd; /* the keeper's, which it wakes */
	}
	/* not qsort: glibc's asks sysinfo for an array of 1 KiB or more (85
	 * queues), which the keeper's sandbox refuses */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < lo)
			continue;
		if (keep[i] > lo)
			close_range((unsigned int)lo, (unsigned int)keep[i] - 1, 0);
		lo = keep[i] + 1;
	}
	close_range((unsigned int)lo, ~0U, 0);
	free(keep);
}

/* The plugin host (host/host.c): the keeper's child, from the fork on. Its own
 * view of the pool, its own privilege drop and deny list, then the plugin,
 * and its threads serve until the keeper says STOP. One the keeper starts
 * after a host died (@again) is the keeper's already in all but the deny
 * list, which it stacks on the keeper's, and its generation (node ids). */
static void __attribute__((noreturn))
host_main(int plugin_fd, struct rf_sc_policy *sc_policy, bool sandbox, bool again)
{
	char why[200];
	int err;

	/* the keeper's channel to the broker is not the host's: its own
	 * takes that number (the log, a failure, a seccomp trap), and the
	 * broker takes nothing else on it */
	if (dup3(W.host_ipc_fd, W.ipc_fd, O_CLOEXEC) < 0)
		_exit(1);
	close(W.host_ipc_fd);
	W.host_ipc_fd = -1;
	if (W.waiting_fd >= 0)
		close(W.waiting_fd);
	W.waiting_fd = -1;
	if (again)
		keep_only_host_fds();
	err = rf_host_enter(&W, again, why, sizeof(why));
	if (err < 0)
		rf_report_fail(-err, "%s", why);
	if (!again) {
		enter_sandbox_drop(true);
	} else {
		W.tag = rf_gen_tag(W.cfg.generation);
		err = SB.debug ? rf_sandbox_debuggable(&SB) : 0;
		if (err < 0)
			rf_report_fail(-err, "%s", SB.failed);
		err = sandbox ? rf_sandbox_seccomp_base(W.ipc_fd, RF_DENY_HOST_AGAIN,
							W.cfg.pool_addr)
			      : 0;
		if (err < 0)
			rf_report_fail(-err, "install the plugin host's seccomp deny list");
	}
	rf_data_probe_source(&W);
	if (W.cfg.program)
		start_program(plugin_fd, sc_policy, sandbox);
	start_plugin(plugin_fd, sc_policy, sandbox);
	rf_host_run(&W);
	_exit(0);
}

/* The keeper's part of the fork: the host's channels and rings made as
 * root, then the host, which takes the plugin's file and policy along. */
static void start_host(int plugin_fd, struct rf_sc_policy *sc_policy, bool sandbox)
{
	pid_t pid;

	atomic_store(&W.host_seq, 1);
	for (uint32_t q = 0; q < W.nqueues; q++)
		W.queues[q].host_seq = 1;
	pid = fork();
	if (pid < 0)
		rf_report_fail(errno, "start the plugin host");
	if (pid == 0)
		host_main(plugin_fd, sc_policy, sandbox, false);
	W.host_pid = pid;
	rf_host_forked_keeper(&W);
	if (W.cfg.host_restart) {
		/* for the next host, should this one die */
		W.plugin_fd = plugin_fd;
		W.sc_policy = sc_policy;
		W.sandbox = sandbox;
		return;
	}
	close(plugin_fd);
	rf_sc_policy_free(sc_policy);
	close(W.host_ipc_fd);
	W.host_ipc_fd = -1;
	if (W.source_fd >= 0)
		close(W.source_fd);
	W.source_fd = -1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ipc-fd", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rf_sc_policy *sc_policy = NULL;
	bool sandbox, alone;
	int c, plugin_fd;

	W.ipc_fd = -1;
	W.host_ipc_fd = -1;
	W.pool_ro_fd = -1;
	W.plugin_fd = -1;
	W.waiting_fd = -1;
	W.rescue_budget = -1;
	W.out_rd = -1;
	W.out_wr = -1;
	W.learn_rd = -1;
	W.learn_wr = -1;
	W.side = &rf_keeper_side;
	rf_title_init(argc, argv);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			W.ipc_fd = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (W.ipc_fd < 0 || fcntl(W.ipc_fd, F_GETFD) < 0) {
		usage(stderr);
		return 2;
	}
	fcntl(W.ipc_fd, F_SETFD, FD_CLOEXEC);
	/* the kernel has applied the client's umask already */
	umask(0);
	log_init("ringfence-worker", 1, RF_LOG_INFO);
	rf_report_to(W.ipc_fd);

	plugin_fd = start_up(&sc_policy);
	rf_title_set(W.side->name, W.cfg.name);
	/* the keeper alone runs the plugin: the EIO responder, and make
	 * bench's one-process target */
	alone = W.cfg.responder || (W.cfg.bench & RF_BENCH_ONE_PROCESS);
	if (!alone) {
		char why[200];
		int err = rf_host_prepare(&W, why, sizeof(why));

		if (err < 0)
			rf_report_fail(-err, "%s", why);
	}
	prepare_queues();
	sandbox = !(W.cfg.bench & RF_BENCH_NO_SANDBOX);
	enter_sandbox_root(sandbox);
	/* for the keeper's own transfers too (backing files) */
	rf_data_probe_source(&W);
	if (!alone)
		start_host(plugin_fd, sc_policy, sandbox);
	if (!W.cfg.host_restart || alone) {
		close(W.pool_ro_fd);
		W.pool_ro_fd = -1;
	}
	if (alone) {
		close(W.host_ipc_fd);
		W.host_ipc_fd = -1;
	}
	enter_sandbox_drop(false);
	rf_host_output_start(&W);
	rf_host_learn_start(&W);
	/* what bounds the rescue, read as late as the keeper may still close
	 * a descriptor: where it runs the plugin itself, the plugin's seccomp
	 * policy comes next */
	if (W.cfg.adopt)
		rf_rescue_bound(&W);
	if (alone)
		/* no host: the keeper answers */
		start_plugin(plugin_fd, sc_policy, sandbox);
	serve();
	return 0;
}
