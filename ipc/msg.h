/* SPDX-License-Identifier: MIT */
/*
 * Broker <-> worker messages over a SOCK_SEQPACKET socketpair: one datagram
 * per message, a fixed header, a payload whose exact length each type fixes,
 * and file descriptors only from the broker to the worker. The worker's
 * plugin host speaks over a socketpair of its own (CONFIG's last
 * descriptor), on which the broker takes only LOG, SECCOMP and FAILED.
 *
 * All functions return 0 or a negative errno.
 */
#ifndef RINGFENCE_MSG_H
#define RINGFENCE_MSG_H

#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RF_IPC_VERSION 11
#define RF_IPC_MAX_PAYLOAD 8192
#define RF_IPC_MAX_FDS 4

struct rf_msg_hdr {
	uint32_t type;
	uint32_t len; /* payload bytes after the header */
	uint32_t flags; /* none defined; must be 0 */
	uint32_t id;
};

/* Values are part of the protocol: never renumber, never reuse. */
enum rf_msg_type {
	RF_MSG_HELLO = 1, /* worker -> broker, first message */
	RF_MSG_CONFIG = 2, /* broker -> worker: the pool memfd, the state's, the host's channel */
	RF_MSG_RING = 3, /* broker -> worker, one per queue */
	RF_MSG_READY = 4, /* worker -> broker, serving */
	RF_MSG_LOG = 5, /* worker -> broker, a log line */
	RF_MSG_SHUTDOWN = 6, /* broker -> worker */
	RF_MSG_FAILED = 7, /* worker -> broker, start-up failed: errno + text */
	RF_MSG_SECCOMP = 8, /* worker -> broker, a trapped system call; then it dies */
	RF_MSG_PING = 9, /* broker -> worker: every queue thread acknowledges in the pool */
	/* worker -> broker (host_restart): its plugin host died; the keeper
	 * and its rings stay, holding the requests that come meanwhile */
	RF_MSG_HOST_DIED = 10,
	/* broker -> worker: start the next plugin host, of this generation
	 * (with a plugin file: ringfencectl upgrade's, or its rollback's) */
	RF_MSG_HOST_START = 11,
	/* broker -> worker: end the plugin host (ringfencectl upgrade, the
	 * watchdog, the heartbeat) */
	RF_MSG_HOST_REPLACE = 12,
	RF_MSG_TYPE_MAX = 13,
};

/* A worker that exits with this found its FUSE connection ended: there is
 * nothing to recover. */
#define RF_EXIT_CONN_GONE 3
/* The worker's plugin host (worker/host/host.c) was killed by signal N: the
 * keeper, PID 1 of its namespace, cannot die of a signal it sends itself,
 * so it exits with 128 + N, as a shell reports it. */
#define RF_EXIT_HOST_SIGNAL 128
/* ... or it ended its plugin host itself, for breaking the rules of its
 * channel or ring (without host_restart; its log line says how) */
#define RF_EXIT_HOST_ENDED 4

/* The signal that killed a worker's plugin host by its wait @status, or 0. */
static inline int rf_host_signal(int status)
{
	int code = (status >> 8) & 0xff;

	if ((status & 0x7f) || code <= RF_EXIT_HOST_SIGNAL || code > RF_EXIT_HOST_SIGNAL + 64)
		return 0;
	return code - RF_EXIT_HOST_SIGNAL;
}

/* The broker's kick after a respawn is a STATFS made with this fsuid and
 * fsgid (broker/recovery.c); the worker's framework answers it itself and
 * never hands it to the plugin (worker/plugin/dispatch.c). */
#define RF_KICK_UID 0xfffffffeU
#define RF_KICK_GID 0xfffffffeU

struct rf_msg_hello {
	uint32_t version;
	uint32_t pid;
};

#define RF_NAME_MAX 64
/* a worker process's argv[0], which ps shows: its part ("keeper", "host")
 * and its tenant (broker/spawn.c writes the keeper's, worker/title.c each
 * process's own over it) */
#define RF_WORKER_TITLE "ringfence-worker: %s %s"
#define RF_PATH_MAX 1024

