/* SPDX-License-Identifier: MIT */
/* The sandboxed worker: transport loops and dispatch to the plugin. */
#ifndef RINGFENCE_WORKER_H
#define RINGFENCE_WORKER_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "channel.h"
#include "fuse_uapi.h"
#include "msg.h"
#include "pool.h"
#include "plugin/restore.h"
#include "ringfence/plugin.h"

struct rf_queue;

/* What a request asks of the data path once the plugin has replied. */
enum rf_fd_op {
	RF_FDOP_NONE = 0,
	RF_FDOP_READ, /* READ_FIXED from the plugin's file into the payload */
	RF_FDOP_WRITE, /* WRITE_FIXED from the payload into the plugin's file */
};

enum rf_req_state {
	RQ_IDLE = 0, /* nothing posted */
	RQ_WAIT, /* REGISTER / COMMIT_AND_FETCH / classic READ posted */
	RQ_PLUGIN, /* handed to the plugin, no reply yet */
	RQ_DATA, /* a fixed-buffer data op is in flight */
	RQ_REPLY, /* classic reply WRITE in flight */
	RQ_DEAD, /* the kernel tore the entry down */
	RQ_RESERVED, /* held back: an entry we cannot place may be using the slot */
};

/* One slot of the pool, serving one FUSE entry (or the /dev/fuse reader). */
struct rf_req {
	struct rf_queue *q;
	uint32_t idx; /* entry index in its queue; depth for the reader */
	bool classic; /* this entry reads /dev/fuse instead of FUSE io-uring */
	bool adopting; /* committing for a dead predecessor */
	/* that commit's completion is to be dropped: an inherited entry took
	 * the slot meanwhile (keeper/rescue.c) */
	bool adopt_stale;
	bool rerun; /* running a dead predecessor's request again */
	/* the adopted slot was in doubt: a request its commit ends counts
	 * against the rescue's budget (keeper/rescue.c) */
	bool adopt_doubt;
	bool candidate; /* a dead entry that ended a lost request may use this slot */
	bool zc; /* the request's file data is in the client's pages, buffer
		  * RF_BUF_INDEX_ZC + idx of the ring, not in the pool */
	bool noreply; /* keeper: a FORGET or INTERRUPT the host is told of */
	bool host_park; /* keeper: waits for the next plugin host (host_restart) */
	struct rf_slot_state *ss; /* this slot's record in the pool */
	enum rf_req_state state;
	char *hdr; /* slot header area */
	char *payload;
	uint32_t payload_cap;
	struct iovec iov[2]; /* REGISTER iovecs; read by the kernel at submit */

	/* the request being served */
	struct fuse_in_header in;
	const char *arg0; /* the per-opcode header */
	const char *rest; /* names, write data, ... */
	uint32_t rest_len;
	struct rf_req_ctx ctx;
	bool kill_suidgid; /* rf_req_kill_suidgid() */
	atomic_int interrupted;
	uint64_t start_ns; /* when the request arrived */
	/* for plugin/restore.c: the node id as the kernel sent it, and the names
	 * (and second directory) of a request that makes, moves or removes
	 * one; they point into the request like its other arguments */
	uint64_t kid;
	uint64_t kid2;
	const char *name;
	const char *name2;
	uint32_t rename_flags;

	/* the reply, built in place: body at payload */
	bool replied;
	int32_t error;
	uint32_t reply_len;
	enum rf_fd_op fd_op;
	bool inline_io; /* by pread/pwrite on this thread, not a ring op */
	/* keeper: the bytes its zero-copied transfer has in its entry's pipe
	 * (keeper/pipe.c), or 0 */
	uint32_t piped;
	int fd;
	uint64_t off;
	uint32_t len;
	uint32_t done;
	/* host: how its data moved (RF_CHF_INLINE, RF_CHF_FIXED) and how much */
	uint8_t done_flags;
	uint32_t moved;
	/* host: the file an open or create reply names (rf_req_backing), or
	 * -1; keeper: the backing file this transfer uses (keeper/backing.c), or -1 */
	int backing_fd;
	int32_t backing_ref;

	struct rf_req *mbox_next;
};

struct rf_worker;
struct rf_pipe;

