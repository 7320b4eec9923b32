/* SPDX-License-Identifier: MIT */
/*
 * io_uring pieces that Debian's liburing 2.3 lacks or gets wrong for a ring
 * that one process builds and another maps:
 *  - filling an IORING_OP_URING_CMD SQE for the FUSE commands;
 *  - the SQ index array, which io_uring_queue_mmap() leaves unset;
 *  - the fixed layout of the ring's fixed-file table.
 */
#ifndef RINGFENCE_URING_UAPI_H
#define RINGFENCE_URING_UAPI_H

#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuse_uapi.h"

/* Offset of the command area inside a 128-byte SQE. */
#define RF_SQE_CMD_OFFSET 48
#define RF_SQE_CMD_SIZE 80

_Static_assert(sizeof(struct io_uring_sqe) == 64, "liburing SQE layout");
_Static_assert(sizeof(struct fuse_uring_cmd_req) <= RF_SQE_CMD_SIZE, "cmd fits the SQE");

/*
 * Fixed-file table of every ringfence ring. Slot 0 is the FUSE device (the
 * broker's own fd on the io-uring path, a clone on the classic path); slot 1
 * takes the worker's wake-up eventfd, slot 2 its channel to the plugin
 * host (worker/channel.h); from RF_FILE_SLOT_DATA on, one slot per entry
 * receives the file of that entry's current zero-copy data op; after
 * those, two per entry take the ends of its pipe (worker/keeper/pipe.c).
 * A queue has @depth entries, and one more on queue 0 (the /dev/fuse
 * reader).
 */
enum {
	RF_FILE_SLOT_FUSE = 0,
	RF_FILE_SLOT_WAKE = 1,
	RF_FILE_SLOT_CHAN = 2,
	RF_FILE_SLOT_DATA = 3,
};

/* Entry @idx's pipe: its read end's slot, the write end's after it. */
static inline uint32_t rf_file_slot_pipe(uint32_t depth, uint32_t idx)
{
	return RF_FILE_SLOT_DATA + (depth + 1) + 2 * idx;
}

/* The size of the table. */
static inline uint32_t rf_file_slots(uint32_t depth)
{
	return rf_file_slot_pipe(depth, depth + 1);
}

/* Fixed buffer 0 is the whole pool, registered at its shared address. On a
 * zero-copy queue, buffer RF_BUF_INDEX_ZC + e is entry e's: empty, until
 * the kernel registers a request's client pages there (addresses in it
 * start at 0). */
#define RF_BUF_INDEX_POOL 0
#define RF_BUF_INDEX_ZC 1

/* The command area of a 128-byte SQE. */
static inline struct fuse_uring_cmd_req *rf_sqe_cmd(struct io_uring_sqe *sqe)
{
	return (struct fuse_uring_cmd_req *)((char *)sqe + RF_SQE_CMD_OFFSET);
}

/*
 * Fill @sqe (which must be a 128-byte SQE) as a FUSE io-uring command on fixed
 * file 0. Returns the command area for the caller to complete.
 */
static inline struct fuse_uring_cmd_req *rf_prep_fuse_cmd(struct io_uring_sqe *sqe, uint32_t cmd_op,
							  uint16_t qid, uint64_t commit_id)
{
	struct fuse_uring_cmd_req *req = rf_sqe_cmd(sqe);

	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->flags = IOSQE_FIXED_FILE;
	sqe->fd = RF_FILE_SLOT_FUSE;
	sqe->cmd_op = cmd_op;
	req->qid = qid;
	req->commit_id = commit_id;
	return req;
}

/*
 * A ring mapped with io_uring_queue_mmap() has an SQ index array that nobody
 * filled (liburing 2.3 does it only in io_uring_queue_init_params()); until it
 * is, every submission re-runs SQE slot 0.
 */
static inline void rf_ring_fill_sq_array(struct io_uring *ring)
{
	unsigned int i;

	for (i = 0; i < *ring->sq.kring_entries; i++)
		ring->sq.array[i] = i;
}

/* Raw system calls returning 0/fd or -errno, whatever liburing's build does. */
static inline int rf_io_uring_setup(unsigned int entries, struct io_uring_params *p)
{
	long r = syscall(__NR_io_uring_setup, entries, p);

	return r < 0 ? -errno : (int)r;
}

static inline int rf_io_uring_register(int fd, unsigned int op, const void *arg, unsigned int nr)
{
	long r = syscall(__NR_io_uring_register, fd, op, arg, nr);

	return r < 0 ? -errno : (int)r;
}

#endif /* RINGFENCE_URING_UAPI_H */