/* The restore tables (worker/plugin/restore.c): one of the policy's restore_nodes
 * node records, one of a quarter as many open files (and 16), records of
 * at most RF_RESTORE_RECORD bytes with keys of at most RF_RESTORE_KEY_MAX,
 * each table after a page for its header. */
#define RF_RESTORE_KEY_MAX 280
#define RF_RESTORE_RECORD 640
static inline uint64_t rf_restore_table_bytes(uint64_t records)
{
	return 4096 + ((records * RF_RESTORE_RECORD + 4095) & ~4095ULL);
}
static inline uint64_t rf_restore_node_bytes(uint32_t nodes)
{
	return rf_restore_table_bytes(nodes);
}
static inline uint32_t rf_restore_files(uint32_t nodes)
{
	return nodes ? nodes / 4 + 16 : 0;
}
static inline uint64_t rf_restore_bytes(uint32_t nodes)
{
	return nodes ? rf_restore_node_bytes(nodes) +
			       rf_restore_table_bytes(rf_restore_files(nodes))
		     : 0;
}
#define RF_OPTIONS_MAX 1024

struct rf_msg_config {
	uint32_t version;
	uint32_t transport; /* enum rf_transport, never AUTO */
	uint32_t nqueues;
	uint32_t depth;
	uint32_t max_write;
	uint32_t payload_size;
	uint64_t pool_addr;
	uint64_t pool_size;
	uint32_t uid;
	uint32_t gid;
	uint32_t proto_minor;
	uint32_t init_flags_lo; /* negotiated INIT flags */
	uint32_t init_flags_hi;
	uint32_t read_only;
	uint32_t generation; /* 0 for the first worker of a mount */
	uint64_t max_file_size; /* 0: unlimited */
	uint32_t adopt; /* answer what the previous generation left fetched */
	/* with adopt: 1 when a descriptor of the connection's fusectl
	 * "waiting" file comes after the state's, which bounds what a
	 * successor asks the kernel for (worker/keeper/rescue.c) */
	uint32_t waiting;
	uint32_t responder; /* load no plugin: answer every request EIO */
	uint32_t bench; /* RF_BENCH_*: ringfenced --bench-unsafe, never from a policy */
	int32_t ownership; /* RF_OWN_* of the plugin ABI (the policy's) */
	uint32_t max_tasks; /* RLIMIT_NPROC where no pids cgroup limits tasks; 0: none */
	uint32_t qpool_size; /* each queue's kernel buffer pool; 0: per-entry buffers */
	uint32_t zero_copy; /* zero-copy queues (with pools only); the rings have the slots */
	/* the second descriptor, a memfd of restore_size + state_size bytes:
	 * the framework's restore table, then the plugin's state */
	uint64_t state_size; /* the plugin's; 0: none */
	uint64_t restore_size; /* the restore tables' (rf_restore_bytes); 0: none */
	uint32_t restore_nodes; /* the policy's */
	uint32_t restore_strict; /* ringfencectl upgrade: any restore failing ends the worker */
	uint32_t host_restart; /* a dead plugin host is replaced, the keeper stays */
	/* debug = yes: the plugin host may be traced and dumps core, into
	 * core_dir ("" none) bound at /cores in the sandbox's root */
	uint32_t debug;
	/* 1: @plugin is a libfuse 3 program the plugin host starts, @options
	 * its arguments after the mount point (the policy's program_args) */
	uint32_t program;
	char name[RF_NAME_MAX];
	char mountpoint[RF_PATH_MAX];
	char plugin[RF_PATH_MAX];
	char source[RF_PATH_MAX];
	char options[RF_OPTIONS_MAX];
	char seccomp_policy[RF_PATH_MAX];
	char core_dir[RF_PATH_MAX];
};