struct rf_queue {
	struct rf_worker *w;
	uint32_t qid;
	int ring_fd;
	struct io_uring_params params;
	struct io_uring ring;
	pthread_t thread;
	struct rf_req *reqs; /* depth entries, plus the reader on queue 0 */
	uint32_t nreqs;
	int evfd;
	uint64_t ev_buf;
	pthread_mutex_t mbox_lock;
	struct rf_req *mbox;
	struct rf_queue_stats *stats;
	uint32_t live; /* entries still known to the kernel */
	int32_t floating; /* entries inherited by ending a lost request, slot unknown */
	uint64_t probe_id; /* the lost request being asked for */
	bool files_held; /* a data slot of the ring still holds a plugin's file */
	/* the io-uring transport's /dev/fuse reader, not reposted after a
	 * FORGET until forget_due (keeper/request.c: rf_queue_park_reader) */
	struct rf_req *parked;
	uint64_t forget_due;
	int *no_files; /* nreqs times -1: what empties the data slots */
	bool probe_missed; /* ... and the kernel does not have it here */
	/* the kernel's buffer pool of this queue (7.46), inside fixed buffer
	 * 0; qpool_size 0: each entry has its own payload buffer */
	char *qpool;
	uint32_t qpool_size;
	bool zc; /* a zero-copy queue: FUSE_URING_ZERO_COPY, a buffer slot per entry */
	struct rf_pipe *pipes; /* keeper: an entry's pipe (keeper/pipe.c), or NULL */
	int setup_err; /* of its trusted start-up, with what failed */
	char failed[160];
	/* ringfenced --learn-seccomp (plugin/learn.c): this thread's id, and the
	 * operation of the request it last handed to the plugin */
	pid_t tid;
	uint32_t learn_op;

	/* the channel between keeper and host (channel.h): this process's
	 * view of its rings and its end of the socket; records to write on
	 * the ring at the next flush */
	struct rf_chan_view chan;
	int chan_fd;
	enum rf_chan_phase chan_phase; /* keeper: of the host's records */
	struct rf_chan_rec tx[RF_CHAN_BATCH];
	uint32_t ntx;
	/* keeper: the socket's posted RECVMSG; host: its READ */
	struct rf_chan_rec rx[RF_CHAN_BATCH];
	struct msghdr rx_msg;
	struct iovec rx_iov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} rx_cmsg;
	/* host: its own ring, for the channel, the mailbox and file data */
	int hring_fd;
	struct io_uring_params hparams;
	struct io_uring hring;
	int hevfd;
	uint64_t hev_buf;
	int host_chan_fd; /* the host's end, until the fork hands it over */
	/* keeper, host_restart: this queue's host is dead (requests wait,
	 * host_park); the host it serves (w->host_seq as it last heard);
	 * its channel's generation, in the RECVMSG's user_data, so that a
	 * dead host's last completion is told from the next one's; and the
	 * main thread's word that the channel is a new host's */
	bool host_down;
	uint32_t host_seq;
	uint16_t chan_gen;
	atomic_int chan_renew;
	/* the new host's socket and wake-up eventfd, until this thread
	 * takes them */
	int chan_next;
	int hevfd_next;
	/* host_restart: the host's end of the channel, kept (and the next
	 * host's, until this thread takes it); the reaper's word that the
	 * host w->host_seq numbered so is dead; this thread's RECVMSG is
	 * posted; the dead host's answers are still coming in */
	int host_end;
	int host_end_next;
	atomic_uint dead_seq;
	bool chan_armed;
	bool host_noticed;
	bool host_draining;
};

/*
 * Node ids and file handles as the kernel sees them carry the worker's
 * generation in their top 16 bits, so that after a crash the successor can
 * tell ids of a dead plugin instance (ESTALE, EIO) from its own. The root
 * (1) and "no node" (0) are the same in every generation; plugin ids must
 * stay below 2^48 (pointers and small numbers do).
 */
#define RF_ID_BITS 48
#define RF_ID_MASK ((1ULL << RF_ID_BITS) - 1)

