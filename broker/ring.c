// SPDX-License-Identifier: MIT
/*
 * Fenced rings. The broker creates each ring disabled, registers the FUSE
 * device as fixed file 0 and the pool as fixed buffer 0 (and, for zero copy,
 * one empty buffer slot per entry after it), arms restrictions,
 * and hands the ring to the worker by inheritance. The restrictions take
 * effect when the worker enables the ring; from then on the ring accepts
 * only what is listed here.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "uring_uapi.h"

/* Every operation the worker's keeper needs, and why:
 *  URING_CMD    FUSE REGISTER and COMMIT_AND_FETCH on fixed file 0 (the
 *               io-uring transport only: a classic ring has no use for them)
 *  READ, WRITE  the /dev/fuse queue (FORGET, INTERRUPT, classic transport)
 *               and the worker's wake-up eventfd
 *  RECVMSG      the plugin host's replies, with a file for a zero copy
 *  READ_FIXED, WRITE_FIXED  zero-copied file data, between the plugin's
 *               files and the client's pages */
static const uint8_t allowed_ops[] = {
	IORING_OP_URING_CMD,  IORING_OP_READ,	     IORING_OP_WRITE,
	IORING_OP_READ_FIXED, IORING_OP_WRITE_FIXED, IORING_OP_RECVMSG,
};

/* The only register call a worker makes after enabling: installing its own
 * eventfd and backing files into the data slots. */
static const uint8_t allowed_register_ops[] = {
	IORING_REGISTER_FILES_UPDATE,
};

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int rf_ring_create(int slot0_fd, void *pool, size_t pool_size, uint32_t depth, bool zero_copy,
		   bool fuse_cmds, struct io_uring_params *params)
{
	struct io_uring_restriction res[16];
	uint32_t nfiles = rf_file_slots(depth), nbufs = zero_copy ? 1 + depth : 1;
	uint32_t i, nres = 0;
	struct iovec *iov;
	int *files;
	int fd, r;

	memset(params, 0, sizeof(*params));
	/* No DEFER_TASKRUN: with it the task work that hands the queue
	 * thread each request waits for the thread's next io_uring_enter, so
	 * a thread that just woke its client is preempted with the next
	 * request already queued, and buffered reads cost 26-36% more CPU
	 * per byte. COOP_TASKRUN: a request for a running thread is taken at
	 * its next system call rather than announced by an interrupt, the
	 * least CPU per create and unlink measured (docs/performance.md). */
	params->flags = IORING_SETUP_SQE128 | IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER |
			IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_CQSIZE;
	/* entries: one per FUSE entry, one data op per entry, the wake-up
	 * read, the channel's and the /dev/fuse reader */
	params->cq_entries = pow2_at_least(2 * (2 * depth + 5));
	fd = rf_io_uring_setup(pow2_at_least(2 * depth + 5), params);
	if (fd < 0)
		return fd;

	files = calloc(nfiles, sizeof(*files));
	if (!files) {
		r = -ENOMEM;
		goto close_ring;
	}
	for (i = 0; i < nfiles; i++)
		files[i] = -1;
	files[RF_FILE_SLOT_FUSE] = slot0_fd;
	r = rf_io_uring_register(fd, IORING_REGISTER_FILES, files, nfiles);
	free(files);
	if (r < 0) {
		log_warnx("ring: register files: %s", strerror(-r));
		goto close_ring;
	}
	/* the pool in slot 0; on a zero-copy queue, an empty slot per entry
	 * after it, where the kernel registers each request's client pages
	 * (empty iovecs make sparse slots, which no worker can fill: the
	 * register calls that would are not allowed below) */
	iov = calloc(nbufs, sizeof(*iov));
	if (!iov) {
		r = -ENOMEM;
		goto close_ring;
	}
	iov[RF_BUF_INDEX_POOL].iov_base = pool;
	iov[RF_BUF_INDEX_POOL].iov_len = pool_size;
	r = rf_io_uring_register(fd, IORING_REGISTER_BUFFERS, iov, nbufs);
	free(iov);
	if (r < 0) {
		log_warnx("ring: register the %zu-byte pool%s: %s", pool_size,
			  zero_copy ? " and the zero-copy slots" : "", strerror(-r));
		goto close_ring;
	}

	memset(res, 0, sizeof(res));
	for (i = 0; i < sizeof(allowed_ops); i++) {
		if (allowed_ops[i] == IORING_OP_URING_CMD && !fuse_cmds)
			continue;
		res[nres].opcode = IORING_RESTRICTION_SQE_OP;
		res[nres++].sqe_op = allowed_ops[i];
	}
	for (i = 0; i < sizeof(allowed_register_ops); i++) {
		res[nres].opcode = IORING_RESTRICTION_REGISTER_OP;
		res[nres++].register_op = allowed_register_ops[i];
	}
	res[nres].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[nres++].sqe_flags = IOSQE_FIXED_FILE;
	res[nres].opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED;
	res[nres++].sqe_flags = IOSQE_FIXED_FILE;
	r = rf_io_uring_register(fd, IORING_REGISTER_RESTRICTIONS, res, nres);
	if (r < 0) {
		log_warnx("ring: register restrictions: %s", strerror(-r));
		goto close_ring;
	}
	return fd;
close_ring:
	close(fd);
	return r;
}
