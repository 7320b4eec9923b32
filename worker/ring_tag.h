/* SPDX-License-Identifier: MIT */
/*
 * What a completion is for, on either process's rings: the low 3 bits of
 * its SQE's user_data; the bits above are the request (or queue) it
 * belongs to, or a probe's id. Where a ring outlives the process that
 * posted on it (a plugin host's ring, the keeper's channel RECVMSG), the
 * top 16 bits carry a generation, so that a dead process's late
 * completions are told from its successor's (user addresses stay below
 * 2^48).
 *
 *   tag     the keeper's FUSE ring         the plugin host's ring
 *   CMD     REGISTER / COMMIT_AND_FETCH    -
 *   DATA    READ_FIXED / WRITE_FIXED       READ_FIXED / WRITE_FIXED
 *   CREAD   classic READ of /dev/fuse      -
 *   CWRITE  classic reply WRITE            -
 *   WAKE    the eventfd (the queue) or     the eventfd (the queue) or
 *           the channel (its rx)           the channel (its rx)
 *   PROBE   COMMIT_AND_FETCH of a lost     -
 *           request (the probe's id)
 *   SETUP   ADD_QUEUE / ADD_BUFPOOL        -
 */
#ifndef RINGFENCE_RING_TAG_H
#define RINGFENCE_RING_TAG_H

#include <liburing.h>
#include <stdint.h>

enum rf_tag {
	RF_TAG_CMD = 1,
	RF_TAG_DATA = 2,
	RF_TAG_CREAD = 3,
	RF_TAG_CWRITE = 4,
	RF_TAG_WAKE = 5,
	RF_TAG_PROBE = 6,
	RF_TAG_SETUP = 7,
};
#define RF_TAG_GEN_SHIFT 48
#define RF_TAG_PTR_MASK ((1ULL << RF_TAG_GEN_SHIFT) - 1)
#define RF_TAG_BITS 3
#define RF_TAG_MASK ((1u << RF_TAG_BITS) - 1)

static inline void rf_sqe_tag(struct io_uring_sqe *sqe, const void *p, enum rf_tag tag)
{
	sqe->user_data = (uint64_t)(uintptr_t)p | tag;
}

/* the same with generation @gen in the top bits */
static inline void rf_sqe_tag_gen(struct io_uring_sqe *sqe, const void *p, enum rf_tag tag,
				  uint16_t gen)
{
	sqe->user_data = (uint64_t)(uintptr_t)p | tag | (uint64_t)gen << RF_TAG_GEN_SHIFT;
}

/* a probe carries its id, which must stay below 2^61 (keeper/rescue.c takes ids
 * below 2^60 only) */
static inline void rf_sqe_tag_probe(struct io_uring_sqe *sqe, uint64_t id)
{
	sqe->user_data = id << RF_TAG_BITS | RF_TAG_PROBE;
}

static inline enum rf_tag rf_cqe_tag(const struct io_uring_cqe *cqe)
{
	return (enum rf_tag)(cqe->user_data & RF_TAG_MASK);
}

static inline void *rf_cqe_ptr(const struct io_uring_cqe *cqe)
{
	return (void *)(uintptr_t)(cqe->user_data & RF_TAG_PTR_MASK & ~(uint64_t)RF_TAG_MASK);
}

static inline uint16_t rf_cqe_gen(const struct io_uring_cqe *cqe)
{
	return (uint16_t)(cqe->user_data >> RF_TAG_GEN_SHIFT);
}

static inline uint64_t rf_cqe_probe_id(const struct io_uring_cqe *cqe)
{
	return cqe->user_data >> RF_TAG_BITS;
}

#endif /* RINGFENCE_RING_TAG_H */