/* Switches for make bench only, to measure what the defaults cost. */
#define RF_BENCH_NO_SANDBOX 1u /* no namespaces, no new root, no seccomp */
#define RF_BENCH_PLAIN_IO 2u /* file data by pread/pwrite, not fixed-buffer ops */
#define RF_BENCH_EAGER_FORGET 4u /* read each FORGET at once (no rest, keeper/request.c) */
#define RF_BENCH_NO_PIN 8u /* queue threads free to run on any CPU */
#define RF_BENCH_PRIVATE_PAYLOAD 16u /* payloads in the worker's own memory, data in line */
/* each host queue thread on the next CPU, and both sides polling the
 * rings (yielding) up to RF_SPIN_NS before they sleep */
#define RF_BENCH_SPIN 64u
/* no plugin host: the keeper runs the plugin itself, in one process (what
 * the hand-over between the two costs) */
#define RF_BENCH_ONE_PROCESS 128u
/* ringfenced --learn-seccomp (ringfence-plugin-check --learn): calls the
 * seccomp policy refuses are let through and logged, never in production */
#define RF_UNSAFE_LEARN_SECCOMP 32u

struct rf_msg_ring {
	uint32_t qid;
	int32_t fd; /* inherited across exec, not passed */
	struct io_uring_params params;
};

struct rf_msg_ready {
	uint32_t transport;
	uint32_t nqueues;
};

struct rf_msg_ping {
	uint64_t seq; /* queue threads copy it to rf_queue_stats.heartbeat */
};

struct rf_msg_host_died {
	int32_t status; /* the plugin host's, as waitpid() gave it: the worker's claim */
	/* 1: the keeper ended it, for breaking the rules of its channel or
	 * ring (the keeper's log line before says how); also a claim */
	uint32_t by_keeper;
};

struct rf_msg_host_start {
	uint32_t generation; /* the new host's: its node ids and slot records carry it */
	/* with a descriptor: the plugin file the host loads from now on,
	 * named @plugin; @restore_strict as in CONFIG */
	uint32_t restore_strict;
	char plugin[RF_PATH_MAX];
};

struct rf_msg_log {
	uint32_t level;
	char line[]; /* NUL-terminated inside the payload */
};

struct rf_msg_failed {
	int32_t error;
	char what[]; /* NUL-terminated inside the payload */
};

struct rf_msg_seccomp {
	int32_t nr;
	uint32_t arch; /* AUDIT_ARCH_* */
	uint64_t args[6];
	uint64_t ip;
};

struct rf_msg {
	struct rf_msg_hdr hdr;
	uint8_t payload[RF_IPC_MAX_PAYLOAD];
	int fds[RF_IPC_MAX_FDS];
	int nfds;
};

/* What a message type may look like on the wire. */
struct rf_msg_spec {
	const char *name;
	uint32_t min_len;
	uint32_t max_len; /* == min_len for fixed-size payloads */
	uint8_t max_fds;
	uint8_t string_tail; /* payload ends in a NUL-terminated string */
};

const struct rf_msg_spec *rf_msg_spec(uint32_t type);
const char *rf_msg_name(uint32_t type);

/*
 * Send one message with @nfds descriptors (SCM_RIGHTS). Checks the spec of
 * @type: a payload of the wrong size is refused with -EMSGSIZE before sending.
 */
int rf_msg_send(int sock, uint32_t type, uint32_t id, const void *payload, size_t len,
		const int *fds, int nfds);

/*
 * Receive one message into @m. Returns 0; -ECONNRESET at end of stream;
 * -EBADMSG for anything malformed (short header, length mismatch, truncated
 * datagram or control data, unknown type, wrong size for the type, string
 * not NUL-terminated, more descriptors than the type allows). Descriptors
 * that came with a malformed message are closed.
 */
int rf_msg_recv(int sock, struct rf_msg *m);

/* Close any descriptors still held by @m. */
void rf_msg_close_fds(struct rf_msg *m);

/* fdpass.c: the only SCM_RIGHTS code. */
int rf_fdpass_send(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Returns bytes received (0 at EOF) or -errno; sets *@truncated when the
 * datagram or its control data did not fit. */
ssize_t rf_fdpass_recv(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds,
		       int *truncated);

#endif /* RINGFENCE_MSG_H */