struct rf_worker {
	struct rf_msg_config cfg;
	uint64_t tag; /* this generation's top bits */
	struct rf_pool_geom geom;
	void *pool;
	struct rf_pool_ctl *ctl;
	void *state; /* the plugin's state (cfg.state_size bytes), or NULL */
	void *restore_mem; /* the restore table (cfg.restore_size bytes), or NULL */
	struct rf_restore *restore; /* plugin/restore.c, NULL when off */
	int ipc_fd;
	/* the plugin host's channel to the broker, which takes only LOG,
	 * SECCOMP and FAILED on it: a host holds it as ipc_fd, never the
	 * keeper's (host_main); the keeper keeps it for the next host */
	int host_ipc_fd;
	const struct rf_plugin *plugin;
	void *userdata;
	int source_fd;
	bool memory_source; /* the source is on tmpfs or ramfs (keeper/data.c) */
	struct rf_queue *queues;
	uint32_t nqueues;
	atomic_int stop;
	atomic_uint registered; /* queues that have posted their entries */
	atomic_uint queues_alive; /* queue threads still serving */
	atomic_int conn_gone; /* the kernel ended the connection */
	/* cfg.transport, until a refused REGISTER turns the connection back
	 * to /dev/fuse (kept here, not in the pool the broker checks) */
	_Atomic uint32_t transport;
	uint64_t *seen; /* the pool's table of received request ids */
	uint64_t *rescue; /* ids no worker received, newest first */
	_Atomic uint32_t *rescue_misses; /* queues that do not have it */
	uint64_t rescue_hi; /* the newest id received: ids up to it were issued */
	uint32_t nrescue;
	int waiting_fd; /* the connection's fusectl "waiting" file, until rf_rescue_bound */
	/* how many requests at most no worker holds (rf_rescue_bound): the
	 * rescue and adoption stop asking once they found that many; -1
	 * where the kernel's count is not known */
	int64_t rescue_budget;
	_Atomic uint64_t rescue_found;
	_Atomic uint64_t ping_seq; /* the broker's last PING, for queue threads to answer */
	pthread_mutex_t start_lock; /* for prepared, serving and waits on registered */
	pthread_cond_t start_cond;
	uint32_t prepared; /* queue threads done with their trusted start-up */
	bool serving; /* the main thread let them register and serve */
	/* which of the two processes (host/host.c) this is: the keeper, which
	 * the broker started, or the plugin host */
	const struct rf_side *side;
	pid_t host_pid; /* keeper: the host's, 0 with no host (the EIO responder) */
	bool host_ready; /* keeper: the host said it serves (under start_lock) */
	int pool_ro_fd; /* the pool, read-only: the host maps its records so */
	/* host_restart: what the keeper keeps to start the next plugin host
	 * (its file, seccomp policy, the source); the hosts started so far
	 * and the one whose death was told the broker; in the host, the top
	 * bits of its ring's user_data (a dead host's late completions on
	 * the same ring carry another) */
	int plugin_fd;
	/* a program's standard output and error, one pipe for all its
	 * hosts: the keeper reads (rf_host_output_start), each host writes;
	 * -1 for a plugin's, whose are /dev/null */
	int out_rd, out_wr;
	/* ringfenced --learn-seccomp, a program's: each host's learning
	 * filter's listener, passed to the keeper (rf_host_learn_start) */
	int learn_rd, learn_wr;
	struct rf_sc_policy *sc_policy;
	bool sandbox;
	atomic_uint host_seq;
	atomic_uint reported_seq;
	/* the host the keeper itself ended (host_seq), for breaking the
	 * rules of its channel or ring: HOST_DIED says so */
	atomic_uint ended_seq;
	uint32_t restored_seq; /* keeper: the host whose restore was counted */
	pid_t reap_pid; /* the host the reaper is to wait for (start_lock) */
	uint16_t hgen;
};

/* What differs between the worker's two processes, for the code both run
 * (the plugin's replies, the channel, the restore's counters): the
 * keeper's (keeper/loop.c) or the plugin host's (host/host.c), set once
 * as each starts. */
struct rf_side {
	const char *name; /* in ps: "keeper", "host" */
	/* a reply the plugin made, from any thread */
	void (*finish)(struct rf_req *req);
	/* the channel took none of the @n records @r: the other side is
	 * gone, or no longer reads */
	void (*chan_broken)(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n);
	/* a counter of the pool's statistics (RF_CNT_*, channel.h) */
	void (*count)(struct rf_worker *w, uint32_t which, uint64_t a, uint32_t len, int32_t error);
};

/* mbox.c, a queue thread's in either process: a reply made on another
 * thread is put in the mailbox and the queue's thread woken on @evfd;
 * the thread empties it (a list by mbox_next). rf_queue_wake wakes a
 * keeper queue thread (from any thread). rf_queue_pin puts the calling
 * thread on its queue's CPU (the kernel queues a request on its
 * client's CPU's queue), unless make bench says otherwise. */
void rf_mbox_put(struct rf_req *req, int evfd);
struct rf_req *rf_mbox_take(struct rf_queue *q);
void rf_queue_wake(struct rf_queue *q);
void rf_queue_pin(struct rf_queue *q);
/* ... on CPU @cpu, whatever make bench says */
void rf_queue_pin_to(struct rf_queue *q, uint32_t cpu);

/* The registered buffer of @req's payload on its queue's plugin host
 * ring, in the order the keeper registers them (keeper/plugin_host.c):
 * the queue's kernel pool, then the /dev/fuse reader's payload; or each
 * entry's own payload. */
static inline int rf_host_buf(const struct rf_req *req)
{
	if (req->q->qpool_size)
		return req->classic ? 1 : 0;
	return (int)req->idx;
}

/* ---- plugin/: the plugin's ABI, run by the host (and by the keeper
 * itself as the EIO responder) ---- */

/* plugin/reply.c: a reply is complete (the process's rf_side.finish) */
void rf_req_finish(struct rf_req *req);
/* reply.c: a transfer of req->done bytes is over: the reply it makes (a
 * READ's length, a WRITE's fuse_write_out) */
void rf_reply_moved(struct rf_req *req);
/* reply.c: whether @len bytes at @buf are directory entries a client may
 * be given (READDIRPLUS's if @plus): each whole, its name 1 to NAME_MAX
 * bytes with no '/' and no NUL; else false, and why. Pure. */
bool rf_dirents_ok(const void *buf, uint32_t len, bool plus, char *why, size_t whylen);
/* reply.c: the most bytes @req may carry back */
uint32_t rf_reply_limit(const struct rf_req *req);
/* plugin/dispatch.c */
/* Size of each opcode's first argument on the wire (0 if none or unknown). */
uint32_t rf_op_arg0_size(uint32_t opcode);
struct rf_sc_policy;
const char *rf_op_name(uint32_t opcode);
/* plugin/learn.c: load @p as ringfenced --learn-seccomp asks (every call it would
 * refuse is let through and logged once per operation); 0 or -errno */
int rf_learn_start(struct rf_worker *w, const struct rf_sc_policy *p);
/* learn.c, the keeper's: answer a program's host's learning filter, whose
 * listener is @fd (taken), until no process is left under it */
int rf_learn_adopt(struct rf_worker *w, int fd);
/* The plugin's init with the mount's arguments (w->plugin set): 0, or its
 * error (a positive errno; EIO for anything else). */
int rf_plugin_init(struct rf_worker *w);
/* Parse the request in @req (in, arg0, rest filled) and call the plugin.
 * Malformed requests are answered EINVAL/EIO without reaching the plugin. */
void rf_dispatch(struct rf_req *req);
/* The keeper's part: count the request in its queue's statistics; and
 * whether it is the broker's kick (recovery.c), which the keeper answers. */
void rf_dispatch_count(struct rf_req *req);
bool rf_dispatch_kick(const struct rf_req *req);
/* FORGET, BATCH_FORGET and INTERRUPT: no reply. Returns true if handled
 * (the host: the plugin is told). rf_noreply_count, the keeper's part:
 * counts them; true for these three. */
bool rf_dispatch_noreply(struct rf_worker *w, const struct fuse_in_header *in, const char *args,
			 uint32_t args_len);
bool rf_noreply_count(struct rf_queue *q, const struct fuse_in_header *in, const char *args,
		      uint32_t args_len);

/* Plugin id to kernel id; 0 for an id that cannot be tagged. */
static inline uint64_t rf_id_out(const struct rf_worker *w, uint64_t id)
{
	if (id == 0 || id == RF_ROOT_ID)
		return id;
	return id > RF_ID_MASK ? 0 : (w->tag | id);
}

/* Kernel id to plugin id; -1 for one of another generation. */
static inline int rf_id_in(const struct rf_worker *w, uint64_t kid, uint64_t *id)
{
	if (kid == RF_ROOT_ID) {
		*id = kid;
		return 0;
	}
	if ((kid & ~RF_ID_MASK) != w->tag)
		return -1;
	*id = kid & RF_ID_MASK;
	return 0;
}

static inline uint64_t rf_gen_tag(uint32_t generation)
{
	return (uint64_t)(generation % 65535 + 1) << RF_ID_BITS;
}

/* plugin/reply.c */
void rf_req_reset(struct rf_req *req);

#endif /* RINGFENCE_WORKER_H */
